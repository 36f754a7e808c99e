import Foundation

/// A tier below the disk that several processes, on several machines, share: a fleet of
/// servers behind one load balancer, say.
///
/// Cashier reads memory, then disk, then the shared tier, then fetches; a value found here
/// fills the local tiers. Writes and removals reach the shared tier after they land locally;
/// a key another instance changed is dropped from this instance's local tiers when
/// ``changes()`` says so.
///
/// What travels is the entry's record, the bytes the disk tier stores, checksum and versions
/// included: a damaged record is a miss, and a record of another schema or app version is
/// judged as the disk tier judges one. Records live in *slots* (``SharedSlot``): a key's
/// name and the version that decides whether a reader can decode it, so two versions of an
/// app, running side by side during a rolling deploy, each keep their own record of a key
/// instead of overwriting each other's in a loop.
///
/// Implementations are in packages of their own (`CashierPostgres` on PostgreSQL). A call
/// may fail or take long: Cashier bounds every call by
/// ``Cache/Configuration-swift.struct/sharedTierTimeout``, reports a failure through
/// ``Cache/Configuration-swift.struct/onEvent`` and goes on with the local tiers; callers see
/// no error from the shared tier. A call still running at the timeout is cancelled: an
/// implementation should then give up, and must not apply a write or removal after it has
/// returned. Each cache makes one write or removal at a time, in order; reads may run at
/// once. <doc:OnAServer> says how the cache uses it.
///
/// ## Order across instances
///
/// Each instance sends its changes in its own order, in the background: a write on one
/// instance that returned before another instance's write of the same key can reach the tier
/// after it. So every record carries the moment it was written locally
/// (``SharedRecord/writtenAt``), and every removal the moment it was made, by the writing
/// instance's clock; a tier that keeps the newest change, whatever order they arrive in,
/// implements ``store(_:in:removingOtherVersions:)`` and ``removeRecords(named:writtenBefore:)``:
///
/// - A store lands only over a record written no later than it, and only if no removal of the
///   key is newer than it; otherwise it changes nothing, tells no one, and answers
///   ``SharedStoreOutcome/superseded``: the writing instance then drops its own copy of the key
///   and reads the newer record next.
/// - A removal deletes only the records written before it, and keeps its time (a *tombstone*)
///   for long enough that a write older than it, arriving later, does not bring the key back.
///
/// The times come from the instances' wall clocks. Of two changes of one key made on two
/// instances within the clocks' skew of each other, either may be kept: keep the fleet's
/// clocks synchronized (NTP keeps them within milliseconds), well within the time between two
/// writes of one key that must be told apart. A tier that only implements the six original
/// requirements keeps the change that arrives last.
public protocol SharedTier: Sendable {
    /// The record in `slot`, or `nil` when there is none or it has expired.
    func record(in slot: SharedSlot) async throws -> SharedRecord?

    /// Stores `record` in `slot`, replacing what was there, and tells the other instances
    /// (through their ``changes()``) that the key `slot.name` changed.
    func store(_ record: SharedRecord, in slot: SharedSlot) async throws

    /// Stores `record` in `slot`, removes the records of the key's other versions (other
    /// slots of `slot.name`), and tells the other instances that the key changed.
    ///
    /// Cashier calls it for a value the app wrote (``Cache/set(_:for:lifespan:)``): what the
    /// other versions hold is then the value it replaced, and an instance of another version
    /// must not read it back. A value stored after a fetch goes to ``store(_:in:)`` instead and
    /// leaves the other versions' records, which hold the same value in their own shape
    /// (removing them would have two versions refetch each other's keys in a loop).
    ///
    /// The default calls ``removeRecords(named:)``, then ``store(_:in:)``; an implementation
    /// that can do both in one step should, so no reader finds the key missing in between.
    func storeRemovingOtherVersions(_ record: SharedRecord, in slot: SharedSlot) async throws

    /// Removes the records of every slot of the key `name`, and tells the other instances.
    func removeRecords(named name: String) async throws

    /// Stores `record` in `slot` unless the tier holds something newer of the key: a record in
    /// `slot` written later than ``SharedRecord/writtenAt``, or a removal of the key made later
    /// (see "Order across instances" above). With `removingOtherVersions`, also removes the
    /// records of the key's other versions written before it, as
    /// ``removeRecords(named:writtenBefore:)`` would (even when the store itself is superseded:
    /// those records are older than this write all the same).
    ///
    /// Tells the other instances (``changes()``) only when it changed something. Answers
    /// ``SharedStoreOutcome/superseded`` when the record was not stored because of a newer
    /// change; the cache then drops its own copy of the key.
    ///
    /// The default calls ``storeRemovingOtherVersions(_:in:)`` or ``store(_:in:)`` and answers
    /// ``SharedStoreOutcome/stored``: the change that arrives last wins.
    func store(
        _ record: SharedRecord, in slot: SharedSlot, removingOtherVersions: Bool
    ) async throws -> SharedStoreOutcome

