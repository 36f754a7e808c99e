import CashierStore
import Foundation

// Measures the store (CashierStore's EntryStore) against today's entry files and against the
// raw SQLite C API, for issue 25. Release builds only:
//
//   swift run -c release CashierStoreBench threshold     # store row vs entry file, 256 B to 1 MiB
//   swift run -c release CashierStoreBench baselines     # engine vs raw C API, 10,000 entries
//   swift run -c release CashierStoreBench footprint     # 100,000 × 187-byte values, fresh processes
//                                                        # (KEYS=long: 43-byte keys instead of `user-N`)
//   swift run -c release CashierStoreBench sweep         # a sweep of 10% of 100,000 entries, by order
//   swift run -c release CashierStoreBench coherence     # what a memory tier's coherence check costs
//
// Each table prints medians of interleaved rounds (ROUNDS=7 by default).

let arguments = CommandLine.arguments
let rounds = ProcessInfo.processInfo.environment["ROUNDS"].flatMap(Int.init) ?? 7

func microseconds(_ seconds: Double, per count: Int) -> Double { seconds * 1e6 / Double(count) }
func format(_ value: Double, _ digits: Int = 1) -> String { String(format: "%.\(digits)f", value) }

func bytes(_ count: Int, seed: Int) -> [UInt8] {
    var state = UInt64(truncatingIfNeeded: seed) &* 0x9e37_79b9_7f4a_7c15 | 1
    return (0..<count).map { _ in
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        return UInt8(truncatingIfNeeded: state)
    }
}

func label(_ size: Int) -> String { size >= 1024 ? "\(size / 1024) KiB" : "\(size) B" }

// MARK: - threshold

func threshold() {
    // SIZES=8192,32768 measures other sizes.
    let sizes =
        ProcessInfo.processInfo.environment["SIZES"].map { $0.split(separator: ",").compactMap { Int($0) } }
        ?? [256, 1024, 4096, 16_384, 65_536, 262_144, 1_048_576]
    print(
        "| value size | store write µs | file write µs | store read µs | file read µs | store B/entry | file B/entry |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for size in sizes {
        let count = min(4000, max(100, (48 << 20) / size))
        let value = bytes(size, seed: size)
        var results: [String: [Double]] = [:]
        var allocated: (store: Int, files: Int) = (0, 0)
        for round in 0..<rounds {
            let storeFolder = Measure.freshFolder("threshold-store")
            let fileFolder = Measure.freshFolder("threshold-files")
            defer {
                Measure.remove(storeFolder)
                Measure.remove(fileFolder)
            }
            let store = try! EntryStore(folder: storeFolder)
            let keys = (0..<count).map { "key-\(round)-\($0)" }
            let names = (0..<count).map { String(format: "%032x.cache", $0) }
            // Alternate which goes first so neither always meets a warmer page cache.
            let storeFirst = round % 2 == 0
            func storeWrites() {
                results["sw", default: []].append(
                    microseconds(
                        Measure.seconds {
                            for (index, key) in keys.enumerated() {
                                try! store.upsert(
                                    StoreEntry(key: key, location: .row, size: size, lastUse: Int64(index)),
                                    record: value)
                            }
                        }, per: count))
            }
            func fileWrites() {
                results["fw", default: []].append(
                    microseconds(
                        Measure.seconds {
                            for (index, name) in names.enumerated() {
                                FileImitation.write(folder: fileFolder, name: name, value, counter: index)
                            }
                        }, per: count))
            }
            if storeFirst {
                storeWrites()
                fileWrites()
            } else {
                fileWrites()
                storeWrites()
            }
            let order = Array(0..<count).shuffled()
            func storeReads() {
                results["sr", default: []].append(
                    microseconds(
                        Measure.seconds {
                            for index in order {
                                precondition(try! store.record(for: keys[index])?.record.count == size)
                            }
                        }, per: count))
            }
            func fileReads() {
                results["fr", default: []].append(
                    microseconds(
                        Measure.seconds {
                            for index in order {
                                precondition(FileImitation.read(folder: fileFolder, name: names[index])?.count == size)
                            }
                        }, per: count))
            }
            if storeFirst {
                storeReads()
                fileReads()
            } else {
                fileReads()
                storeReads()
            }
            try! store.checkpoint()
            allocated = (
                Measure.allocatedBytes(folder: storeFolder).bytes / count,
                Measure.allocatedBytes(folder: fileFolder).bytes / count
            )
        }
        let columns = ["sw", "fw", "sr", "fr"].map { format(Measure.median(results[$0]!)) }
        print("| \(label(size)) | \(columns.joined(separator: " | ")) | \(allocated.store) | \(allocated.files) |")
    }
}

// MARK: - baselines

