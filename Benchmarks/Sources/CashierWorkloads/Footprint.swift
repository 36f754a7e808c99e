import Cashier
import Foundation

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Issue 25's footprint: a folder of 100,000 entries of `User.sample` (187 bytes of JSON each),
/// what it occupies on disk and what a fresh process pays to learn its `totalSize`, `count`
/// and `keys`, beside a SQLite table (``SQLiteTable``) holding the same payloads.
///
/// The fresh-process figures come from children: this executable run again with
/// `--footprint-child`, each timing its own calls and reading its own peak resident memory.
public enum Footprint {
    /// What one child measured: milliseconds for open + `totalSize`, for `count` + `keys`,
    /// and bytes of peak resident memory gained during those calls.
    public struct Fresh: Sendable {
        public var totalSize: Double
        public var countAndKeys: Double
        public var memory: Double
    }

    /// Fills both folders with `entries` entries, measures them, and prints the report;
    /// `executable` is this program, run `rounds` times per side as a child.
    public static func report(entries: Int, rounds: Int, executable: URL) {
        let folder = Scratch("footprint")
        let tableFolder = Scratch("footprint-baseline")
        let fillSeconds = seconds {
            fill(folder, count: entries)
            let table = SQLiteTable(path: tableFolder.file("kv.sqlite").path)
            table.fill(count: entries, value: Pairs.payload)
            table.exec("PRAGMA wal_checkpoint(TRUNCATE)")
        }
        let payloadBytes = Double(entries * Pairs.payload.count)
        let cashierDisk = allocatedBytes(folder.url)
        let tableDisk = allocatedBytes(tableFolder.url)
        var cashier: [Fresh] = []
        var table: [Fresh] = []
        for _ in 0..<rounds {
            cashier.append(child(executable, "cashier", folder.path, entries))
            table.append(child(executable, "sqlite", tableFolder.path, entries))
        }
        let (c, t) = (median(cashier), median(table))
        func megabytes(_ bytes: Double) -> String { String(format: "%.1f MB", bytes / 1e6) }
        func milliseconds(_ value: Double) -> String { String(format: "%.1f ms", value) }
        func row(_ name: String, _ cashier: String, _ table: String, _ goal: String, _ met: Bool) {
            print(pad(name, 50) + pad(cashier, 14) + pad(table, 14) + goal + (met ? " ✓" : " ✗"))
        }
        print(
            "Footprint: \(entries) entries of \(Pairs.payload.count) bytes of JSON, "
                + "fresh processes (median of \(rounds)); filled in \(String(format: "%.1f", fillSeconds)) s")
        print(pad("", 50) + pad("Cashier", 14) + pad("SQLite table", 14) + "goal (Cashier)")
        let ratio = Double(cashierDisk.files) / payloadBytes
        row(
            "disk allocated ÷ payload bytes", String(format: "%.2fx", ratio),
            String(format: "%.2fx", Double(tableDisk.files) / payloadBytes), "≤ 1.5x", ratio <= 1.5)
        print(
            pad("  allocated (files; folders' own blocks apart)", 50)
                + pad(megabytes(Double(cashierDisk.files)), 14) + pad(megabytes(Double(tableDisk.files)), 14)
                + "folders: \(megabytes(Double(cashierDisk.folders))), \(megabytes(Double(tableDisk.folders)))")
        row(
            "fresh process: open + totalSize", milliseconds(c.totalSize), milliseconds(t.totalSize), "≤ 20 ms",
            c.totalSize <= 20)
        row(
            "fresh process: count + keys", milliseconds(c.countAndKeys), milliseconds(t.countAndKeys), "≤ 100 ms",
            c.countAndKeys <= 100)
        row(
            "fresh process: peak memory growth, those calls", megabytes(c.memory), megabytes(t.memory), "≤ 16 MB",
            c.memory <= 16e6)
        print(
            "Cashier's folder ÷ the table's, bytes allocated: "
                + String(format: "%.1fx", Double(cashierDisk.files) / Double(max(1, tableDisk.files))))
    }