    /// Removes the records of every slot of the key `name` written before `date` (by
    /// ``SharedRecord/writtenAt``), and remembers the removal for long enough that a store
    /// written before `date` and arriving later is refused; tells the other instances when it
    /// changed something.
    ///
    /// The default calls ``removeRecords(named:)``: every record goes, whenever written, and a
    /// store arriving later lands.
    func removeRecords(named name: String, writtenBefore date: Date) async throws

    /// Removes every record, and tells the other instances (``SharedChange/all``).
    func removeAllRecords() async throws

    /// What other instances changed, as they change it: each element a key whose local copies
    /// are stale (``SharedChange/stored(_:_:)`` carries the record stored too). An implementation that may have missed changes (it lost its connection)
    /// yields ``SharedChange/all`` once it can tell again, or, when it knows which keys changed
    /// meanwhile, ``SharedChange/reconnected(changed:)``. Changes this instance made itself
    /// are not required to appear (each one that does costs a local copy). Each call starts a
    /// new stream, listening from the call on; a cache asks for one when it is made.
    ///
    /// A stream should end only when the tier is shut down: when one ends, the cache asks for
    /// another after a pause, and drops every local entry, since it cannot know what changed
    /// in between. It ends the stream itself (cancels its iteration) when it goes.
    func changes() -> AsyncStream<SharedChange>

    /// Whether the tier keeps the newest change of a key whatever order changes arrive in (see
    /// "Order across instances" above). `false` by default.
    var ordersChanges: Bool { get }

    /// Applies `changes`, each of a different key, as ``store(_:in:removingOtherVersions:)`` and
    /// ``removeRecords(named:writtenBefore:)`` would one after another, and answers each one's
    /// outcome in order (a removal's is ``SharedStoreOutcome/stored``). Throws when any could not
    /// be applied: Cashier then counts every change of the call as failed and sends each again.
    ///
    /// Cashier calls it with up to ``maximumBatch`` changes queued one after another, when that
    /// is more than one: after an outage, or under load, the changes waiting then go in a few
    /// calls instead of one each. The default makes one call per change, in order, stopping at
    /// the first that throws.
    func apply(_ changes: [SharedTierChange]) async throws -> [SharedStoreOutcome]

    /// The most changes Cashier passes to one ``apply(_:)``; 1 (the default) for one call per
    /// change. A tier that applies several changes in one round trip says how many.
    var maximumBatch: Int { get }
}

/// A change Cashier sends to a ``SharedTier`` in a batch (``SharedTier/apply(_:)``).
public enum SharedTierChange: Sendable, Hashable {
    /// ``SharedTier/store(_:in:removingOtherVersions:)``.
    case store(SharedRecord, in: SharedSlot, removingOtherVersions: Bool)
    /// ``SharedTier/removeRecords(named:writtenBefore:)``.
    case removal(named: String, writtenBefore: Date)

    /// The key's name.
    public var name: String {
        switch self {
        case .store(_, let slot, _): slot.name
        case .removal(let name, _): name
        }
    }
}

extension SharedTier {
    /// Whether the tier keeps the newest change of a key whatever order changes arrive in: it
    /// implements ``store(_:in:removingOtherVersions:)`` and
    /// ``removeRecords(named:writtenBefore:)`` as "Order across instances" says. `false` by
    /// default: the change that arrives last wins, so Cashier sends a write that failed to reach
    /// the tier again as a removal of the key, never as the write, which could replace a newer
    /// one made elsewhere meanwhile (the other instances then fetch the key). A tier that
    /// orders changes says so, and gets the write itself again.
    public var ordersChanges: Bool { false }

    /// Removes every record of `slot.name` (``removeRecords(named:)``), then stores `record`
    /// in `slot` (``store(_:in:)``): two calls, and two changes for the other instances.
    public func storeRemovingOtherVersions(_ record: SharedRecord, in slot: SharedSlot) async throws {
        try await removeRecords(named: slot.name)
        try await store(record, in: slot)
    }

    /// Calls ``storeRemovingOtherVersions(_:in:)`` or ``store(_:in:)``; always
    /// ``SharedStoreOutcome/stored``, the tier keeping the change that arrives last.
    public func store(
        _ record: SharedRecord, in slot: SharedSlot, removingOtherVersions: Bool
    ) async throws -> SharedStoreOutcome {
        if removingOtherVersions {
            try await storeRemovingOtherVersions(record, in: slot)
        } else {
            try await store(record, in: slot)
        }
        return .stored
    }

    /// Calls ``removeRecords(named:)``, whatever `date`.
    public func removeRecords(named name: String, writtenBefore date: Date) async throws {
        try await removeRecords(named: name)
    }

    /// One call per change, in order, stopping at the first that throws (``applyOneByOne(_:)``).
    public func apply(_ changes: [SharedTierChange]) async throws -> [SharedStoreOutcome] {
        try await applyOneByOne(changes)
    }