func baselines() {
    let count = 10_000
    let overwrites = 2_000
    let value = bytes(187, seed: 187)
    var engine: [String: [Double]] = [:]
    var raw: [String: [Double]] = [:]
    for round in 0..<rounds {
        let keys = (0..<count).map { "user-\(round)-\($0)" }
        let order = Array(0..<count).shuffled()
        func runEngine() {
            let folder = Measure.freshFolder("engine")
            defer { Measure.remove(folder) }
            var store = try! EntryStore(folder: folder)
            engine["write", default: []].append(
                microseconds(
                    Measure.seconds {
                        for (index, key) in keys.enumerated() {
                            try! store.upsert(
                                StoreEntry(key: key, location: .row, size: 187, lastUse: Int64(index)), record: value)
                        }
                    }, per: count))
            engine["overwrite", default: []].append(
                microseconds(
                    Measure.seconds {
                        for index in 0..<overwrites {
                            try! store.upsert(
                                StoreEntry(key: keys[0], location: .row, size: 187, lastUse: Int64(index)),
                                record: value)
                        }
                    }, per: overwrites))
            engine["read", default: []].append(
                microseconds(
                    Measure.seconds { for index in order { _ = try! store.record(for: keys[index]) } }, per: count))
            engine["totalSize", default: []].append(
                Measure.seconds {
                    store = try! EntryStore(folder: folder)
                    precondition(try! store.totalSize() > 0)
                } * 1e3)
            engine["fresh read", default: []].append(
                microseconds(
                    Measure.seconds {
                        store = try! EntryStore(folder: folder)
                        for index in order.prefix(1000) { _ = try! store.record(for: keys[index]) }
                    }, per: 1000))
            engine["evict", default: []].append(
                Measure.seconds { _ = try! store.removeLeastRecentlyUsed(count / 2) } * 1e3)
            precondition(try! store.count() == count / 2)
            try! store.checkpoint()
            engine["bytes after evict", default: []].append(Double(store.storeFileBytes()))
            // Off the caller's thread in the cache: timed here as the work it is.
            engine["reclaim", default: []].append(Measure.seconds { _ = try! store.reclaimSpace() } * 1e3)
            engine["bytes after reclaim", default: []].append(Double(store.storeFileBytes()))
            engine["occupied", default: []].append(
                microseconds(Measure.seconds { for _ in 0..<1000 { _ = try! store.occupiedBytes() } }, per: 1000))
        }
        func runRaw() {
            let folder = Measure.freshFolder("raw")
            defer { Measure.remove(folder) }
            var table = RawSQLite(path: folder + "/kv.sqlite")
            raw["write", default: []].append(
                microseconds(
                    Measure.seconds {
                        for (index, key) in keys.enumerated() { table.upsert(key, value, lastUse: Int64(index)) }
                    },
                    per: count))
            raw["overwrite", default: []].append(
                microseconds(
                    Measure.seconds {
                        for index in 0..<overwrites { table.upsert(keys[0], value, lastUse: Int64(index)) }
                    },
                    per: overwrites))
            raw["read", default: []].append(
                microseconds(Measure.seconds { for index in order { _ = table.read(keys[index]) } }, per: count))
            raw["totalSize", default: []].append(
                Measure.seconds {
                    table = RawSQLite(path: folder + "/kv.sqlite")
                    precondition(table.totalSize() > 0)
                } * 1e3)
            raw["fresh read", default: []].append(
                microseconds(
                    Measure.seconds {
                        table = RawSQLite(path: folder + "/kv.sqlite")
                        for index in order.prefix(1000) { _ = table.read(keys[index]) }
                    }, per: 1000))
            raw["evict", default: []].append(Measure.seconds { table.evict(count / 2) } * 1e3)
            precondition(table.count() == count / 2)
            table.exec("PRAGMA wal_checkpoint(TRUNCATE)")
            let bytes = Double(Measure.fileBytes(folder + "/kv.sqlite") + Measure.fileBytes(folder + "/kv.sqlite-wal"))
            raw["bytes after evict", default: []].append(bytes)
            raw["reclaim", default: []].append(0)
            raw["bytes after reclaim", default: []].append(bytes)
            raw["occupied", default: []].append(0)
        }
        if round % 2 == 0 {
            runEngine()
            runRaw()
        } else {
            runRaw()
            runEngine()
        }
    }
    print("| workload (10,000 entries, 187-byte values) | raw C API | engine | engine ÷ raw |")
    print("|---|---:|---:|---:|")
    let rows: [(String, String, String)] = [
        ("write", "write, distinct keys", "µs/op"), ("overwrite", "overwrite one key", "µs/op"),
        ("read", "point read, warm", "µs/op"), ("fresh read", "open + 1,000 point reads", "µs/read"),
        ("totalSize", "fresh instance: open + totalSize", "ms"), ("evict", "evict half (5,000) by last use", "ms"),
        ("bytes after evict", "store file after evict + checkpoint", "bytes"),
        ("reclaim", "incremental_vacuum + checkpoint (raw: none)", "ms"),
        ("bytes after reclaim", "store file after reclaim", "bytes"),
        ("occupied", "occupiedBytes: store + -wal + large files (raw: none)", "µs/call"),
    ]
    for (key, name, unit) in rows {
        let r = Measure.median(raw[key]!)
        let e = Measure.median(engine[key]!)
        let digits = unit == "bytes" ? 0 : 2
        let ratio = r > 0 ? "\(format(e / r, 2))x" : "–"
        print("| \(name) (\(unit)) | \(format(r, digits)) | \(format(e, digits)) | \(ratio) |")
    }
}

