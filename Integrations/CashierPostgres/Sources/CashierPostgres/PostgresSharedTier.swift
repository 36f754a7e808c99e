import Cashier
import Foundation
import Logging
import NIOConcurrencyHelpers
import PostgresNIO
import ServiceLifecycle

/// Cashier's shared tier on PostgreSQL: every instance of a server fleet reads and writes one
/// table, and hears through `LISTEN`/`NOTIFY` which keys the others changed.
///
/// ```swift
/// let tier = PostgresSharedTier(configuration: postgresConfiguration)
/// var configuration = Cache.Configuration(name: "api")
/// configuration.sharedTier = tier
/// let cache = Cache(configuration)
/// // in a ServiceGroup with the server, or in a task of its own:
/// try await tier.run()
/// ```
///
/// **One table** (``Options-swift.struct/tableName``, created when missing): a row per slot,
/// `(name, version)` its primary key, with the record's bytes, their size, when it expires,
/// when it was stored (`updated_at`, the server's clock) and when it was written
/// (`written_at`, ``SharedRecord/writtenAt``: the writing instance's clock). A read ignores an
/// expired row; the server deletes expired rows in bounded batches (``sweep()``), and with a
/// ``Options-swift.struct/sizeLimit`` the rows stored longest ago beyond it. A table made by
/// the previous version of this package gains `written_at` at the first call (its rows count as
/// written before any new write).
///
/// **Order**: the newest change wins, whatever order instances' changes arrive in (see
/// `SharedTier`, "Order across instances"). A store replaces a row only when written no
/// earlier than it, and is refused (``SharedStoreOutcome/superseded``, nothing notified) when
/// the row, or the key's last removal, is newer. A removal deletes the rows written no later
/// than it and leaves a *tombstone* row (version `*removed`, no bytes) with its time, for
/// ``Options-swift.struct/tombstoneLifetime``: a store written before the removal and arriving
/// within that time is refused, and does not bring the key back. A write of the app's
/// (``SharedTier/storeRemovingOtherVersions(_:in:)``) moves the tombstone to its own time.
///
/// **Changes**: each store and removal that changed a row notifies the channel with the key's
/// name and this instance's id, in the statement that writes, so others hear of it when it
/// commits and this instance skips its own. A stream of ``changes()`` asked for before ``run()`` listens stays
/// open and yields `.all` once it does (a cache made before the tier runs drops its local
/// entries once, at that moment); after the listening connection was lost, the open streams
/// yield, once it listens again, the keys the log of changes (a table beside the records',
/// `<table>_changes`) names from where the lost connection had heard to
/// (`SharedChange.reconnected(changed:)`), or `.all` when it cannot tell (see
/// ``Options-swift.struct/changeLogLifetime`` and ``Options-swift.struct/reconnectionKeyLimit``).
/// When ``run()``
/// returns, the open streams finish (a cache then drops its local entries once, and the stream
/// it asks for next stays open, silent, without dropping them again).
///
/// **Running it**: ``run()`` (this type is a swift-service-lifecycle `Service`) creates the
/// table when missing, listens, sweeps and, for a tier made with
/// ``init(configuration:options:logger:)``, runs the connection pool it owns. A tier made with ``init(client:options:logger:)`` uses a `PostgresClient` the
/// application runs. Without ``run()`` reads and writes work (on a running client), but no
/// change is heard and nothing is swept.
///
/// **Failure is bounded**: a call waits at most ``Options-swift.struct/operationTimeout`` and then
/// throws; after PostgreSQL could not be reached, calls throw at once for
/// ``Options-swift.struct/retryDelay`` before trying again.
public final class PostgresSharedTier: SharedTier, Service {
    /// The options the tier was made with.
    public let options: Options
    /// This instance's id in its notifications, so that it skips its own.
    public let instanceID: UUID
    /// What this instance's marks notify before their sequence number (``takeMark(on:)``).
    private let ownMarkPrefix: String

    private let client: PostgresClient
    /// Whether ``run()`` runs `client` (the tier made it).
    private let ownsClient: Bool
    private let logger: Logger
    private let table: Table
    private let state = NIOLockedValueBox(State())
    /// Wakes the sweeper: every ``Options-swift.struct/sweepInterval``, and when writes since the
    /// last sweep may have passed the size limit.
    private let sweepRequests: AsyncStream<Void>
    private let sweepRequester: AsyncStream<Void>.Continuation

    /// A tier on a `PostgresClient` the application runs (its `run()` in a task or a
    /// `ServiceGroup`), shared with the application's own queries.
    ///
    /// - Precondition: ``Options-swift.struct/tableName`` and ``Options-swift.struct/channel``
    ///   are valid names (letters, digits and `_`, at most 48 characters).
    public convenience init(
        client: PostgresClient, options: Options = Options(), logger: Logger = PostgresSharedTier.defaultLogger
    ) {
        self.init(client: client, ownsClient: false, options: options, logger: logger)
    }

