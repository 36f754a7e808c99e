import CashierTestSupport
import Foundation

@testable import Cashier

/// What a file system may have persisted when the power goes: the rules the crash
/// states are built by. The on-disk format article states them for readers.
enum CrashModel: String, Sendable, CaseIterable {
    /// Any POSIX file system that keeps its promises and nothing more.
    ///
    /// - Before the last barrier that covers it, an operation persists: a directory
    ///   operation is covered by a later `fsync` of its folder, a file's data by the sync
    ///   of that file before its `close`; everything before a checkpoint persists.
    /// - Un-synced directory operations (create, rename, exchange, unlink, mkdir) each
    ///   persist or not, independently, except that the operations on one name persist
    ///   in the order they were made (a later one only with every earlier one), and a
    ///   rename or an exchange is atomic: both of its names change, or neither.
    /// - An un-synced file's data may persist whole, be empty, be cut after the header,
    ///   at half or one byte short, or read as zeros past the header or from the start
    ///   (its length persisted, its blocks not).
    case conservative
    /// ext4 with a journal, `data=ordered`, delayed allocation and `auto_da_alloc` (the default).
    ///
    /// - Metadata persists in order: the state holds a prefix of the directory
    ///   operations since the last journal commit; `fsync` of a folder and the sync of
    ///   a new file each commit the journal, and with it every earlier operation.
    /// - An un-synced file's data persists whole or not at all (the file is empty: its
    ///   blocks were never allocated, so no stale or zero bytes appear); a `rename(2)`
    ///   over an existing file (not an exchange) writes the new file's data before the
    ///   rename commits (`auto_da_alloc`).
    case ext4Ordered
}

/// The folder a power loss leaves: directories and files, by path relative to the root.
struct CrashState: Hashable, Sendable {
    var directories: Set<String> = []
    var files: [String: [UInt8]] = [:]

    /// Writes the state into `folder` (which must not exist yet).
    func materialize(into folder: String) throws {
        let manager = FileManager.default
        try manager.createDirectory(atPath: folder, withIntermediateDirectories: true)
        for directory in directories.sorted() {
            try manager.createDirectory(atPath: folder + "/" + directory, withIntermediateDirectories: false)
        }
        for (path, bytes) in files {
            guard manager.createFile(atPath: folder + "/" + path, contents: Data(bytes)) else {
                throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path])
            }
        }
    }
}

/// Builds the states a power loss may leave after a prefix of a recorded trace.
struct CrashStateBuilder {
    let operations: [TraceOperation]
    /// Operations before this index persisted (a checkpoint in the trace).
    let checkpoint: Int
    let model: CrashModel

    /// A file in the simulated file system: the operation that created it.
    private typealias Inode = Int

    init(events: [TraceEvent], model: CrashModel) {
        var operations: [TraceOperation] = []
        var checkpoint = 0
        for event in events {
            switch event {
            case .operation(let operation): operations.append(operation)
            case .checkpoint: checkpoint = operations.count
            case .began, .returned: break
            }
        }
        self.operations = operations
        self.checkpoint = checkpoint
        self.model = model
    }

    /// Up to `samples` distinct states a power loss may leave once the first `point`
    /// operations were issued: the extremes (nothing pending persisted, everything
    /// persisted whole) first, then random draws from `generator`.
    func states(at point: Int, samples: Int, using generator: inout SplitMix64) -> [CrashState] {
        let durable = durableOperations(before: point)
        let pending = (0..<point).filter { !durable.contains($0) && operations[$0].directory != nil }
        var found: [CrashState] = []
        var seen: Set<CrashState> = []
        func add(_ state: CrashState) {
            if seen.insert(state).inserted { found.append(state) }
        }
        add(build(point: point, durable: durable, persisted: [], fate: { _ in .whole }))
        add(build(point: point, durable: durable, persisted: Set(pending), fate: { _ in .whole }))
        var attempts = 0
        while found.count < samples, attempts < samples * 4 {
            attempts += 1
            let persisted = choosePersisted(pending, using: &generator)
            let fates = model.dataFates
            var local = generator
            let state = build(point: point, durable: durable, persisted: persisted) { _ in
                fates[Int(local.next() % UInt64(fates.count))]
            }
            generator = local
            add(state)
        }
        return found
    }

