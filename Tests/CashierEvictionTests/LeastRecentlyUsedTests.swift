import Testing

@testable import CashierEviction

@Suite struct LeastRecentlyUsedTests {
    @Test func evictsInOrderOfLastUse() {
        var lru = LeastRecentlyUsed<String>()
        let a = lru.insert("a", weight: 1)
        _ = lru.insert("b", weight: 1)
        let c = lru.insert("c", weight: 1)
        lru.recordHit(a)
        lru.recordHit(c)
        #expect(lru.keysByRecency == ["c", "a", "b"])
        #expect(lru.evict() == "b")
        #expect(lru.evict() == "a")
        #expect(lru.evict() == "c")
        #expect(lru.evict() == nil)
        #expect(lru.count == 0)
    }

    @Test func aMissChangesNoOrder() {
        var lru = LeastRecentlyUsed<String>()
        _ = lru.insert("a", weight: 1)
        _ = lru.insert("b", weight: 1)
        lru.recordMiss("a")
        lru.recordMiss("z")
        #expect(lru.keysByRecency == ["b", "a"])
    }

    @Test func skipsKeysThePredicateRefuses() {
        var lru = LeastRecentlyUsed<String>()
        _ = lru.insert("locked", weight: 1)
        _ = lru.insert("b", weight: 1)
        #expect(lru.evict(where: { $0 != "locked" }) == "b")
        #expect(lru.evict(where: { $0 != "locked" }) == nil)
        #expect(lru.count == 1)
        #expect(lru.evict() == "locked")
    }

    @Test func removedKeysLeaveTheOrderAndTheirWeight() {
        var lru = LeastRecentlyUsed<String>()
        let a = lru.insert("a", weight: 5)
        _ = lru.insert("b", weight: 7)
        lru.remove(a)
        #expect(lru.totalWeight == 7)
        #expect(lru.keysByRecency == ["b"])
        // The freed handle is reused and the order stays right.
        let c = lru.insert("c", weight: 2)
        #expect(c == a)
        #expect(lru.keysByRecency == ["c", "b"])
        #expect(lru.totalWeight == 9)
    }

    @Test func matchesAReferenceListOnRandomOperations() {
        var lru = LeastRecentlyUsed<Int>()
        var reference: [Int] = [] // most recent first
        var handles: [Int: Int] = [:]
        var seed: UInt64 = 42
        func next(_ bound: Int) -> Int {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((seed >> 33) % UInt64(bound))
        }
        for _ in 0..<5_000 {
            let key = next(64)
            if let handle = handles[key] {
                if next(5) == 0 {
                    lru.remove(handle)
                    handles[key] = nil
                    reference.removeAll { $0 == key }
                } else {
                    lru.recordHit(handle)
                    reference.removeAll { $0 == key }
                    reference.insert(key, at: 0)
                }
            } else {
                handles[key] = lru.insert(key, weight: 1)
                reference.insert(key, at: 0)
                if reference.count > 32 {
                    let victim = lru.evict()
                    #expect(victim == reference.removeLast())
                    handles[victim!] = nil
                }
            }
            #expect(lru.keysByRecency == reference)
        }
    }
}
