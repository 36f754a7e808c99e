/// Decides which key leaves a cache tier when it is over its limits.
///
/// The tier owns the values and its own `[Key: Record]` table; the policy keeps only
/// the order it needs, in a slab of nodes of its own. A key that enters the tier gets a
/// ``Handle`` from ``insert(_:weight:)``; the tier keeps it in its record, so a hit costs
/// ``recordHit(_:)`` on an index and no second hash lookup.
///
/// The contract, which every conforming policy follows:
/// - Every request is either a hit (``recordHit(_:)`` with the handle of a present key)
///   or a miss (``recordMiss(_:)`` with the key, present or not in the policy).
///   ``insert(_:weight:)`` is not a request: a tier that stores what it fetched after a
///   miss calls ``recordMiss(_:)`` and then ``insert(_:weight:)``.
/// - The tier decides *when* to evict (its count and cost limits); the policy decides
///   *which* key. Before storing a key of weight `w`, the tier calls ``evict(where:)``
///   while it is over `limit - w` (room first, as libCacheSim and the papers do), then
///   ``insert(_:weight:)``. Each call forgets the victim and returns its key; the tier
///   drops that key from its table, with no ``remove(_:)``. Inserting first and then
///   evicting while over the limit also works (the victim may then be the newcomer),
///   but SIEVE then sometimes turns the newcomer away at once.
/// - Admission is the policy's: W-TinyLFU's victim is either the key leaving its window
///   or main's oldest, whichever its sketch finds less frequent.
/// - ``evict(where:)`` never returns a key its predicate refuses (a locked entry);
///   it returns `nil` when every key is refused. A tier that must still shed weight
///   then calls it again with a predicate that accepts everything.
/// - A key that leaves the tier for another reason (removed, replaced, expired) leaves
///   the policy with ``remove(_:)``; its handle is dead from then on and may be handed
///   out again. A replaced key is a ``remove(_:)`` and an ``insert(_:weight:)``.
/// - Segment sizes (a window, a probationary queue) are fractions of the weight the
///   policy holds, so a policy needs no capacity: at eviction time the tier is at its
///   limit and the fractions are of that limit.
///
/// Policies are value types meant to live under the tier's lock; none is thread-safe
/// on its own, and none calls back into the tier except through `isEvictable`.
///
/// A tier uses one like this (its record keeps `handle`; `weight` is the cost when the
/// tier has a cost limit, else 1):
///
/// ```swift
/// // read, under the lock
/// if let record = records[name] { policy.recordHit(record.handle) } else { policy.recordMiss(name) }
/// // store
/// if let old = records.removeValue(forKey: name) { policy.remove(old.handle) }
/// while isOverLimits(adding: weight) {
///     guard let victim = policy.evict(where: { !records[$0]!.isLocked }) ?? policy.evict() else { break }
///     evicted.append(records.removeValue(forKey: victim)!)
/// }
/// record.handle = policy.insert(name, weight: weight)
/// records[name] = record
/// ```
package protocol ReplacementPolicy<Key> {
    associatedtype Key: Hashable

    /// Where a present key's node is: stable while the key is in the policy.
    typealias Handle = Int

    /// The number of keys held.
    var count: Int { get }

    /// The total weight of the keys held.
    var totalWeight: Int { get }

    /// A key entered the tier with `weight` (its cost, or 1 for a count limit);
    /// returns the handle to pass to ``recordHit(_:)`` and ``remove(_:)``.
    /// The key must not be held already.
    mutating func insert(_ key: Key, weight: Int) -> Handle

    /// A present key was read.
    mutating func recordHit(_ handle: Handle)

    /// A key was asked for and not found (for frequency sketches and adaptation).
    mutating func recordMiss(_ key: Key)

    /// A present key left the tier for a reason of the tier's own.
    mutating func remove(_ handle: Handle)

    /// Chooses a victim that `isEvictable` accepts, forgets it and returns its key;
    /// `nil` when the policy is empty or refuses every key.
    mutating func evict(where isEvictable: (Key) -> Bool) -> Key?

    /// Forgets every key.
    mutating func removeAll()
}

extension ReplacementPolicy {
    /// Evicts with no key excluded.
    package mutating func evict() -> Key? { evict(where: { _ in true }) }
}