    /// A tier with a connection pool of its own, made from `configuration` and run by ``run()``.
    ///
    /// - Precondition: ``Options-swift.struct/tableName`` and ``Options-swift.struct/channel``
    ///   are valid names (letters, digits and `_`, at most 48 characters).
    public convenience init(
        configuration: PostgresClient.Configuration, options: Options = Options(),
        logger: Logger = PostgresSharedTier.defaultLogger
    ) {
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        self.init(client: client, ownsClient: true, options: options, logger: logger)
    }

    private init(client: PostgresClient, ownsClient: Bool, options: Options, logger: Logger) {
        precondition(Table.isValidName(options.tableName), "invalid table name \(options.tableName.debugDescription)")
        precondition(
            Table.isValidName(options.effectiveChannel), "invalid channel \(options.effectiveChannel.debugDescription)")
        precondition(options.sweepBatchSize > 0, "sweepBatchSize must be positive")
        self.client = client
        self.ownsClient = ownsClient
        self.options = options
        self.logger = logger
        self.instanceID = UUID()
        ownMarkPrefix = "\(instanceID.uuidString) m"
        self.table = Table(
            name: options.tableName, channel: options.effectiveChannel, durableCommits: options.durableCommits)
        (sweepRequests, sweepRequester) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// A logger that logs nothing, the default.
    public static let defaultLogger = Logger(label: "cashier.postgres", factory: { _ in SwiftLogNoOpLogHandler() })

    // MARK: - SharedTier

    public func record(in slot: SharedSlot) async throws -> SharedRecord? {
        try await perform("a read of \(slot)") { [table, client] in
            // Read to the end (one row at most): a sequence left unfinished holds its connection.
            var found: SharedRecord?
            let rows = try await client.query(table.select(slot)).decode((Data, Date?, Date).self)
            for try await (bytes, expiresAt, writtenAt) in rows {
                found = SharedRecord(bytes: bytes, expiresAt: expiresAt, writtenAt: writtenAt)
            }
            return found
        }
    }

    /// Stores `record` in `slot` unless a newer change of the key is there
    /// (``store(_:in:removingOtherVersions:)``).
    public func store(_ record: SharedRecord, in slot: SharedSlot) async throws {
        _ = try await store(record, in: slot, removingOtherVersions: false)
    }

    /// Stores `record` in `slot` and deletes the rows of the key's other versions written
    /// before it (``store(_:in:removingOtherVersions:)``).
    public func storeRemovingOtherVersions(_ record: SharedRecord, in slot: SharedSlot) async throws {
        _ = try await store(record, in: slot, removingOtherVersions: true)
    }

    /// Stores `record` in `slot` unless the row there, or the key's tombstone, was written
    /// later; with `removingOtherVersions`, deletes the rows of the key's other versions
    /// written before it and moves the tombstone to its time, in the same statement. One
    /// notification, when a row changed.
    public func store(
        _ record: SharedRecord, in slot: SharedSlot, removingOtherVersions: Bool
    ) async throws -> SharedStoreOutcome {
        // The record travels in the notification when it fits: the others' next reads need no call.
        let notice = notification(for: .stored(slot, record))
        let keyNotice = notification(for: .key(slot.name))
        let lifetime = options.tombstoneLifetime.seconds
        let what = removingOtherVersions ? "a write of \(slot) replacing its other versions" : "a write of \(slot)"
        let stored = try await performWrite(what) { [self, table, client] in
            let query =
                removingOtherVersions
                ? try table.orderedUpsertRemovingOthers(
                    record, in: slot, tombstoneLifetime: lifetime, notifying: notice, orElse: keyNotice)
                : try table.orderedUpsert(record, in: slot, notifying: notice)
            return try await sendingOwnChange(keyNotice) {
                // A row when it notified; its column, whether the record was stored.
                var (stored, notified) = (false, false)
                for try await row in try await client.query(query) {
                    notified = true
                    stored = try row.makeRandomAccess()[0].decode(Int.self) > 0
                }
                return (stored, notified)
            }
        }
        guard stored else { return .superseded }
        requestSweepIfOverSize(adding: record.bytes.count)
        return .stored
    }

    /// Applies `changes` (of distinct keys) in one statement, as the calls they stand for would
    /// one after another; one notification per key that changed. Changes of one key more than
    /// once go one call each.
    public func apply(_ changes: [SharedTierChange]) async throws -> [SharedStoreOutcome] {
        // A name too long for a notification goes out as every key's: such a change goes alone,
        // where its notification is counted as its own (``sendingOwnChange(_:_:)``).
        guard changes.count > 1, Set(changes.map(\.name)).count == changes.count,
            changes.allSatisfy({ Notice(payload: notification(for: .key($0.name)))?.change.name == $0.name })
        else {
            return try await applyOneByOne(changes)
        }
        let items = changes.map { change -> Table.BatchItem in
            let keyNotice = notification(for: .key(change.name))
            switch change {
            case .store(let record, let slot, let removingOtherVersions):
                return Table.BatchItem(
                    name: slot.name, version: slot.version, bytes: ByteBuffer(bytes: record.bytes),
                    kind: removingOtherVersions ? 1 : 0, expiresAt: record.expiresAt, writtenAt: record.writtenAt,
                    notice: notification(for: .stored(slot, record)), keyNotice: keyNotice)
            case .removal(let name, let date):
                return Table.BatchItem(
                    name: name, version: "", bytes: ByteBuffer(), kind: 2, expiresAt: nil, writtenAt: date,
                    notice: keyNotice, keyNotice: keyNotice)
            }
        }
        // By name: two instances' batches lock the rows of the keys they share in one order.
        let order = items.indices.sorted { items[$0].name < items[$1].name }
        let query = table.orderedBatch(order.map { items[$0] }, tombstoneLifetime: options.tombstoneLifetime.seconds)
        let names = changes.map(\.name)
        // The bound grows with the batch, as Cashier's does: an eighth more for each change after the first.
        let bound = options.operationTimeout * (1 + Double(changes.count - 1) / 8)
        let stored = try await performWrite("\(changes.count) changes", within: bound) { [self, client] () -> [Bool] in
            state.withLockedValue { state in for name in names { state.beginOwnChange(of: name) } }
            var stored = [Bool](repeating: false, count: items.count)
            var unchanged: [String] = []
            // A deadlock with another instance's statement (PostgreSQL ends one of the two, which
            // changed nothing) is tried again at once, twice at most.
            for attempt in 1...3 {
                do {
                    let rows = try await client.query(query).decode((Int, Bool, Bool).self)
                    for try await (ordinal, isStored, isChanged) in rows {
                        guard (1...items.count).contains(ordinal) else { continue }
                        let index = order[ordinal - 1]
                        stored[index] = isStored
                        if !isChanged { unchanged.append(names[index]) }
                    }
                    break
                } catch let error as PSQLError where error.serverInfo?[.sqlState] == "40P01" && attempt < 3 {
                    logger.debug("a batch of \(items.count) changes met a deadlock; trying again")
                }
            }
            // Those that notified no one are heard now; the others once their notification comes back.
            state.withLockedValue { state in for name in unchanged { state.hearOwnChange(of: name) } }
            return stored
        }
        var outcomes: [SharedStoreOutcome] = []
        var bytes = 0
        for (change, isStored) in zip(changes, stored) {
            switch change {
            case .store(let record, _, _):
                outcomes.append(isStored ? .stored : .superseded)
                if isStored { bytes += record.bytes.count }
            case .removal:
                outcomes.append(.stored)
            }
        }
        requestSweepIfOverSize(adding: bytes)
        return outcomes
    }

    /// How many changes ``apply(_:)`` takes in one statement (``Options-swift.struct/maximumBatch``).
    public var maximumBatch: Int { max(1, options.maximumBatch) }

    /// Deletes every row of the key, whenever written, and its tombstone.
    public func removeRecords(named name: String) async throws {
        let notice = notification(for: .key(name))
        try await performWrite("a removal of \(name.debugDescription)") { [self, table, client] in
            try await sendingOwnChange(notice) {
                ((), try await client.rowCount(table.delete(named: name, notifying: notice)) > 0)
            }
        }
    }

    /// Always: a store lands only over older rows and after the key's last tombstone, and a
    /// removal deletes only older rows and leaves one.
    public var ordersChanges: Bool { true }

    /// Deletes the rows of the key written no later than `date`, and keeps `date` as its
    /// tombstone (unless a later one is there) for ``Options-swift.struct/tombstoneLifetime``.
    public func removeRecords(named name: String, writtenBefore date: Date) async throws {
        let notice = notification(for: .key(name))
        let lifetime = options.tombstoneLifetime.seconds
        try await performWrite("a removal of \(name.debugDescription)") { [self, table, client] in
            try await sendingOwnChange(notice) {
                let query = table.orderedDelete(
                    named: name, before: date, tombstoneLifetime: lifetime, notifying: notice)
                return ((), try await client.rowCount(query) > 0)
            }
        }
    }

    public func removeAllRecords() async throws {
        let notice = notification(for: .all)
        try await performWrite("a removal of every record") { [self, table, client] in
            try await sendingOwnChange(notice) {
                ((), try await client.rowCount(table.deleteAll(notifying: notice)) > 0)
            }
        }
    }

    public func changes() -> AsyncStream<SharedChange> {
        // Unbounded: a subscriber that fell behind and lost a key would serve a stale value.
        // Cashier's consumer only drops local copies, so it keeps up.
        let (stream, continuation) = AsyncStream.makeStream(of: SharedChange.self)
        let id = state.withLockedValue { state in
            state.nextSubscriber += 1
            state.subscribers[state.nextSubscriber] = continuation
            return state.nextSubscriber
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLockedValue { $0.subscribers.removeValue(forKey: id) }
        }
        return stream
    }

    // MARK: - Running

    /// Creates the table when missing (``prepare()``), listens for other instances' changes,
    /// sweeps the table every ``Options-swift.struct/sweepInterval`` and, for a tier that made
    /// its own pool, runs it; until the task is cancelled or the service group shuts down
    /// gracefully. Call it once.
    ///
    /// When it returns, the streams of ``changes()`` finish.
    public func run() async throws {
        let isFirstRun = state.withLockedValue { state in
            defer { state.hasRun = true }
            return !state.hasRun
        }
        precondition(isFirstRun, "PostgresSharedTier.run() is called once")
        defer { finishSubscribers() }
        await withTaskGroup(of: Void.self) { group in
            if ownsClient {
                group.addTask { await self.client.run() }
            }
            await cancelWhenGracefulShutdown {
                await withTaskGroup(of: Void.self) { work in
                    // The table now rather than at the first call: an instance whose reads all
                    // come from notifications makes its first call with a write, whose bound
                    // (Cashier's, 0.25 s by default) creating the table and its indexes, waiting
                    // for the other instances' writes, could exceed; the write then waited to be
                    // sent again until the next one got through. A failure here is tried again
                    // by the first call.
                    work.addTask { try? await self.prepare() }
                    work.addTask { await self.listen() }
                    work.addTask { await self.sweepWhenAsked() }
                    work.addTask { await self.askForSweeps() }
                }
            }
            // The pool closes once the tier no longer needs it.
            group.cancelAll()
        }
    }

    /// Creates the table and its indexes when missing. ``run()`` does so as it starts, and
    /// calls on first use; call this to find a missing privilege before either.
    public func prepare() async throws {
        try await perform("the creation of table \(options.tableName)") {}
    }

    /// Deletes the records written before their key's tombstone, expired records and
    /// tombstones, and, with a ``Options-swift.struct/sizeLimit``, the records stored longest
    /// ago beyond it, in statements of at most ``Options-swift.struct/sweepBatchSize`` rows.
    /// Returns how many rows it deleted.
    ///
    /// ``run()`` calls it periodically; several instances may sweep at once (each skips the rows
    /// another is deleting).
    @discardableResult
    public func sweep() async throws -> Int {
        var statements = [
            table.deleteShadowed(limit: options.sweepBatchSize), table.deleteExpired(limit: options.sweepBatchSize),
        ]
        if let sizeLimit = options.sizeLimit {
            statements.append(table.deleteBeyond(sizeLimit: sizeLimit, limit: options.sweepBatchSize))
        }
        var removed = 0
        for statement in statements {
            while true {
                let count = try await perform("a sweep of \(options.tableName)") { [client] in
                    var removed = 0
                    for try await count in try await client.query(statement).decode(Int.self) { removed = count }
                    return removed
                }
                removed += count
                if count < options.sweepBatchSize { break }
            }
        }
        state.withLockedValue { $0.bytesSinceSweep = 0 }
        try await sweepChangeLog()
        return removed
    }

    /// Deletes the rows of the change log older than ``Options-swift.struct/changeLogLifetime``:
    /// those before a mark this instance took at least that long ago (by the server's clock).
    /// A reconnection whose last mark is that old asks no log (it says `.all`), so no row it
    /// needs is gone.
    private func sweepChangeLog() async throws {
        let mark = try await perform("a sweep of \(options.tableName)'s change log") { [table, client] in
            var mark: ListeningMark?
            for try await (xmin, at) in try await client.query(table.logMark).decode((Int64, Date).self) {
                mark = ListeningMark(xmin: xmin, at: at)
            }
            return mark
        }
        guard let mark else { return }
        let lifetime = options.changeLogLifetime.seconds
        let cut = state.withLockedValue { state -> ListeningMark? in
            state.logMarks.append(mark)
            guard let last = state.logMarks.lastIndex(where: { mark.at.timeIntervalSince($0.at) >= lifetime }) else {
                return nil
            }
            defer { state.logMarks.removeFirst(last + 1) }
            return state.logMarks[last]
        }
        guard let cut else { return }
        while true {
            let count = try await perform("a sweep of \(options.tableName)'s change log") { [table, client, options] in
                var removed = 0
                let statement = table.deleteLogged(before: cut.xmin, limit: options.sweepBatchSize)
                for try await count in try await client.query(statement).decode(Int.self) { removed = count }
                return removed
            }
            if count < options.sweepBatchSize { break }
        }
    }

    // MARK: - Calls

    /// Runs `body` within ``Options-swift.struct/operationTimeout``, after creating the table if
    /// no call has yet; marks the server unreachable when it could not be reached.
    private func perform<T: Sendable>(
        _ operation: String, within bound: Duration? = nil, _ body: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        try throwIfUnreachable()
        do {
            return try await withDeadline(bound ?? options.operationTimeout, operation: operation) {
                try await self.createTableIfNeeded()
                return try await body()
            }
        } catch {
            if Self.isConnectionFailure(error) { markUnreachable() }
            throw error
        }
    }

    /// Runs a write or removal (`body`) as ``perform(_:_:)`` does, once every earlier one of this
    /// instance has ended.
    ///
    /// A call that timed out or was cancelled returns at once, but its statement, already on
    /// the wire, runs on to its end (postgres-nio does not cancel an answer): a removal sent
    /// next on another connection of the pool could commit first, and the write then bring the
    /// removed value back for every instance. The `SharedTier` contract forbids applying a
    /// change after the call returned; what this keeps is its point, the order: a later change
    /// starts only after the earlier one's statement has ended, and one whose call gave up
    /// before its turn is never sent.
    private func performWrite<T: Sendable>(
        _ operation: String, within bound: Duration? = nil, _ body: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        // The table first, within the bound, before the write's own task may run the statement;
        // once it exists, a check that costs no task and no timer.
        if state.withLockedValue({ $0.isTableReady }) {
            try throwIfUnreachable()
        } else {
            try await perform(operation) {}
        }
        let write = state.withLockedValue { state -> Task<T, any Error> in
            let previous = state.lastWrite
            let write = Task { () async throws -> T in
                await previous?.value
                try Task.checkCancellation()
                return try await body()
            }
            state.lastWrite = Task { _ = await write.result }
            return write
        }
        do {
            return try await withTaskCancellationHandler {
                try await perform(operation, within: bound) { try await write.value }
            } onCancel: {
                write.cancel()
            }
        } catch {
            write.cancel()
            throw error
        }
    }

    /// Throws ``PostgresSharedTierError/unreachable`` while PostgreSQL counts as unreachable
    /// (``Options-swift.struct/retryDelay`` after it could not be reached).
    private func throwIfUnreachable() throws {
        let now = ContinuousClock.now
        let isReachable = state.withLockedValue { state in
            guard let until = state.unreachableUntil, now < until else { return true }
            return false
        }
        guard isReachable else { throw PostgresSharedTierError.unreachable }
    }

    private func createTableIfNeeded() async throws {
        guard !state.withLockedValue({ $0.isTableReady }) else { return }
        for statement in table.creation {
            do {
                try await client.execute(statement)
            } catch let error as PSQLError where error.code == .server {
                // Another instance created it between `IF NOT EXISTS` and the insert into the
                // catalog (unique_violation 23505, duplicate_table 42P07, duplicate_object
                // 42710: `type "…" already exists`, the table's row type, or a trigger; or
                // duplicate_function 42723, the log's trigger function): it exists now.
                let code = error.serverInfo?[.sqlState]
                guard code == "23505" || code == "42P07" || code == "42710" || code == "42723" else { throw error }
            }
        }
        state.withLockedValue { $0.isTableReady = true }
    }

    /// Whether `error` says PostgreSQL could not be reached (rather than refused a statement).
    private static func isConnectionFailure(_ error: any Error) -> Bool {
        switch error {
        case PostgresSharedTierError.timedOut: true
        case let error as PSQLError: error.code != .server && error.code != .queryCancelled
        default: false
        }
    }

    private func markUnreachable() {
        let until = ContinuousClock.now.advanced(by: options.retryDelay)
        state.withLockedValue { $0.unreachableUntil = until }
    }

    private func requestSweepIfOverSize(adding count: Int) {
        guard let limit = options.sizeLimit else { return }
        let isDue = state.withLockedValue { state in
            state.bytesSinceSweep += count
            // A sweep per eighth of the limit written: the table exceeds it by that much at most
            // between sweeps, plus what other instances wrote.
            return state.bytesSinceSweep > max(limit / 8, 1)
        }
        if isDue { sweepRequester.yield() }
    }

    // MARK: - Background work

    private func askForSweeps() async {
        while (try? await Task.sleep(for: options.sweepInterval)) != nil {
            sweepRequester.yield()
        }
    }

    private func sweepWhenAsked() async {
        for await _ in sweepRequests {
            if Task.isCancelled { return }
            do {
                let removed = try await sweep()
                if removed > 0 { logger.debug("swept \(removed) records from \(options.tableName)") }
            } catch {
                logger.warning("sweep of \(options.tableName) failed: \(String(reflecting: error))")
            }
        }
    }

    /// Listens on the channel until cancelled, again after every lost connection. Each time it
    /// starts listening, it tells the streams already open what may have changed since they last
    /// heard: a stream asked for before the first `LISTEN` (a cache made before ``run()``
    /// started) was promised the changes from its start on (`.all`), and after a lost connection
    /// the log of changes says which keys changed in between (``resume(on:)``). A stream asked
    /// for while listening hears neither.
    ///
    /// While it listens it takes, every second, a mark of where it has heard to
    /// (``ListeningMark``), which holds once its own notification comes back: the next
    /// reconnection asks the log from the last mark that held.
    private func listen() async {
        while !Task.isCancelled {
            do {
                try await client.withConnection { connection in
                    self.logger.debug("listening on \(self.table.channel): a connection")
                    try await connection.listen(on: table.channel) { notifications in
                        self.logger.debug("listening on \(self.table.channel): LISTEN")
                        try await self.resume(on: connection)
                        defer { self.state.withLockedValue { $0.isListening = false } }
                        try await withThrowingTaskGroup(of: Void.self) { group in
                            group.addTask { await self.markHearing(on: connection) }
                            defer { group.cancelAll() }
                            for try await notification in notifications { self.receive(notification.payload) }
                        }
                    }
                }
            } catch {
                if Task.isCancelled { return }
                logger.info("listening on \(table.channel) stopped: \(String(reflecting: error))")
                if Self.isConnectionFailure(error) { markUnreachable() }
            }
            // A connection that closed without an error is lost all the same: listen again.
            guard (try? await Task.sleep(for: options.retryDelay)) != nil else { return }
        }
    }

    /// Once listening on `connection`: takes a first mark there, tells the open streams what may
    /// have changed since the last mark that held (``missedChanges(since:until:on:)``; `.all`
    /// when the log cannot be read), and counts as listening. The marks of the lost connection
    /// that had not held yet never will: the next reconnection asks from the last that did, until
    /// one of this connection's holds.
    private func resume(on connection: PostgresConnection) async throws {
        // The lost connection's marks that had not held never will.
        state.withLockedValue { $0.pendingMarks = [] }
        let mark = try await takeMark(on: connection)
        logger.debug("listening on \(table.channel): a mark")
        let previous = state.withLockedValue { $0.heardTo }
        let change: SharedChange
        do {
            change = try await withDeadline(options.operationTimeout, operation: "the log of \(table.channel)") {
                try await self.missedChanges(since: previous, until: mark, on: connection)
            }
        } catch {
            logger.info("the log of changes of \(options.tableName) could not be read: \(String(reflecting: error))")
            change = .all
        }
        switch change {
        case .reconnected(let names):
            logger.info("listening on \(table.channel) again; \(names.count) keys changed meanwhile")
        default: logger.info("listening on \(table.channel); any key may have changed")
        }
        // Before `isListening`: a stream asked for once that is set hears none of it.
        broadcast(change)
        state.withLockedValue { state in
            // After `.all`, every key counts as heard up to the first mark (when it holds).
            if case .all = change { state.heardTo = nil }
            state.unreachableUntil = nil
            state.isListening = true
        }
    }

    /// What may have changed between `previous` (the last mark that held) and `mark` (taken now):
    /// `.all` without a previous mark; when the log may no longer reach back to it
    /// (``Options-swift.struct/changeLogLifetime``, with a minute to spare for the server's
    /// clock, or a sweep of the log past it); when the server's transactions are behind it (a
    /// restored or another server: its log is not the one the mark was taken in); when it names
    /// more than ``Options-swift.struct/reconnectionKeyLimit`` keys; or when every record was
    /// removed meanwhile. Otherwise the keys it names.
    func missedChanges(
        since previous: ListeningMark?, until mark: ListeningMark, on connection: PostgresConnection
    ) async throws -> SharedChange {
        guard let previous, mark.xmin >= previous.xmin else { return .all }
        let lifetime = options.changeLogLifetime.seconds
        guard mark.at.timeIntervalSince(previous.at) + 60 < lifetime else { return .all }
        let limit = min(max(options.reconnectionKeyLimit, 0), Int(Int32.max))
        var names = Set<String>()
        let query = table.missedChanges(since: previous.xmin, limit: limit)
        for try await name in try await connection.query(query, logger: logger).decode(String?.self) {
            guard let name else { return .all }
            names.insert(name)
        }
        return names.count > limit ? .all : .reconnected(changed: names)
    }

    /// Takes a mark on `connection` every second until cancelled; a mark that fails is skipped
    /// (the last that held stands, which asks the log for more).
    private func markHearing(on connection: PostgresConnection) async {
        while (try? await Task.sleep(for: .seconds(1))) != nil {
            _ = try? await takeMark(on: connection)
        }
    }

    /// Takes a mark on `connection`, the listening one, pending until its notification comes
    /// back there (``receive(_:)``).
    private func takeMark(on connection: PostgresConnection) async throws -> ListeningMark {
        let sequence = state.withLockedValue { state in
            state.nextMark += 1
            return state.nextMark
        }
        // Bounded: a query on a connection the server closed mid-answer may never end, and the
        // listening task waits for this one before it listens again (the first run of the outage
        // under load showed an instance that never did).
        let notice = "\(ownMarkPrefix)\(sequence)"
        let mark = try await withDeadline(options.operationTimeout, operation: "a mark of \(table.channel)") {
            try await self.listeningMark(on: connection, notifying: notice)
        }
        state.withLockedValue { state in
            state.pendingMarks.append((sequence, mark))
            if state.pendingMarks.count > 64 { state.pendingMarks.removeFirst() }
        }
        return mark
    }

    /// A mark taken on `connection` (``Table/listeningMark(notifying:)``), notifying `notice`.
    func listeningMark(on connection: PostgresConnection, notifying notice: String) async throws -> ListeningMark {
        var mark: ListeningMark?
        let query = table.listeningMark(notifying: notice, instance: instanceID)
        for try await (xmin, at, _) in try await connection.query(query, logger: logger).decode(
            (Int64, Date, String?).self)
        {
            mark = ListeningMark(xmin: xmin, at: at)
        }
        guard let mark else { throw PostgresSharedTierError.unreachable }
        return mark
    }

    /// This instance's mark `sequence` came back on the listening connection: it holds
    /// (``Table/listeningMark(notifying:)``), and so do those taken before it.
    private func markHeld(_ sequence: Int) {
        state.withLockedValue { state in
            guard let index = state.pendingMarks.lastIndex(where: { $0.sequence == sequence }) else { return }
            state.heardTo = state.pendingMarks[index].mark
            state.pendingMarks.removeFirst(index + 1)
        }
    }

    /// Passes another instance's change on to the streams; counts this instance's own as heard.
    ///
    /// Another instance's store is passed on with its record only when no change of the key
    /// made here is unheard (``State/unheardOwnChanges``): notifications come in commit order,
    /// so until this instance hears its own change of the key, a store it hears of may be
    /// older than that change, and the record would serve a value the change replaced or
    /// removed. It goes on as the key's name then, and the next read asks the table.
    func receive(_ payload: String) {
        if payload.hasPrefix(ownMarkPrefix), let sequence = Int(payload.dropFirst(ownMarkPrefix.count)) {
            markHeld(sequence)
            return
        }
        guard let notice = Notice(payload: payload) else { return }
        let isOwn = notice.instance == instanceID.uuidString
        let change = state.withLockedValue { state -> SharedChange? in
            if isOwn {
                state.hearOwnChange(of: notice.change.name)
                return nil
            }
            guard case .stored(let slot, _) = notice.change, state.hasUnheardOwnChange(of: slot.name) else {
                return notice.change
            }
            return .key(slot.name)
        }
        if let change { broadcast(change) }
    }

    /// Runs `send`, which sends a change notifying `notice` (or another notice of the same key)
    /// and answers whether it did, as one of this instance's own changes: unheard from just
    /// before it is sent until its notification comes back, or until it answers that it
    /// notified no one. One that throws stays unheard until a notification of its key comes
    /// back: whether it committed is unknown.
    func sendingOwnChange<T>(
        _ notice: String, _ send: () async throws -> (T, notified: Bool)
    ) async throws -> T {
        let name = Notice(payload: notice)?.change.name
        state.withLockedValue { $0.beginOwnChange(of: name) }
        let (answer, notified) = try await send()
        if !notified { state.withLockedValue { $0.hearOwnChange(of: name) } }
        return answer
    }

    private func broadcast(_ change: SharedChange) {
        let subscribers = state.withLockedValue { Array($0.subscribers.values) }
        for subscriber in subscribers { subscriber.yield(change) }
    }

    private func finishSubscribers() {
        let subscribers = state.withLockedValue { state in
            defer { state.subscribers = [:] }
            return Array(state.subscribers.values)
        }
        for subscriber in subscribers { subscriber.finish() }
    }

    /// Where the listening connection last noted it had heard to; for tests.
    var heardTo: ListeningMark? { state.withLockedValue { $0.heardTo } }

    /// Whether the tier listens to its channel now; for tests, which wait for it before they
    /// expect to hear another instance.
    var isListening: Bool { state.withLockedValue { $0.isListening } }

    private func notification(for change: SharedChange) -> String {
        Notice(instance: instanceID.uuidString, change: change).payload
    }
}

extension Duration {
    /// The duration in seconds, for a bound `double precision`.
    fileprivate var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) * 1e-18
    }
}

