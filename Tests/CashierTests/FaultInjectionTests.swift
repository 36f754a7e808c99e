import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Failures injected on the write path through the file-system seam.
///
/// Each case: `set` throws a ``CacheError`` naming the key and the cause, the
/// key's previous value is still what any instance reads, no temporary file is
/// left, and the other entries are untouched, byte for byte.
@Suite("Injected file-system faults")
struct FaultInjectionTests {
    let folder = TemporaryFolder()
    let faults = FaultyFileSystem()

    struct Case: Sendable, CustomTestStringConvertible {
        var operation: FaultyFileSystem.Operation
        var fault: FaultyFileSystem.Fault
        var kind: CacheError.Kind
        var durability: Cache.Durability = .standard
        var testDescription: String { "\(operation) \(fault) → \(kind)" }
    }

    static let writeFaults: [Case] = [
        Case(operation: .writeNewFile, fault: .fail(ENOSPC), kind: .noSpace),
        Case(operation: .writeNewFile, fault: .fail(EDQUOT), kind: .noSpace),
        Case(operation: .writeNewFile, fault: .fail(EACCES), kind: .permissionDenied),
        Case(operation: .writeNewFile, fault: .fail(EROFS), kind: .permissionDenied),
        Case(operation: .writeNewFile, fault: .fail(EMFILE), kind: .ioFailure),
        Case(operation: .writeNewFile, fault: .failMidWrite(ENOSPC), kind: .noSpace),
        Case(operation: .writeNewFile, fault: .failMidWrite(EIO), kind: .ioFailure),
        Case(operation: .rename, fault: .fail(EACCES), kind: .permissionDenied),
        Case(operation: .rename, fault: .fail(EIO), kind: .ioFailure),
        Case(operation: .rename, fault: .removeFolderFirst, kind: .folderUnavailable),
    ]

    func configuration(_ durability: Cache.Durability = .standard) -> Cache.Configuration {
        var configuration = makeConfiguration(folder)
        configuration.fileSystem = faults
        configuration.durability = durability
        return configuration
    }

    /// Every file of the folder and its bytes.
    func snapshot() -> [String: Data] {
        Dictionary(
            uniqueKeysWithValues: folder.fileNames.map {
                ($0, (try? Data(contentsOf: folder.url.appendingPathComponent($0))) ?? Data())
            })
    }

    @Test("A failed write throws the cause, keeps the previous value and leaves nothing behind", arguments: writeFaults)
    func failedWriteKeepsEverything(_ fault: Case) throws {
        let cache = Cache(configuration(fault.durability))
        let key = CacheKey<User>("profile", schemaVersion: 1)
        let other = CacheKey<String>("other")
        try cache.set(User(name: "Ada", age: 36), for: key)
        try cache.set("untouched", for: other)
        let before = snapshot()

        faults.set(fault.fault, for: fault.operation)
        #expect {
            try cache.set(User(name: "Grace", age: 45), for: key)
        } throws: { error in
            guard let error = error as? CacheError else { return false }
            return error.key == "profile" && error.kind == fault.kind && error.description.contains("profile")
        }
        faults.set(nil, for: fault.operation)

        if case .removeFolderFirst = fault.fault {
            // Someone else removed the folder and everything in it: nothing is left to read,
            // and the failed write must not bring back a folder or a file.
            #expect(!FileManager.default.fileExists(atPath: folder.path))
            #expect(cache.value(for: key) == nil)
        } else {
            #expect(cache.value(for: key) == User(name: "Ada", age: 36))
            #expect(snapshot() == before, "the folder changed: \(folder.fileNames)")
            #expect(Cache(makeConfiguration(folder)).value(for: key) == User(name: "Ada", age: 36))
            #expect(Cache(makeConfiguration(folder)).value(for: other) == "untouched")
        }
        #expect(folder.fileNames.allSatisfy { !$0.hasPrefix(DiskTier.temporaryPrefix) })

