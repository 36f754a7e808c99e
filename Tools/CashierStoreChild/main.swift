import CashierStore
import CashierStoreSupport
import Foundation

// The child process of CashierStoreTests: a second process on a store's folder, so the tests
// see what a fresh process finds (no product; the test target depends on it so it is built).
//
//   CashierStoreChild kill-writer FOLDER              # writes until killed (EntryStoreKillTests)
//   CashierStoreChild eviction FOLDER candidates      # the frequency-aware order's candidates
//   CashierStoreChild eviction FOLDER evict BYTES     # a sweep down to BYTES (EntryStoreEvictionTests)
//   CashierStoreChild write FOLDER KEY SIZE LASTUSE    # one row of SIZE bytes (EvictionAsWalkedTests)

/// Writes `key-0`, `key-1`, … (each record names its key and index), printing each index once
/// its write returned, until it is killed.
func killWriter(folder: String) {
    let store = try! EntryStore(folder: folder)
    for index in 0..<1_000_000 {
        let key = "key-\(index)"
        let record = Array("\(key):\(index):".utf8) + bytes(100 + index % 3000, seed: index)
        try! store.upsert(
            StoreEntry(key: key, location: .row, size: record.count, lastUse: Int64(index)), record: record)
        FileHandle.standardOutput.write(Data("\(index)\n".utf8)) // unbuffered: printed means returned
    }
}

/// Opens the store of `folder` afresh and prints the frequency-aware order's candidates
/// (`candidates`), or sweeps it down to a number of bytes and prints what went (`evict BYTES`),
/// one key a line.
func eviction(folder: String, _ command: ArraySlice<String>) {
    let store = try! EntryStore(folder: folder)
    let keys: [String]
    switch (command.first, command.dropFirst().first.flatMap { Int($0) }) {
    case ("candidates", nil): keys = try! store.evictionCandidates(order: .frequencyAware, limit: -1).map(\.key)
    case ("evict", let bytes?): keys = try! store.evict(order: .frequencyAware, downTo: bytes).map(\.key)
    default:
        print("usage: CashierStoreChild eviction FOLDER candidates | evict BYTES")
        exit(2)
    }
    print(keys.joined(separator: "\n"))
}

/// Writes one row, `size` bytes of record, last used at `lastUse`, as another process's write.
func write(folder: String, key: String, size: Int, lastUse: Int64) {
    let store = try! EntryStore(folder: folder)
    try! store.upsert(
        StoreEntry(key: key, location: .row, size: size, lastUse: lastUse), record: bytes(size, seed: size))
}

let arguments = CommandLine.arguments
switch (arguments.dropFirst().first, arguments.count > 2) {
case ("kill-writer", true): killWriter(folder: arguments[2])
case ("eviction", true): eviction(folder: arguments[2], arguments.dropFirst(3))
case ("write", true) where arguments.count == 6:
    write(folder: arguments[2], key: arguments[3], size: Int(arguments[4])!, lastUse: Int64(arguments[5])!)
default:
    print("usage: CashierStoreChild kill-writer FOLDER | eviction FOLDER candidates | evict BYTES")
    print("       CashierStoreChild write FOLDER KEY SIZE LASTUSE")
    exit(2)
}
