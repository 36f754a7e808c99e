extension PostgresSharedTier {
    /// How a ``PostgresSharedTier`` names its table and channel, bounds its calls and keeps its
    /// table small.
    public struct Options: Sendable {
        /// The table records live in, created when missing. Default `cashier_entries`.
        ///
        /// Letters, digits and `_`, not starting with a digit, at most 48 characters (the tier
        /// derives index names from it, and PostgreSQL cuts identifiers at 63 bytes). Instances
        /// that share records must name the same table.
        public var tableName: String = "cashier_entries"

        /// The `LISTEN`/`NOTIFY` channel the change stream uses; `nil` (the default) uses
        /// ``tableName``. Instances that share records must name the same channel.
        public var channel: String? = nil

        /// The most bytes of records the table keeps, or `nil` (the default) for no bound.
        ///
        /// Enforced by ``PostgresSharedTier/sweep()``: the records written longest ago (by
        /// `updated_at`) go first. Between sweeps the table may exceed it by what was written.
        public var sizeLimit: Int? = nil

        /// How often ``PostgresSharedTier/run()`` sweeps expired records (and, with a
        /// ``sizeLimit``, the oldest beyond it). Default one minute.
        public var sweepInterval: Duration = .seconds(60)

        /// How many rows one statement of a sweep deletes at most: a sweep runs statements of this
        /// size until one deletes fewer, so no statement holds many row locks for long.
        public var sweepBatchSize: Int = 500

        /// The longest a call waits for PostgreSQL (for a connection, then for the answer) before
        /// it throws ``PostgresSharedTierError/timedOut(operation:after:)``. Default 2 seconds.
        ///
        /// Cashier bounds each call by its own, shorter `sharedTierTimeout` as well; this bound
        /// is for other callers and for the tier's own sweeps.
        public var operationTimeout: Duration = .seconds(2)

        /// How long, after PostgreSQL could not be reached, calls throw
        /// ``PostgresSharedTierError/unreachable`` at once instead of waiting for it again, and
        /// how long the change stream waits between attempts to listen again. Default 1 second.
        public var retryDelay: Duration = .seconds(1)

        /// How long a removal's tombstone is kept: a store written before the removal that
        /// arrives within this time is refused; one arriving later lands, as if no removal had
        /// been made. Default one hour. A tombstone is a row of the key's name and a time, no
        /// bytes; there is one per key removed or written by the app (a fetched value leaves
        /// none) in the last `tombstoneLifetime`, and the sweep deletes it after.
        public var tombstoneLifetime: Duration = .seconds(3600)

        /// How far back the log of changes reaches (a row per change: its transaction's id and
        /// the key's name). An instance whose stream reconnects within this time after it last
        /// heard the channel learns which keys changed meanwhile and drops those alone
        /// (`SharedChange.reconnected(changed:)`); one away longer drops every local entry
        /// (`SharedChange.all`). Default ten minutes. The sweep deletes older rows of the log.
        public var changeLogLifetime: Duration = .seconds(600)

        /// The most keys a reconnection names (`SharedChange.reconnected(changed:)`); when more
        /// changed while the stream was away, it says `SharedChange.all` instead, which costs the
        /// instance every local entry but one step. Default 10,000.
        public var reconnectionKeyLimit: Int = 10_000

        /// The most changes Cashier sends in one call (`SharedTier.maximumBatch`), which the tier
        /// applies in one statement: one round trip and one commit for all. Default 64. After an
        /// outage each instance sends again every change that failed, and under load changes
        /// queue: one statement each fell behind (FleetBench's outage runs).
        public var maximumBatch: Int = 64

        /// Whether a change the tier acknowledged survives a crash of PostgreSQL where the server
        /// is set to acknowledge commits early. Default `true`.
        ///
        /// With `true`, each statement that stores or removes records raises `synchronous_commit`
        /// from `off` to `local` for its own transaction (as `SET LOCAL` would, inside the same
        /// statement: no round trip more), so PostgreSQL answers only once the change is in its
        /// write-ahead log; other settings of `synchronous_commit` are at least that and are kept.
        /// With `false`, the server's setting decides: with `off` (on the cluster, the database or
        /// the role), a crash may lose the last changes PostgreSQL acknowledged (its manual,
        /// "Asynchronous Commit"). The instance that wrote then keeps its new value, while the
        /// others, told at their reconnection that the key changed (or every key), read the older row
        /// until it expires or is written again. Sweeps never wait: what they remove is expired,
        /// shadowed or beyond the size bound, and a row back after a crash is skipped or swept again.
        public var durableCommits: Bool = true

        /// Options with every default.
        public init() {}

        /// The channel the tier listens and notifies on.
        var effectiveChannel: String { channel ?? tableName }
    }
}
