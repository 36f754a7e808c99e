import CashierPlatform
import Foundation

extension Cache {
    /// The process's one cache with this name and app version (default configuration,
    /// ``Location/caches``), for programs without a bundle version, such as servers.
    ///
    /// Entries of keys without a ``CacheKey/schemaVersion`` are tied to `appVersion`: a
    /// deploy that passes another one discards them (and garbage collection reclaims them).
    /// `Cache.named("api")` is the same instance as `Cache.named("api", appVersion: v)`
    /// when `v` is the default app version; two calls with different versions make two
    /// instances on one folder, each discarding the other's unversioned entries, so pass
    /// one version per process, for example the build's:
    ///
    /// ```swift
    /// let cache = Cache.named("api", appVersion: "2.4.1")
    /// ```
    public static func named(_ name: String, appVersion: String) -> Cache {
        named(name, resolvedAppVersion: appVersion)
    }

    /// The process's one cache with this name and disk size limit (otherwise the default
    /// configuration, ``Location/caches``); `nil` for no limit.
    ///
    /// ``named(_:)`` gives a cache the default limit,
    /// ``Configuration-swift.struct/defaultDiskSizeLimit`` (150 MiB), which this replaces:
    ///
    /// ```swift
    /// let images = Cache.named("images", diskSizeLimit: 500 << 20)   // 500 MiB
    /// ```
    ///
    /// Like ``named(_:appVersion:)``, two calls with different limits make two instances on
    /// one folder, each sweeping it to its own limit: pass one limit per name.
    public static func named(_ name: String, diskSizeLimit: Int?) -> Cache {
        named(name, resolvedAppVersion: Configuration.defaultAppVersion, diskSizeLimit: .explicit(diskSizeLimit))
    }

    /// The process's one cache with this name, app version and disk size limit (`nil` for
    /// none); see ``named(_:appVersion:)`` and ``named(_:diskSizeLimit:)``.
    public static func named(_ name: String, appVersion: String, diskSizeLimit: Int?) -> Cache {
        named(name, resolvedAppVersion: appVersion, diskSizeLimit: .explicit(diskSizeLimit))
    }

    /// The registry behind ``named(_:)`` and its variants: one instance per name, app version
    /// and disk size limit.
    static func named(
        _ name: String, resolvedAppVersion appVersion: String?,
        diskSizeLimit: DefaultedSetting<Int> = .locationDefault
    ) -> Cache {
        var configuration = Configuration(name: name)
        configuration.appVersion = appVersion
        configuration.diskSizeLimitSetting = diskSizeLimit
        let key = NamedCache(name: name, appVersion: appVersion, diskSizeLimit: configuration.diskSizeLimit)
        return namedCaches.withLock { caches in
            if let cache = caches[key] { return cache }
            let cache = Cache(configuration)
            caches[key] = cache
            return cache
        }
    }

    private static let namedCaches = Locked<[NamedCache: Cache]>([:])
}

extension Cache.Configuration {
    /// The name of the environment variable ``appVersion`` falls back on when the main
    /// bundle has no version: `CASHIER_APP_VERSION`.
    package static let appVersionEnvironmentVariable = "CASHIER_APP_VERSION"

    /// ``appVersion``'s default in this process, read once: ``Cache/named(_:)`` (and so
    /// ``Cache/default``) looks it up on every call, and neither source changes while a process runs.
    static let defaultAppVersion: String? =
        defaultAppVersion(bundleVersion: mainBundleVersion, environment: ProcessInfo.processInfo.environment)

    /// The bundle's version, else a non-empty `CASHIER_APP_VERSION`, else `nil`.
    package static func defaultAppVersion(bundleVersion: String?, environment: [String: String]) -> String? {
        if let bundleVersion { return bundleVersion }
        guard let variable = environment[appVersionEnvironmentVariable], !variable.isEmpty else { return nil }
        return variable
    }
}

/// What ``Cache/named(_:)`` and its variants tell instances apart by.
private struct NamedCache: Hashable {
    var name: String
    var appVersion: String?
    var diskSizeLimit: Int?
}
