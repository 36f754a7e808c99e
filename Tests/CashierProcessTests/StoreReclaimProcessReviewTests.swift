import CashierStress
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// Review of 46c85b9 (a removal of one key no longer checkpoints the store), across processes:
/// a removal another process made is seen at once and survives that process's kill, although
/// its commit now stays in the log; and what the removals leave in the log is what every
/// process's `totalSize` reports.
@Suite struct StoreReclaimProcessReviewTests {
    let folder = TemporaryFolder()

    func value(_ key: String) -> Data { StressSession.value(for: key, bytes: 300, seed: 7) }

    @Test func removalsOfAKilledProcessStayRemovedInEveryProcess() throws {
        let session = try StressSession(folder)
        for index in 0..<60 { #expect(session.ask("fill key-\(index) 300 7") == "ok") }
        #expect(session.ask("wait") == "ok")
        let reader = Cache(FullVolumeTests.configuration(folder.url, memoryCountLimit: 0))
        for index in stride(from: 0, to: 60, by: 2) {
            #expect(session.ask("remove key-\(index)") == "ok")
            // Seen here at once: the commit is in the log, which every connection reads.
            #expect(reader.value(for: CacheKey<Data>("key-\(index)")) == nil, "key-\(index) after its removal")
        }
        // Killed right after its last removal, its reclaim (if any) not run.
        kill(session.child.process.processIdentifier, SIGKILL)
        session.child.process.waitUntilExit()

        let fresh = Cache(FullVolumeTests.configuration(folder.url))
        let other = try StressSession(folder)
        defer { other.close() }
        for index in 0..<60 {
            let key = "key-\(index)"
            if index.isMultiple(of: 2) {
                #expect(fresh.value(for: CacheKey<Data>(key)) == nil, "\(key) came back after the kill")
                #expect(other.ask("check \(key) 300 7") == "nil", "\(key) came back in another process")
            } else {
                #expect(fresh.value(for: CacheKey<Data>(key)) == value(key))
                #expect(other.ask("check \(key) 300 7") == "whole")
            }
        }
        #expect(fresh.count == 30)
    }

    /// Another process removes keys one at a time and nothing else (a shared tier's changes
    /// from elsewhere, say): this process, which only reads, sees every removal, and the folder
    /// both see does not grow by more than a tight volume's log (1 MiB) over what it held.
    @Test func removalsByAnotherProcessDoNotGrowTheFolderThisOneSees() throws {
        let writer = Cache(FullVolumeTests.configuration(folder.url))
        for index in 0..<1_000 {
            try writer.set(
                StressSession.value(for: "key-\(index)", bytes: 200, seed: 7), for: CacheKey<Data>("key-\(index)"))
        }
        writer.removeAll(where: { $0 == "key-999" }) // the log folded in
        writer.waitForBackgroundWork()
        let before = writer.totalSize

        let session = try StressSession(folder)
        let reader = Cache(FullVolumeTests.configuration(folder.url, memoryCountLimit: 0))
        var most = before
        for index in stride(from: 0, to: 995, by: 5) {
            #expect(session.ask("remove key-\(index)") == "ok")
            #expect(session.ask("wait") == "ok")
            #expect(reader.value(for: CacheKey<Data>("key-\(index)")) == nil)
            most = max(most, reader.totalSize)
        }
        session.close()
        #expect(reader.count == 800)
        #expect(
            most <= before + (1 << 20),
            "another process's 199 removals took the folder from \(before) to \(most) bytes at rest (\(FullVolume.describe(folder.url)) once it closed)"
        )
    }
}