    /// The child's side: opens `folder` as Cashier (`cashier`) or the table (`sqlite`), times
    /// open + `totalSize`, then `count` + `keys`, and prints the two times (ms) and the bytes
    /// of peak resident memory gained, separated by spaces.
    public static func child(side: String, folder: String, entries: Int) {
        let before = startPeakMeasurement()
        var totalSize = 0.0
        var countAndKeys = 0.0
        if side == "cashier" {
            var configuration = Cache.Configuration(name: "bench")
            configuration.location = .directory(URL(fileURLWithPath: folder, isDirectory: true))
            configuration.appVersion = "bench"
            var cache: Cache?
            totalSize = seconds {
                cache = Cache(configuration)
                precondition(cache!.totalSize > 0)
            }
            countAndKeys = seconds {
                let count = cache!.count
                let keys = cache!.keys
                precondition(count == entries && keys.count == entries, "\(count) entries, \(keys.count) keys")
            }
        } else {
            var table: SQLiteTable?
            totalSize = seconds {
                table = SQLiteTable(path: folder + "/kv.sqlite")
                precondition(table!.totalSize() == entries * Pairs.payload.count)
            }
            countAndKeys = seconds {
                let count = table!.count()
                let keys = table!.keys()
                precondition(count == entries && keys.count == entries, "\(count) rows, \(keys.count) keys")
            }
        }
        let growth = max(0, peakResidentBytes() - before)
        print(totalSize * 1e3, countAndKeys * 1e3, growth)
    }

    private static func child(_ executable: URL, _ side: String, _ folder: String, _ entries: Int) -> Fresh {
        let process = Process()
        process.executableURL = executable
        process.arguments = ["--footprint-child", side, folder, String(entries)]
        let pipe = Pipe()
        process.standardOutput = pipe
        do { try process.run() } catch { fatalError("cannot run \(executable.path): \(error)") }
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let numbers = output.split(whereSeparator: \.isWhitespace).compactMap { Double($0) }
        precondition(
            process.terminationStatus == 0 && numbers.count == 3, "the \(side) child failed: \(output)")
        return Fresh(totalSize: numbers[0], countAndKeys: numbers[1], memory: numbers[2])
    }

    private static func median(_ runs: [Fresh]) -> Fresh {
        func middle(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
        return Fresh(
            totalSize: middle(runs.map(\.totalSize)), countAndKeys: middle(runs.map(\.countAndKeys)),
            memory: middle(runs.map(\.memory)))
    }

    private static func seconds(_ body: () -> Void) -> Double {
        let start = DispatchTime.now().uptimeNanoseconds
        body()
        return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    }

    /// Bytes allocated (`st_blocks` × 512) under `folder`, recursively: regular files and
    /// others, and apart, the blocks of the folders themselves (a folder of 100,000 names
    /// holds megabytes of them).
    static func allocatedBytes(_ folder: URL) -> (files: Int, folders: Int) {
        var files = 0
        var folders = 0
        var pending = [folder.path]
        while let path = pending.popLast() {
            var info = stat()
            guard lstat(path, &info) == 0 else { continue }
            guard info.st_mode & S_IFMT == S_IFDIR else {
                files += Int(info.st_blocks) * 512
                continue
            }
            folders += Int(info.st_blocks) * 512
            let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
            pending += names.map { path + "/" + $0 }
        }
        return (files, folders)
    }

    /// Starts a measurement of peak memory: on Linux, resets the peak to the resident memory now
    /// (`/proc/self/clear_refs`, "5") so what the process touched before (loading, start-up) stays
    /// out of it. Returns the resident bytes now.
    static func startPeakMeasurement() -> Double {
        #if os(Linux)
        let descriptor = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC)
        if descriptor >= 0 {
            _ = write(descriptor, "5", 1)
            close(descriptor)
        }
        if let resident = procStatus("VmRSS:") { return resident }
        #endif
        return peakResidentBytes()
    }

    /// The process's peak resident memory, in bytes: `VmHWM` on Linux, where `getrusage`'s
    /// `ru_maxrss` of a child started by `posix_spawn` (a `vfork`) may be its parent's peak;
    /// `ru_maxrss` elsewhere (bytes on Darwin, <sys/resource.h>).
    static func peakResidentBytes() -> Double {
        #if os(Linux)
        if let peak = procStatus("VmHWM:") { return peak }
        #endif
        var usage = rusage()
        #if canImport(Glibc)
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage) // an enum in glibc's <sys/resource.h>
        #else
        getrusage(RUSAGE_SELF, &usage)
        #endif
        #if canImport(Darwin)
        return Double(usage.ru_maxrss)
        #else
        return Double(usage.ru_maxrss) * 1024 // KiB on Linux
        #endif
    }

    /// A line of `/proc/self/status` given in kB, in bytes.
    static func procStatus(_ field: String) -> Double? {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix(field) }),
            let kilobytes = line.split(separator: " ").dropFirst().first.flatMap({ Double($0) })
        else { return nil }
        return kilobytes * 1024
    }
}

/// `text` padded with spaces to `width` characters.
func pad(_ text: String, _ width: Int) -> String {
    text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
}