extension PostgresClient {
    /// Runs `query` and reads its rows to the end, which returns the connection to the pool.
    fileprivate func execute(_ query: PostgresQuery) async throws {
        for try await _ in try await self.query(query) {}
    }

    /// Runs `query`, reads its rows to the end and answers how many there were.
    fileprivate func rowCount(_ query: PostgresQuery) async throws -> Int {
        var count = 0
        for try await _ in try await self.query(query) { count += 1 }
        return count
    }
}

extension SharedChange {
    /// The key's name; `nil` for every key.
    fileprivate var name: String? {
        switch self {
        case .key(let name): name
        case .stored(let slot, _): slot.name
        case .all, .reconnected: nil
        }
    }
}

extension PostgresSharedTier {
    /// A point in the server's history: the oldest transaction running then (`xmin`, by its
    /// 64-bit id: every transaction that commits later has an id at least this) and the
    /// server's time.
    struct ListeningMark: Sendable {
        var xmin: Int64
        var at: Date
    }
}

extension PostgresSharedTier {
    /// What the lock guards: every field is read and written with the lock held, never across
    /// an `await`.
    private struct State {
        var subscribers: [Int: AsyncStream<SharedChange>.Continuation] = [:]
        var nextSubscriber = 0
        var isTableReady = false
        var hasRun = false
        /// Until when calls throw ``PostgresSharedTierError/unreachable`` without trying.
        var unreachableUntil: ContinuousClock.Instant?
        /// Bytes stored by this instance since its last sweep.
        var bytesSinceSweep = 0
        /// Whether the channel is listened to now (tests wait for it).
        var isListening = false
        /// The last mark that held (``ListeningMark``): a reconnection asks the change log what
        /// committed from there on. `nil` until the first holds, and after a `.all`.
        var heardTo: ListeningMark?
        /// Marks taken on the listening connection whose notification has not come back yet,
        /// oldest first (64 at most), and the sequence number of the last taken.
        var pendingMarks: [(sequence: Int, mark: ListeningMark)] = []
        var nextMark = 0
        /// Marks taken by this instance's sweeps, oldest first: the log's rows before the newest
        /// one at least ``Options-swift.struct/changeLogLifetime`` old go.
        var logMarks: [ListeningMark] = []
        /// Ends when the last write or removal started has ended (``performWrite(_:_:)``).
        var lastWrite: Task<Void, Never>?
        /// This instance's changes of each key sent and whose notification has not come back
        /// yet (``receive(_:)``); `unheardOwnRemovalsOfAll`, of every key. Bounded by the keys
        /// with a change in flight, and those whose change threw after it may have committed or
        /// was sent before the channel was listened to (never heard back): at most
        /// ``maximumUnheard`` keys, past which every store heard goes on as its key's name.
        var unheardOwnChanges: [String: Int] = [:]
        var unheardOwnRemovalsOfAll = 0
        var unheardOverflowed = false
        static let maximumUnheard = 4096

        mutating func beginOwnChange(of name: String?) {
            guard let name else {
                unheardOwnRemovalsOfAll += 1
                return
            }
            guard !unheardOverflowed else { return }
            if unheardOwnChanges[name] == nil, unheardOwnChanges.count >= Self.maximumUnheard {
                unheardOverflowed = true
                unheardOwnChanges = [:]
                return
            }
            unheardOwnChanges[name, default: 0] += 1
        }

        mutating func hearOwnChange(of name: String?) {
            guard let name else {
                unheardOwnRemovalsOfAll = max(0, unheardOwnRemovalsOfAll - 1)
                return
            }
            if let count = unheardOwnChanges[name], count > 1 {
                unheardOwnChanges[name] = count - 1
            } else {
                unheardOwnChanges[name] = nil
            }
        }

        func hasUnheardOwnChange(of name: String) -> Bool {
            unheardOverflowed || unheardOwnRemovalsOfAll > 0 || unheardOwnChanges[name] != nil
        }
    }
}