    /// Indices of the operations before `point` that a power loss cannot undo.
    private func durableOperations(before point: Int) -> Set<Int> {
        var durable = Set(0..<min(checkpoint, point))
        for index in checkpoint..<max(checkpoint, point) {
            switch (model, operations[index]) {
            case (.conservative, .synchronizeDirectory(let folder)):
                // The folder's own directory operations before it.
                for earlier in checkpoint..<index where operations[earlier].directory == folder {
                    durable.insert(earlier)
                }
            case (.ext4Ordered, .synchronizeDirectory), (.ext4Ordered, .createFile(_, _, synchronized: true)):
                // A journal commit: every metadata operation so far, this one included.
                for earlier in checkpoint...index { durable.insert(earlier) }
            default:
                break
            }
        }
        return durable
    }

    /// Which pending directory operations persist, as the model allows.
    private func choosePersisted(_ pending: [Int], using generator: inout SplitMix64) -> Set<Int> {
        switch model {
        case .conservative:
            // Each may persist, but never after an earlier operation on one of its names was lost.
            var blocked: Set<String> = []
            var persisted: Set<Int> = []
            for index in pending {
                let names = operations[index].names
                if names.allSatisfy({ !blocked.contains($0) }), generator.next() & 1 == 0 {
                    persisted.insert(index)
                } else {
                    blocked.formUnion(names)
                }
            }
            return persisted
        case .ext4Ordered:
            let count = Int(generator.next() % UInt64(pending.count + 1))
            return Set(pending.prefix(count))
        }
    }

    /// Replays the durable and persisted operations in their order, then gives each
    /// file whose data was not synced the fate `fate` picks.
    private func build(point: Int, durable: Set<Int>, persisted: Set<Int>, fate: (Inode) -> DataFate) -> CrashState {
        var bindings: [String: Inode] = [:]
        var directories: Set<Inode> = []
        /// Files whose data `auto_da_alloc` wrote out with a persisted rename over an existing file.
        var flushed: Set<Inode> = []
        for index in 0..<point where durable.contains(index) || persisted.contains(index) {
            switch operations[index] {
            case .makeDirectory(let path):
                bindings[path] = index
                directories.insert(index)
            case .createFile(let path, _, _):
                bindings[path] = index
            case .rename(let source, let destination):
                guard let inode = bindings.removeValue(forKey: source) else { continue }
                if bindings[destination] != nil { flushed.insert(inode) }
                bindings[destination] = inode
            case .exchange(let first, let second):
                (bindings[first], bindings[second]) = (bindings[second], bindings[first])
            case .unlink(let path):
                bindings[path] = nil
            case .synchronizeDirectory, .lock, .unlock:
                break
            }
        }
        var state = CrashState()
        func reachable(_ path: String) -> Bool {
            let parent = TraceOperation.parent(of: path)
            return parent.isEmpty || (bindings[parent].map(directories.contains) == true && reachable(parent))
        }
        // In path order, so a seed replays the same fates (dictionaries iterate in a per-process order).
        for (path, inode) in bindings.sorted(by: { $0.key < $1.key }) where reachable(path) {
            if directories.contains(inode) {
                state.directories.insert(path)
                continue
            }
            guard case .createFile(_, let bytes, let synchronized) = operations[inode] else { continue }
            let dataDurable = synchronized || inode < checkpoint || (model == .ext4Ordered && flushed.contains(inode))
            state.files[path] = dataDurable ? bytes : fate(inode).apply(to: bytes)
        }
        return state
    }
}

/// What became of a file's data that was never synced.
enum DataFate: Sendable, CaseIterable {
    case whole, empty, headerOnly, half, allButOneByte, zeroPayload, zeroed

    func apply(to bytes: [UInt8]) -> [UInt8] {
        switch self {
        case .whole: bytes
        case .empty: []
        case .headerOnly: Array(bytes.prefix(Self.headerLength(bytes)))
        case .half: Array(bytes.prefix(bytes.count / 2))
        case .allButOneByte: Array(bytes.dropLast())
        case .zeroPayload:
            Array(bytes.prefix(Self.headerLength(bytes)))
                + [UInt8](repeating: 0, count: bytes.count - Self.headerLength(bytes))
        case .zeroed: [UInt8](repeating: 0, count: bytes.count)
        }
    }

    /// The header length an entry file states (bytes 8..<12), clamped to the file.
    private static func headerLength(_ bytes: [UInt8]) -> Int {
        guard bytes.count >= 12 else { return bytes.count }
        let stated = Int(bytes[8]) | Int(bytes[9]) << 8 | Int(bytes[10]) << 16 | Int(bytes[11]) << 24
        return min(stated, bytes.count)
    }
}

extension CrashModel {
    /// The fates an un-synced file's data may meet under this model.
    var dataFates: [DataFate] {
        switch self {
        case .conservative: DataFate.allCases
        case .ext4Ordered: [.whole, .empty]
        }
    }
}