// MARK: - footprint

/// A record as Cashier writes one: an 80-byte header (magic, version 2, lengths, JSON, created
/// and validated now, a checksum), the key and the type name, then the payload.
func record(key: String, payload: [UInt8]) -> [UInt8] {
    var header = [UInt8](repeating: 0, count: 80)
    func put<T: FixedWidthInteger>(_ value: T, at offset: Int) {
        withUnsafeBytes(of: value.littleEndian) { header.replaceSubrange(offset..<offset + $0.count, with: $0) }
    }
    header.replaceSubrange(0..<4, with: Array("CSHR".utf8))
    put(UInt16(2), at: 4)
    put(UInt32(80 + key.utf8.count + 4), at: 8)
    header[12] = 1
    let now = Date().timeIntervalSince1970.bitPattern
    put(now, at: 16)
    put(now, at: 24)
    put(UInt64(payload.count), at: 48)
    put(UInt32(key.utf8.count), at: 56)
    put(UInt32(4), at: 60)
    put(UInt64.random(in: 0...UInt64.max), at: 72)
    return header + Array(key.utf8) + Array("User".utf8) + payload
}

/// The footprint's keys: `user-N`, or with KEYS=long a 43-byte URL-like key.
func footprintKey(_ index: Int) -> String {
    ProcessInfo.processInfo.environment["KEYS"] == "long"
        ? "https://api.example.com/v2/users/\(index)/profile" : "user-\(index)"
}

func footprint() {
    let count = 100_000
    let payload = bytes(187, seed: 7)
    let payloadBytes = Double(count * payload.count)
    let engineFolder = Measure.freshFolder("footprint-engine")
    let rawFolder = Measure.freshFolder("footprint-raw")
    defer {
        Measure.remove(engineFolder)
        Measure.remove(rawFolder)
    }
    do {
        let store = try! EntryStore(folder: engineFolder)
        for index in 0..<count {
            let key = footprintKey(index)
            let bytes = record(key: key, payload: payload)
            try! store.upsert(
                StoreEntry(key: key, location: .row, size: bytes.count, lastUse: Int64(index)), record: bytes)
        }
        try! store.checkpoint()
        let table = RawSQLite(path: rawFolder + "/kv.sqlite")
        table.exec("BEGIN")
        for index in 0..<count { table.upsert(footprintKey(index), payload, lastUse: Int64(index)) }
        table.exec("COMMIT")
        table.exec("PRAGMA wal_checkpoint(TRUNCATE)")
    }
    let engineBytes = Measure.allocatedBytes(folder: engineFolder).bytes
    let rawBytes = Measure.allocatedBytes(folder: rawFolder).bytes
    print(
        "| 100,000 entries, 187-byte payloads | raw C API table (value = payload) | engine (record = header + key + type + payload) |"
    )
    print("|---|---:|---:|")
    print("| folder bytes allocated | \(rawBytes) | \(engineBytes) |")
    print(
        "| allocated ÷ payload | \(format(Double(rawBytes) / payloadBytes, 2))x | \(format(Double(engineBytes) / payloadBytes, 2))x |"
    )
    var fresh: [String: [Double]] = [:]
    for _ in 0..<rounds {
        for (mode, folder) in [("fresh-engine", engineFolder), ("fresh-raw", rawFolder)] {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: arguments[0])
            process.arguments = [mode, folder]
            let pipe = Pipe()
            process.standardOutput = pipe
            try! process.run()
            process.waitUntilExit()
            let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            let numbers = output.split(separator: " ").compactMap {
                Double($0.trimmingCharacters(in: .whitespacesAndNewlines))
            }
            for (index, name) in ["totalSize", "count+keys", "memory"].enumerated() {
                fresh["\(mode) \(name)", default: []].append(numbers[index])
            }
        }
    }
    for (name, unit) in [("totalSize", "ms"), ("count+keys", "ms"), ("memory", "MB")] {
        print(
            "| fresh process: \(name) (\(unit)) | \(format(Measure.median(fresh["fresh-raw \(name)"]!), 1)) | "
                + "\(format(Measure.median(fresh["fresh-engine \(name)"]!), 1)) |")
    }
    // What a size limit needs: evicting half frees nothing on disk until a reclaim.
    let store = try! EntryStore(folder: engineFolder)
    let table = RawSQLite(path: rawFolder + "/kv.sqlite")
    let evict = (
        raw: Measure.seconds { table.evict(count / 2) },
        engine: Measure.seconds { try! store.removeLeastRecentlyUsed(count / 2) }
    )
    table.exec("PRAGMA wal_checkpoint(TRUNCATE)")
    try! store.checkpoint()
    let rawAfter = Measure.allocatedBytes(folder: rawFolder).bytes
    let engineAfter = Measure.allocatedBytes(folder: engineFolder).bytes
    let reclaim = Measure.seconds { try! store.reclaimSpace() }
    print("| evict half (ms) | \(format(evict.raw * 1e3)) | \(format(evict.engine * 1e3)) |")
    print("| folder bytes allocated after evict + checkpoint | \(rawAfter) | \(engineAfter) |")
    print("| reclaimSpace: incremental_vacuum + checkpoint (ms; raw: none) | – | \(format(reclaim * 1e3)) |")
    print(
        "| folder bytes allocated after reclaim | \(rawAfter) | \(Measure.allocatedBytes(folder: engineFolder).bytes) |"
    )
}

