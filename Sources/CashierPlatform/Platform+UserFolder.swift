import Foundation

extension Platform {
    /// Where the system keeps this user's caches (`caches`) or application data, and on the Mac
    /// what decides the app's own folder inside it (the cache adds that folder itself).
    ///
    /// Apple platforms: `FileManager.urls(for:in:)` with `.cachesDirectory` or
    /// `.applicationSupportDirectory` in `.userDomainMask` (Foundation; every version), else
    /// `NSTemporaryDirectory()`. On iOS, tvOS, watchOS and visionOS that folder is the app's
    /// container already. On macOS (Mac Catalyst included) it is shared by every app of the
    /// user: `mac` says whether the process is sandboxed (`APP_SANDBOX_CONTAINER_ID`, set in
    /// every App Sandbox process: not in Apple's reference, but what sandboxed Mac apps and
    /// Electron test; a container path says the same, and is documented), its bundle
    /// identifier and its name. Linux and others: `$XDG_CACHE_HOME` or `$XDG_DATA_HOME` when
    /// absolute, else `~/.cache` or `~/.local/share`; `mac` is `nil`.
    package static func userFolder(caches: Bool) -> (
        path: String, mac: (isSandboxed: Bool, bundleIdentifier: String?, processName: String)?
    ) {
        #if canImport(Darwin)
        let directory: FileManager.SearchPathDirectory = caches ? .cachesDirectory : .applicationSupportDirectory
        let base = FileManager.default.urls(for: directory, in: .userDomainMask).first?.path ?? NSTemporaryDirectory()
        #if os(macOS) || targetEnvironment(macCatalyst)
        let isSandboxed = ProcessInfo.processInfo.environment["APP_SANDBOX_CONTAINER_ID"] != nil
        return (base, (isSandboxed, Bundle.main.bundleIdentifier, ProcessInfo.processInfo.processName))
        #else
        return (base, nil)
        #endif
        #else
        let environment = ProcessInfo.processInfo.environment
        if let xdg = environment[caches ? "XDG_CACHE_HOME" : "XDG_DATA_HOME"], xdg.hasPrefix("/") { return (xdg, nil) }
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        return (home + (caches ? "/.cache" : "/.local/share"), nil)
        #endif
    }
}
