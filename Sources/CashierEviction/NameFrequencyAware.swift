/// ``FrequencyAware`` over `String` keys behind non-generic methods: what the memory tier holds.
///
/// Swift 6.3 neither specializes nor inlines this module's generic code in another module,
/// so `FrequencyAware<String>` called from Cashier ran unspecialized, looking up generic
/// metadata for every nested field it touched (about 35 ns a hit, `CashierReplay speed`).
/// These methods are compiled here, with the key type known: the policy's code is
/// specialized and inlined into them, and a caller pays one direct call.
package struct NameFrequencyAware: Sendable {
    private var policy = FrequencyAware<String>()

    package init() {}

    package var count: Int { policy.count }

    /// See ``ReplacementPolicy/insert(_:weight:)``.
    package mutating func insert(_ name: String, weight: Int) -> Int { policy.insert(name, weight: weight) }

    /// See ``ReplacementPolicy/recordHit(_:)``.
    package mutating func recordHit(_ handle: Int) { policy.recordHit(handle) }

    /// See ``ReplacementPolicy/recordMiss(_:)``.
    package mutating func recordMiss(_ name: String) { policy.recordMiss(name) }

    /// See ``ReplacementPolicy/remove(_:)``.
    package mutating func remove(_ handle: Int) { policy.remove(handle) }

    /// See ``ReplacementPolicy/evict(where:)``.
    package mutating func evict(where isEvictable: (String) -> Bool) -> String? { policy.evict(where: isEvictable) }

    /// Evicts with no name excluded.
    package mutating func evict() -> String? { policy.evict(where: { _ in true }) }

    /// See ``ReplacementPolicy/removeAll()``.
    package mutating func removeAll() { policy.removeAll() }
}