    /// Applies `changes` one call each (``store(_:in:removingOtherVersions:)``,
    /// ``removeRecords(named:writtenBefore:)``), in order, stopping at the first that throws: what
    /// ``apply(_:)`` does by default, for an implementation to fall back on.
    public func applyOneByOne(_ changes: [SharedTierChange]) async throws -> [SharedStoreOutcome] {
        var outcomes: [SharedStoreOutcome] = []
        outcomes.reserveCapacity(changes.count)
        for change in changes {
            switch change {
            case .store(let record, let slot, let removingOtherVersions):
                outcomes.append(try await store(record, in: slot, removingOtherVersions: removingOtherVersions))
            case .removal(let name, let date):
                try await removeRecords(named: name, writtenBefore: date)
                outcomes.append(.stored)
            }
        }
        return outcomes
    }

    /// One change a call.
    public var maximumBatch: Int { 1 }
}

/// What ``SharedTier/store(_:in:removingOtherVersions:)`` did.
public enum SharedStoreOutcome: Sendable, Hashable {
    /// The record is in its slot.
    case stored
    /// The tier holds a newer change of the key (a record written later, or a later removal):
    /// the record was not stored, and the writer's own copy of the key is older than the tier's.
    case superseded
}

/// Where a record lives in a ``SharedTier``: a key's name and the version its readers need.
public struct SharedSlot: Sendable, Hashable, CustomStringConvertible {
    /// The key's name, as ``CacheKey/name``.
    public var name: String
    /// What a reader must share with the writer to use the record: `"schema-N"` for a key that
    /// declares ``CacheKey/schemaVersion`` `N`, `"app-V"` for one that does not (its entries
    /// are tied to ``Cache/Configuration-swift.struct/appVersion`` `V`).
    public var version: String

    /// The slot of key `name` for readers of `version` (`"schema-N"` or `"app-V"`, see ``version``).
    public init(name: String, version: String) {
        self.name = name
        self.version = version
    }

    /// The name, quoted, and the version, for messages: `"profile" (schema-2)`.
    public var description: String { "\(name.debugDescription) (\(version))" }
}

/// A record in a ``SharedTier``: the entry as the disk stores it, when it expires, and when
/// it was written.
public struct SharedRecord: Sendable, Hashable {
    /// The entry's record: header (versions, type name, lifespan, lock), payload, checksum.
    public var bytes: Data
    /// When the entry expires, after which the tier may drop it; `nil` for never.
    public var expiresAt: Date?
    /// When the value was written on the instance that wrote it, by that instance's clock:
    /// the moment of ``Cache/set(_:for:lifespan:)``, the start of the fetch that returned it,
    /// or, for a migrated record, the time of the record it was migrated from. A tier that
    /// orders changes keeps the newest by this time (see ``SharedTier``, "Order across instances").
    public var writtenAt: Date

    /// A record of `bytes` (an entry's record, as the disk tier stores it) expiring at
    /// `expiresAt`, written at `writtenAt`.
    public init(bytes: Data, expiresAt: Date?, writtenAt: Date) {
        self.bytes = bytes
        self.expiresAt = expiresAt
        self.writtenAt = writtenAt
    }

    /// A record of `bytes` expiring at `expiresAt`, written now: for a tier that does not keep
    /// the time (and answers it as now). Cashier itself always gives the time.
    public init(bytes: Data, expiresAt: Date?) {
        self.init(bytes: bytes, expiresAt: expiresAt, writtenAt: Date())
    }
}

/// A change another instance made to a ``SharedTier``.
public enum SharedChange: Sendable, Hashable {
    /// The key with this name changed (written or removed): local copies of it are stale.
    case key(String)
    /// The key `slot.name` changed, and `record` is what `slot` holds now (stored by another
    /// instance): local copies of the key are stale, as for ``key(_:)``, and the next read of
    /// `slot` here may use `record` instead of asking the tier.
    ///
    /// A tier whose notifications can carry a small record sends this for a store, so that the
    /// other instances' next reads of a key that was just written cost no call each. It must
    /// carry exactly what the slot held when the change was made, and, as every change, come
    /// in the order the changes of the key were made. Cashier uses the record only when it was
    /// written (``SharedRecord/writtenAt``) after this instance's own last write or removal of
    /// the key, none of which is still on its way to the tier: an older record may have been
    /// announced after this instance's newer change reached the tier, and the tier keeps that
    /// change. Otherwise the next read asks the tier, as for ``key(_:)``.
    case stored(SharedSlot, SharedRecord)
    /// Anything may have changed (every record removed, or changes missed while disconnected).
    case all
    /// The stream is back after a disconnection, and the keys named in `changed` are the only
    /// ones other instances may have changed meanwhile: local copies of those are stale, the
    /// rest are not. A tier that can tell which changes it missed (it keeps a log of them)
    /// yields this instead of ``all`` once it listens again, so that a reconnection costs the
    /// instances the keys that changed, not every local entry and the refills after it.
    ///
    /// Cashier drops each key named, as for ``key(_:)``, and sends again the changes of its own
    /// that failed to reach the tier, as after ``all``. When in doubt (the log does not reach
    /// back to the disconnection, or names too many keys), yield ``all``.
    case reconnected(changed: Set<String>)
}

extension SharedChange {
    /// Whether the change says the tier's stream is back after a disconnection (``all`` says
    /// so too), after which the changes that failed to reach the tier go again.
    var isReconnection: Bool {
        switch self {
        case .all, .reconnected: true
        case .key, .stored: false
        }
    }
}
