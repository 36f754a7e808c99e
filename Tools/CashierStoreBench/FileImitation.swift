import Foundation

/// Today's entry file, imitated with the same system calls Cashier's DiskTier makes on its
/// default path (no fsync): write = open a temporary `O_CREAT|O_EXCL` 0600, write, close,
/// rename over the entry's name; read = open, fstat, pread the whole file, close.
enum FileImitation {
    static func write(folder: String, name: String, _ bytes: [UInt8], counter: Int) {
        let temporary = "\(folder)/.tmp-\(getpid())-\(counter)"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        precondition(fd >= 0)
        let written = bytes.withUnsafeBytes { Foundation.write(fd, $0.baseAddress, $0.count) }
        precondition(written == bytes.count)
        precondition(close(fd) == 0)
        precondition(rename(temporary, "\(folder)/\(name)") == 0)
    }

    static func read(folder: String, name: String) -> [UInt8]? {
        let fd = open("\(folder)/\(name)", O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { return nil }
        let size = Int(info.st_size)
        var bytes = [UInt8](repeating: 0, count: size)
        let read = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, size, 0) }
        return read == size ? bytes : nil
    }
}

/// Wall-clock timing and the small statistics the tables need.
enum Measure {
    /// Seconds `body` took.
    static func seconds(_ body: () -> Void) -> Double {
        let clock = ContinuousClock()
        let duration = clock.measure(body)
        return Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
    }

    /// Bytes allocated on disk for the files of `folder` (st_blocks × 512), with their count.
    static func allocatedBytes(folder: String) -> (bytes: Int, files: Int) {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        var total = 0
        for name in names {
            var info = stat()
            if lstat("\(folder)/\(name)", &info) == 0 { total += Int(info.st_blocks) * 512 }
        }
        return (total, names.count)
    }

    static func freshFolder(_ label: String) -> String {
        let path = NSTemporaryDirectory() + "cashier-store-bench-\(label)-\(getpid())-\(UUID().uuidString.prefix(8))"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    static func remove(_ folder: String) { try? FileManager.default.removeItem(atPath: folder) }
}
