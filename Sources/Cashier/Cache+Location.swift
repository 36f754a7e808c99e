import CashierPlatform
import Foundation

extension Cache {
    /// Where a cache keeps its entries.
    public enum Location: Sendable, Hashable {
        /// `Library/Caches/Cashier/<name>` in the app's container; on Linux `$XDG_CACHE_HOME/Cashier/<name>`
        /// or `~/.cache/Cashier/<name>`. A Mac process outside the App Sandbox gets a folder of its own:
        /// `~/Library/Caches/<bundle identifier, else executable name>/Cashier/<name>`.
        case caches
        /// `Library/Application Support/Cashier/<name>` (a Mac process outside the App Sandbox: under
        /// `~/Library/Application Support/<bundle identifier, else executable name>/`); on Linux
        /// `$XDG_DATA_HOME` or `~/.local/share`.
        case persistent
        /// Memory only: nothing touches the disk.
        case memoryOnly
        /// Exactly this folder.
        case directory(URL)
    }

    /// The folder path a configuration stores entries in, `nil` for memory only.
    package static func folderPath(for configuration: Configuration) -> String? {
        let base: String
        switch configuration.location {
        case .memoryOnly: return nil
        case .directory(let url): return url.standardizedFileURL.path
        case .caches: base = platformFolder(caches: true)
        case .persistent: base = platformFolder(caches: false)
        }
        return base + "/Cashier/" + folderName(for: configuration.name)
    }

    /// A cache name made safe as one path component: percent-encoded outside `[A-Za-z0-9._-]`.
    ///
    /// Encodes the name's canonical spelling (NFC), so names equal as Swift strings, which
    /// ``named(_:)`` already treats as one cache, also share one folder.
    package static func folderName(for name: String) -> String {
        var result = ""
        for byte in DiskTier.canonicalSpelling(of: name).utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."):
                result.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                result += String(format: "%%%02X", byte)
            }
        }
        switch result {
        case "": return "%"
        case ".": return "%2E"
        case "..": return "%2E%2E"
        default: return result
        }
    }

    static func platformFolder(caches: Bool) -> String {
        let folder = Platform.userFolder(caches: caches)
        guard let mac = folder.mac else { return folder.path }
        return ownFolder(
            in: folder.path, isMac: true, isSandboxed: mac.isSandboxed,
            bundleIdentifier: mac.bundleIdentifier, processName: mac.processName)
    }

    /// The folder a process's `Cashier/<name>` folders go in, given the platform's caches or
    /// application-support folder `base`: `base` itself where it is the app's own container
    /// (iOS, tvOS, watchOS, a sandboxed Mac app), else `base/<bundle identifier>`, or
    /// `base/<executable name>` for a process without one, so that two unsandboxed Mac apps or
    /// tools never share (and never wipe) each other's entries.
    ///
    /// - Parameters:
    ///   - base: the platform's caches or application-support folder.
    ///   - isMac: macOS or Mac Catalyst, where `base` may be the user's `~/Library/Caches`.
    ///   - isSandboxed: whether the App Sandbox confines the process; a `base` inside
    ///     `~/Library/Containers/` counts as sandboxed too.
    ///   - bundleIdentifier: the main bundle's identifier, if the process has one.
    ///   - processName: the executable's name, used when there is no bundle identifier.
    package static func ownFolder(
        in base: String, isMac: Bool, isSandboxed: Bool, bundleIdentifier: String?, processName: String
    ) -> String {
        guard isMac, !isSandboxed, !base.contains("/Library/Containers/") else { return base }
        let owner = bundleIdentifier.flatMap { $0.isEmpty ? nil : $0 } ?? processName
        return (base.hasSuffix("/") ? String(base.dropLast()) : base) + "/" + folderName(for: owner)
    }
}
