import Cashier
import Foundation

/// A folder of its own under the system's temporary directory, removed with its contents
/// when the object goes. Not created here: caches create their folders on first write.
public final class TemporaryFolder: Sendable {
    public let url: URL
    public var path: String { url.path }

    /// `label` (letters and digits kept) names the folder, so a leftover one says whose it was.
    public init(_ label: String = #function) {
        let safe = label.filter { $0.isLetter || $0.isNumber }
        url = URL(fileURLWithPath: NSTemporaryDirectory())
            .appendingPathComponent("cashier-tests-\(safe)-\(UUID().uuidString)", isDirectory: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }

    /// Names of the files in the folder, sorted; empty while it does not exist.
    public var fileNames: [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted()
    }

    /// Names of the entry files (not the lock file or temporaries), sorted.
    public var entryFiles: [String] { fileNames.filter(DiskStore.isEntryFileName) }

    /// Names of the temporary files of writes, finished or not.
    public var temporaries: [String] { fileNames.filter { $0.hasPrefix(DiskStore.temporaryPrefix) } }
}
