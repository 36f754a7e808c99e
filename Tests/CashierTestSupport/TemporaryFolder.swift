import Cashier
import Foundation

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A folder of its own under the system's temporary directory, removed with its contents
/// when the object goes. Not created here: caches create their folders on first write.
///
/// Every folder lies below a symbolic link, as an app's container does on iOS (`/var` is a link
/// to `/private/var`) and every temporary folder on macOS (`/var/folders/…`): the path handed
/// out goes through ``base``, a link to a real folder, so the whole suite runs where apps run.
public final class TemporaryFolder: Sendable {
    public let url: URL
    public var path: String { url.path }

    /// `label` (letters and digits kept) names the folder, so a leftover one says whose it was.
    public init(_ label: String = #function) {
        let safe = label.filter { $0.isLetter || $0.isNumber }
        url = Self.base.appendingPathComponent("cashier-tests-\(safe)-\(UUID().uuidString)", isDirectory: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }

    /// Where every temporary folder of this process lies: `cashier-tests-<uid>` in the system's
    /// temporary directory, a symbolic link to `cashier-tests-real-<uid>` beside it. Made once per
    /// process, and shared by test processes running at once (see ``linkedFolder(in:)``).
    public static let base: URL = linkedFolder(in: NSTemporaryDirectory())

    /// A symbolic link `cashier-tests-<uid>` in `parent` to a real folder `cashier-tests-real-<uid>`
    /// beside it (mode 0700), both made when missing, spelled through the link.
    ///
    /// Safe when several processes make them at once: an existing folder or link is taken
    /// (`EEXIST`) once it is checked to be what this would have made; a link that points
    /// elsewhere (left by an older layout) is replaced. Stops the process when the folder or
    /// link cannot be made: no test could run.
    public static func linkedFolder(in parent: String) -> URL {
        let parent = parent.hasSuffix("/") ? String(parent.dropLast()) : parent
        let user = getuid()
        let real = "\(parent)/cashier-tests-real-\(user)"
        let link = "\(parent)/cashier-tests-\(user)"
        if mkdir(real, 0o700) != 0 && errno != EEXIST { stop("cannot make \(real)", errno) }
        var info = stat()
        guard lstat(real, &info) == 0, info.st_mode & S_IFMT == S_IFDIR, info.st_uid == user else {
            stop("\(real) is not a folder of this user's", errno)
        }
        for _ in 0..<8 {
            if symlink(real, link) == 0 || errno == EEXIST {
                if target(of: link) == real { return URL(fileURLWithPath: link, isDirectory: true) }
                // Something else by that name: another layout's link or folder. Set it aside for
                // good (a rename is atomic, so a process racing with this one sees either).
                let aside = "\(link)-old-\(UUID().uuidString)"
                if rename(link, aside) == 0 {
                    if unlink(aside) != 0 { try? FileManager.default.removeItem(atPath: aside) }
                }
            } else {
                stop("cannot link \(link) to \(real)", errno)
            }
        }
        stop("\(link) keeps pointing elsewhere than \(real)", EEXIST)
    }

    /// What the symbolic link at `path` holds, `nil` when it is not one.
    private static func target(of path: String) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink(path, &buffer, buffer.count - 1)
        guard count >= 0 else { return nil }
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static func stop(_ message: String, _ code: Int32) -> Never {
        fatalError("TemporaryFolder: \(message): \(String(cString: strerror(code)))")
    }

    /// Takes the folder away from its path in one step (a rename beside it), then removes what it
    /// held. A removal file by file races with a cache's background work still running: a retry
    /// that opens the folder's lock file between the listing and the last `rmdir` makes the
    /// removal fail (`ENOTEMPTY`, which Foundation reports as a permission error). After the
    /// rename, nothing under the old path can be made again in the folder being removed.
    public func removeAtOnce() throws {
        let away = path + "-away-" + UUID().uuidString
        guard rename(path, away) == 0 else {
            let code = errno
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path, "errno": code])
        }
        // Not at `url`, so `deinit` would leave it: a removal that fails is tried once more there.
        do {
            try FileManager.default.removeItem(atPath: away)
        } catch {
            try? FileManager.default.removeItem(atPath: away)
            throw error
        }
    }

    /// Names of the files in the folder, sorted; empty while it does not exist.
    public var fileNames: [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted()
    }

    /// Names of the entry files (not the lock file or temporaries), sorted.
    public var entryFiles: [String] { fileNames.filter(DiskTier.isEntryFileName) }

    /// Names of the temporary files of writes, finished or not.
    public var temporaries: [String] { fileNames.filter { $0.hasPrefix(DiskTier.temporaryPrefix) } }

    /// Bytes of every file in the folder by `lstat` (`st_size`): the store, its `-wal` and `-shm`,
    /// the entry files, temporaries and anything else; 0 while the folder does not exist.
    public var bytesOnDisk: Int {
        fileNames.reduce(0) { total, name in
            var info = stat()
            return total + (lstat(path + "/" + name, &info) == 0 ? Int(info.st_size) : 0)
        }
    }
}