        // The fault gone, the next write lands.
        try cache.set(User(name: "Grace", age: 45), for: key)
        #expect(Cache(makeConfiguration(folder)).value(for: key) == User(name: "Grace", age: 45))
    }

    @Test("A folder that cannot be created fails the first write with the cause")
    func uncreatableFolderFailsTheWrite() {
        faults.set(.fail(EACCES), for: .createDirectory)
        let cache = Cache(configuration())
        #expect {
            try cache.set(1, for: CacheKey<Int>("first"))
        } throws: { error in
            (error as? CacheError)?.kind == .permissionDenied && (error as? CacheError)?.key == "first"
        }
        #expect(!FileManager.default.fileExists(atPath: folder.path))
        #expect(cache.value(for: CacheKey<Int>("first")) == nil)
    }

    @Test("A folder that turns read-only under a running cache keeps serving reads; writes and removals report failure")
    func readOnlyFolderKeepsReads() throws {
        let events = EventLog()
        var settings = configuration()
        settings.onEvent = events.handler
        settings.memoryCountLimit = 0 // every read goes to the file
        let cache = Cache(settings)
        let keys = (0..<5).map { CacheKey<Int>("k\($0)") }
        for (index, key) in keys.enumerated() { try cache.set(index, for: key) }
        let before = snapshot()

        faults.makeReadOnly()
        for (index, key) in keys.enumerated() { #expect(cache.value(for: key) == index) }
        #expect(throws: CacheError.self) { try cache.set(99, for: keys[0]) }
        cache[keys[1]] = 98
        #expect(events.failures.count == 2)
        #expect(events.failures.allSatisfy { $0.kind == .permissionDenied })
        cache.removeValue(for: keys[2])
        cache.collectGarbage()
        #expect(snapshot() == before)
        for (index, key) in keys.enumerated() where index != 2 { #expect(cache.value(for: key) == index) }
    }

    @Test("removeAll on a folder that cannot be written reports each failure and keeps count true")
    func removeAllOnReadOnlyFolderReportsFailures() throws {
        let events = EventLog()
        var settings = configuration()
        settings.onEvent = events.handler
        let cache = Cache(settings)
        let keys = (0..<3).map { CacheKey<Int>("k\($0)") }
        for (index, key) in keys.enumerated() { try cache.set(index, for: key) }
        faults.makeReadOnly(EACCES)
        cache.removeAll()
        #expect(events.failures.count == 3)
        #expect(events.failures.allSatisfy { $0.kind == .permissionDenied && $0.key == nil })
        #expect(cache.count == 3)
        for (index, key) in keys.enumerated() { #expect(cache.value(for: key) == index) }
    }

    @Test(
        "Standard durability renames without syncing; synchronized syncs the file before and the folder after the rename",
        arguments: [Cache.Durability.standard, .synchronized])
    func durabilityCallsWhatItPromises(_ durability: Cache.Durability) throws {
        let cache = Cache(configuration(durability))
        try cache.set(1, for: CacheKey<Int>("warm-up")) // the folder exists from here on
        faults.clearCalls()
        try cache.set(2, for: CacheKey<Int>("k"))
        let calls = faults.calls.filter { ![.readFile, .lock, .setAccessTime].contains($0.operation) }
        let synchronized = durability == .synchronized
        #expect(
            calls.map(\.operation)
                == (synchronized ? [.writeNewFile, .rename, .synchronizeDirectory] : [.writeNewFile, .rename]))
        #expect(calls.first?.synchronize == synchronized)
        if synchronized { #expect(calls.last?.path == folder.path) }
    }

    @Test("A folder sync that fails after the rename throws, and this process then reads what the disk holds")
    func failedFolderSyncLeavesAConsistentView() throws {
        let cache = Cache(configuration(.synchronized))
        let key = CacheKey<Int>("k")
        try cache.set(1, for: key)
        faults.set(.fail(EIO), for: .synchronizeDirectory)
        #expect { try cache.set(2, for: key) } throws: { ($0 as? CacheError)?.kind == .ioFailure }
        faults.set(nil, for: .synchronizeDirectory)
        // The rename happened, so the new value is the entry; the memory tier must not contradict it.
        let fresh = Cache(makeConfiguration(folder))
        let onDisk = fresh.value(for: key)
        #expect(onDisk == 2)
        #expect(cache.value(for: key) == onDisk)
        #expect(cache.totalSize == fresh.totalSize)
        #expect(folder.fileNames.allSatisfy { !$0.hasPrefix(DiskTier.temporaryPrefix) })
    }
}