/// In a child process: open the folder's store, time totalSize, then count + keys; print ms, ms, MB of peak growth.
func freshProcess(engine: Bool, folder: String) {
    let before = Measure.resident() ?? 0
    var totalSizeSeconds = 0.0
    var listSeconds = 0.0
    if engine {
        var store: EntryStore?
        totalSizeSeconds = Measure.seconds {
            store = try! EntryStore(folder: folder)
            precondition(try! store!.totalSize() > 0)
        }
        listSeconds = Measure.seconds { precondition(try! store!.count() == (try! store!.keys()).count) }
    } else {
        var table: RawSQLite?
        totalSizeSeconds = Measure.seconds {
            table = RawSQLite(path: folder + "/kv.sqlite")
            precondition(table!.totalSize() > 0)
        }
        listSeconds = Measure.seconds { precondition(table!.count() == Int64(table!.keys().count)) }
    }
    let growth = Double((Measure.peakResident() ?? 0) - before) / 1e6
    print(format(totalSizeSeconds * 1e3, 3), format(listSeconds * 1e3, 3), format(growth, 2))
}

/// One operation repeated `count` times after a setup of 10,000 entries, for instruction counts
/// (`valgrind --tool=callgrind`, run at two counts and subtract: the difference is per operation).
func operations(engine: Bool, operation: String, count: Int) {
    let folder = Measure.freshFolder("ops")
    defer { Measure.remove(folder) }
    let value = bytes(187, seed: 187)
    // RECORD=file: records laid out as entry files (the store keeps them compact), the same bytes
    // for the raw table. Built before the runs, as many whatever the count, so they cancel out.
    let fileRecords = ProcessInfo.processInfo.environment["RECORD"] == "file"
    let keys = (0..<10_000).map { "user-\($0)" }
    let newKeys = (0..<max(count, 5000)).map { "new-\($0)" }
    var records: [String: [UInt8]] = [:]
    if fileRecords { for key in keys + newKeys { records[key] = record(key: key, payload: value) } }
    let store = engine ? try! EntryStore(folder: folder) : nil
    let table = engine ? nil : RawSQLite(path: folder + "/kv.sqlite")
    func write(_ key: String, _ index: Int) {
        let bytes = fileRecords ? records[key]! : value
        if let store {
            try! store.upsert(
                StoreEntry(key: key, location: .row, size: bytes.count, lastUse: Int64(index)), record: bytes)
        } else {
            table!.upsert(key, bytes, lastUse: Int64(index))
        }
    }
    for (index, key) in keys.enumerated() { write(key, index) }
    for index in 0..<count {
        switch operation {
        case "read":
            if let store {
                _ = try! store.record(for: keys[index % keys.count])
            } else {
                _ = table!.read(keys[index % keys.count])
            }
        case "overwrite": write(keys[0], index)
        default: write(newKeys[index], index)
        }
    }
}

switch arguments.dropFirst().first {
case "threshold": threshold()
case "baselines": baselines()
case "footprint": footprint()
case "sweep": sweep()
case "coherence": coherence()
case "fresh-engine": freshProcess(engine: true, folder: arguments[2])
case "fresh-raw": freshProcess(engine: false, folder: arguments[2])
case "ops": operations(engine: arguments[2] == "engine", operation: arguments[3], count: Int(arguments[4])!)
default: print("usage: CashierStoreBench threshold | baselines | footprint | sweep")
}
