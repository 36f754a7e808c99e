import CashierPlatform
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// How the queue of changes for the shared tier sends them (``SharedTierWrites``): up to
/// ``SharedTierWrites/maximumSending`` at once, of distinct keys, in the order they came; a
/// change of a key waits for the key's change being sent; a removal of every record waits for
/// every change before it and holds back every change after it.
///
/// One at a time, an instance of FleetBench's outage runs under load was still sending its
/// backlog 5 s after the load ended, and the other instances served the values it replaced.
///
/// The fake tier's gate holds every store, so what is being sent at once is counted there.
extension SharedTierTests {
    @Suite struct Sending: TwoServerSuite {
        let servers = TwoServers()

        func key(_ index: Int) -> CacheKey<Int> { CacheKey<Int>("k\(index)", schemaVersion: 1) }

        func slot(_ index: Int) -> SharedSlot { SharedSlot(name: "k\(index)", version: "schema-1") }

        @Test func changesOfDistinctKeysAreSentSeveralAtOnce() async throws {
            let a = Cache(servers.configuration(1))
            let queue = a.folderState.sharedTierWrites
            backing.closeGate()
            for index in 0..<6 { try a.set(index, for: key(index)) }
            let limit = SharedTierWrites.maximumSending
            await eventually("\(limit) stores at the gate at once") { backing.storesAtGate == limit }
            // The rest wait for a free place, in order: the first keys went.
            #expect(!queue.hasQueuedChange(of: "k0"))
            #expect(queue.hasQueuedChange(of: "k\(limit)"))
            #expect(queue.hasQueuedChange(of: "k5"))
            #expect(backing.storesAtGate == limit)
            backing.openGate()
            a.waitForBackgroundWork()
            for index in 0..<6 { #expect(backing.value(Int.self, in: slot(index)) == index) }
        }

        @Test func aChangeOfAKeyWaitsForTheKeysChangeBeingSentAndOthersPassIt() async throws {
            let a = Cache(servers.configuration(1))
            let queue = a.folderState.sharedTierWrites
            backing.closeGate()
            try a.set(1, for: Self.key)
            await eventually("the first store at the gate") { backing.storesAtGate == 1 }
            try a.set(2, for: Self.key)
            try a.set(5, for: key(0))
            await eventually("another key's store passed the waiting one") { backing.storesAtGate == 2 }
            #expect(queue.hasQueuedChange(of: Self.key.name), "the second store of n waits for the first")
            backing.openGate()
            a.waitForBackgroundWork()
            #expect(backing.value(Int.self, in: Self.slot) == 2, "the later store landed last")
            #expect(backing.stores(in: Self.slot) == 2)
            #expect(backing.value(Int.self, in: slot(0)) == 5)
        }

        @Test func aRemovalOfEveryKeyWaitsForTheChangesBeforeItAndHoldsBackThoseAfter() async throws {
            let a = Cache(servers.configuration(1))
            let queue = a.folderState.sharedTierWrites
            backing.closeGate()
            try a.set(1, for: Self.key)
            await eventually("the store at the gate") { backing.storesAtGate == 1 }
            a.removeAll()
            try a.set(5, for: key(0))
            // Behind the removal of every key, which waits for the store at the gate.
            #expect(queue.hasQueuedChange(of: "k0"))
            #expect(backing.removalsOfAll == 0)
            #expect(backing.storesAtGate == 1)
            backing.openGate()
            a.waitForBackgroundWork()
            #expect(backing.removalsOfAll == 1)
            #expect(backing.record(in: Self.slot) == nil, "removed after it was stored")
            #expect(backing.value(Int.self, in: slot(0)) == 5, "stored after the removal of every key")
        }
    }
}
