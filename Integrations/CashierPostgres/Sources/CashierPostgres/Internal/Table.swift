import Cashier
import Foundation
import PostgresNIO

/// The SQL of the tier, every statement in one place: the table, its indexes, and what each call
/// runs. Values are bound, never spliced; the table's name is spliced, checked by
/// ``isValidName(_:)`` and quoted.
struct Table: Sendable {
    let name: String
    let channel: String
    /// ``PostgresSharedTier/Options/durableCommits``: the statements that change what other
    /// instances read commit once PostgreSQL has written them to its log, whatever
    /// `synchronous_commit` says.
    var durableCommits = true

    /// Letters, digits and `_`, not starting with a digit; 48 characters leave room for the
    /// suffixes of index names within PostgreSQL's 63.
    static func isValidName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, name.unicodeScalars.count <= 48 else { return false }
        func isLetter(_ scalar: Unicode.Scalar) -> Bool {
            ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || scalar == "_"
        }
        return isLetter(first) && name.unicodeScalars.allSatisfy { isLetter($0) || ("0"..."9").contains($0) }
    }

    private var quoted: String { "\"\(name)\"" }

    /// The log of changes (``changeLog``), quoted.
    private var quotedLog: String { "\"\(name)_changes\"" }

    /// With ``durableCommits``, a `WITH` item that raises `synchronous_commit` from `off` to
    /// `local` for the statement's own transaction (`set_config`'s third argument: as `SET LOCAL`),
    /// so that its commit waits for the log to be written; any other setting (`local`, `on`,
    /// `remote_write`, `remote_apply`) is already at least that, and is kept. A statement names it
    /// in its last `FROM` (``durableJoin``): PostgreSQL evaluates the item, which a volatile call
    /// keeps from being inlined away, as it joins it, whenever the statement answers a row, which is
    /// whenever it changed one; a statement that changed nothing needs no durable commit.
    private var durableItem: String {
        guard durableCommits else { return "" }
        return "durable AS (SELECT CASE WHEN current_setting('synchronous_commit') = 'off' "
            + "THEN set_config('synchronous_commit', 'local', true) END), "
    }

    /// What a statement's last `FROM` adds to join ``durableItem``.
    private var durableJoin: String { durableCommits ? ", durable" : "" }

    /// The `FROM` of a statement that has none otherwise, to join ``durableItem``.
    private var durableFrom: String { durableCommits ? " FROM durable" : "" }

    /// The version of a key's *tombstone*: the row that keeps the time of the key's latest
    /// removal (an ordered removal, or a store removing the other versions), so that a store
    /// written before it and arriving later is refused and rows written before it are not read.
    /// Cashier's slots are `schema-N` or `app-…`: none is this.
    static let tombstoneVersion = "*removed"

    /// `size` is the length of `bytes`, kept so the size bound sums integers, not values.
    /// `written_at` is the record's ``SharedRecord/writtenAt`` (a tombstone's: its removal's);
    /// a table made by a version without it gains it, `-infinity` in its rows, so any store
    /// written by this version lands over them.
    var creation: [PostgresQuery] {
        [
            """
            CREATE TABLE IF NOT EXISTS \(unescaped: quoted) (
                name text NOT NULL,
                version text NOT NULL,
                bytes bytea NOT NULL,
                size integer NOT NULL,
                expires_at timestamptz,
                updated_at timestamptz NOT NULL DEFAULT now(),
                written_at timestamptz NOT NULL DEFAULT '-infinity',
                PRIMARY KEY (name, version)
            )
            """,
            // Checked before altering: ALTER TABLE locks the table whole, even when it would
            // add nothing, and every instance runs this at its start.
            """
            DO $$ BEGIN
                IF NOT EXISTS (
                    SELECT 1 FROM pg_attribute WHERE attrelid = \(unescaped: "'\(quoted)'")::regclass
                    AND attname = 'written_at' AND NOT attisdropped
                ) THEN
                    ALTER TABLE \(unescaped: quoted)
                        ADD COLUMN IF NOT EXISTS written_at timestamptz NOT NULL DEFAULT '-infinity';
                END IF;
            END $$
            """,
            """
            CREATE INDEX IF NOT EXISTS \(unescaped: "\"\(name)_expires_at\"")
                ON \(unescaped: quoted) (expires_at) WHERE expires_at IS NOT NULL
            """,
            """
            CREATE INDEX IF NOT EXISTS \(unescaped: "\"\(name)_updated_at\"") ON \(unescaped: quoted) (updated_at)
            """,
            // The log of changes (``missedChanges(since:limit:)``): a row per row of the table a
            // statement changed, with its transaction's id (`name` NULL: every key), written by a
            // trigger, so that every writer logs, whatever its build (or a hand-written
            // statement). `xid8` and `pg_current_xact_id()`: PostgreSQL 13 or later.
            """
            CREATE TABLE IF NOT EXISTS \(unescaped: quotedLog) (xid xid8 NOT NULL, name text)
            """,
            """
            CREATE INDEX IF NOT EXISTS \(unescaped: "\"\(name)_changes_xid\"") ON \(unescaped: quotedLog) (xid)
            """,
            // How far sweeps have deleted the log: a reconnection from before it says `.all`.
            """
            CREATE TABLE IF NOT EXISTS \(unescaped: quotedCut) (cut xid8 NOT NULL)
            """,
            // Checked before creating, as the column above: every instance runs this at its start.
            // The statements of the tier that need no log (sweeps, a removal of every record, which
            // logs NULL itself) say so for their own transaction (``unloggedItem``).
            """
            DO $outer$ BEGIN
                IF NOT EXISTS (
                    SELECT 1 FROM pg_proc WHERE proname = \(unescaped: "'\(name)_log_change'")
                    AND pronamespace = current_schema()::regnamespace
                ) THEN
                    CREATE FUNCTION \(unescaped: "\"\(name)_log_change\"")() RETURNS trigger LANGUAGE plpgsql AS $body$
                    BEGIN
                        IF current_setting('cashier.unlogged', true) = 'on' THEN RETURN NULL; END IF;
                        IF TG_OP = 'TRUNCATE' THEN
                            INSERT INTO \(unescaped: quotedLog) (xid, name) VALUES (pg_current_xact_id(), NULL);
                        ELSIF TG_OP = 'DELETE' THEN
                            INSERT INTO \(unescaped: quotedLog) (xid, name) VALUES (pg_current_xact_id(), OLD.name);
                        ELSE
                            INSERT INTO \(unescaped: quotedLog) (xid, name) VALUES (pg_current_xact_id(), NEW.name);
                        END IF;
                        RETURN NULL;
                    END $body$;
                END IF;
            END $outer$
            """,
            """
            DO $$ BEGIN
                IF NOT EXISTS (
                    SELECT 1 FROM pg_trigger WHERE tgrelid = \(unescaped: "'\(quoted)'")::regclass
                    AND tgname = \(unescaped: "'\(name)_logged'")
                ) THEN
                    CREATE TRIGGER \(unescaped: "\"\(name)_logged\"") AFTER INSERT OR UPDATE OR DELETE
                        ON \(unescaped: quoted) FOR EACH ROW EXECUTE FUNCTION \(unescaped: "\"\(name)_log_change\"")();
                    CREATE TRIGGER \(unescaped: "\"\(name)_logged_t\"") AFTER TRUNCATE
                        ON \(unescaped: quoted) FOR EACH STATEMENT EXECUTE FUNCTION \(unescaped: "\"\(name)_log_change\"")();
                END IF;
            END $$
            """,
        ]
    }

    /// The table of sweeps' cuts of the log, quoted.
    private var quotedCut: String { "\"\(name)_changes_cut\"" }

    /// A `WITH` item that keeps the log's trigger from logging the rows the statement changes,
    /// for its own transaction (as `SET LOCAL`); the statement joins `unlogged` in its last
    /// `FROM`, which makes PostgreSQL evaluate it, before the triggers fire at its end.
    private var unloggedItem: String {
        "unlogged AS (SELECT set_config('cashier.unlogged', 'on', true))"
    }

    /// The record in `slot`, unless it expired (by the server's clock, which the sweep uses too)
    /// or was written before the key's tombstone (a store that ran beside a newer removal).
    func select(_ slot: SharedSlot) -> PostgresQuery {
        """
        SELECT r.bytes, r.expires_at, r.written_at FROM \(unescaped: quoted) AS r
        WHERE r.name = \(slot.name) AND r.version = \(slot.version) AND (r.expires_at IS NULL OR r.expires_at > now())
            AND NOT EXISTS (
                SELECT 1 FROM \(unescaped: quoted) AS d
                WHERE d.name = \(slot.name) AND d.version = \(Self.tombstoneVersion) AND d.written_at > r.written_at
            )
        """
    }

    /// Stores `record` in `slot` unless the slot holds a record written later or the key's
    /// tombstone is later. Notifies in the same statement, only when the row changed: the
    /// notification goes out when the change commits, never before it, never without it. The
    /// notice may carry `record` (``Notice``): it is then what the slot holds.
    ///
    /// Answers one row, `1`, when it stored; none when it did not.
    func orderedUpsert(_ record: SharedRecord, in slot: SharedSlot, notifying notice: String) throws -> PostgresQuery {
        try """
        WITH \(unescaped: durableItem)written AS (
            INSERT INTO \(unescaped: quoted) AS t (name, version, bytes, size, expires_at, updated_at, written_at)
            SELECT \(slot.name), \(slot.version), \(record.bytes), \(record.bytes.count), \(record.expiresAt), now(),
                \(record.writtenAt)
            WHERE NOT EXISTS (
                SELECT 1 FROM \(unescaped: quoted)
                WHERE name = \(slot.name) AND version = \(Self.tombstoneVersion) AND written_at > \(record.writtenAt)
            )
            ON CONFLICT (name, version) DO UPDATE SET bytes = excluded.bytes, size = excluded.size,
                expires_at = excluded.expires_at, updated_at = excluded.updated_at, written_at = excluded.written_at
            WHERE t.written_at <= excluded.written_at
            RETURNING 1
        )
        SELECT 1::bigint, pg_notify(\(channel), \(notice)) FROM written\(unescaped: durableJoin)
        """
    }

    /// ``orderedUpsert(_:in:notifying:)``, and an ordered removal of the key's other versions
    /// at the record's time (``orderedDelete(named:before:tombstoneLifetime:notifying:)``),
    /// whether the store lands or not: those records are older than the write all the same.
    /// One notification when anything changed: `notice` (which may carry `record`) when the
    /// record was stored, `keyNotice` (the key's name only) when only the other versions'
    /// records or the tombstone changed.
    ///
    /// Answers one row, the number of records stored (1 or 0), when something changed; none
    /// when nothing did.
    func orderedUpsertRemovingOthers(
        _ record: SharedRecord, in slot: SharedSlot, tombstoneLifetime: Double, notifying notice: String,
        orElse keyNotice: String
    ) throws -> PostgresQuery {
        try """
        WITH \(unescaped: durableItem)tomb AS (
            INSERT INTO \(unescaped: quoted) AS t (name, version, bytes, size, expires_at, updated_at, written_at)
            VALUES (\(slot.name), \(Self.tombstoneVersion), ''::bytea, 0,
                now() + make_interval(secs => \(tombstoneLifetime)), now(), \(record.writtenAt))
            ON CONFLICT (name, version) DO UPDATE SET written_at = excluded.written_at,
                expires_at = excluded.expires_at, updated_at = excluded.updated_at
            WHERE t.written_at < excluded.written_at
            RETURNING 1
        ), removed AS (
            DELETE FROM \(unescaped: quoted)
            WHERE name = \(slot.name) AND version <> \(Self.tombstoneVersion) AND version <> \(slot.version)
                AND written_at <= \(record.writtenAt)
            RETURNING 1
        ), written AS (
            INSERT INTO \(unescaped: quoted) AS t (name, version, bytes, size, expires_at, updated_at, written_at)
            SELECT \(slot.name), \(slot.version), \(record.bytes), \(record.bytes.count), \(record.expiresAt), now(),
                \(record.writtenAt)
            WHERE NOT EXISTS (
                SELECT 1 FROM \(unescaped: quoted)
                WHERE name = \(slot.name) AND version = \(Self.tombstoneVersion) AND written_at > \(record.writtenAt)
            )
            ON CONFLICT (name, version) DO UPDATE SET bytes = excluded.bytes, size = excluded.size,
                expires_at = excluded.expires_at, updated_at = excluded.updated_at, written_at = excluded.written_at
            WHERE t.written_at <= excluded.written_at
            RETURNING 1
        ), changed AS (
            SELECT 1 FROM written UNION ALL SELECT 1 FROM tomb UNION ALL SELECT 1 FROM removed
        )
        SELECT (SELECT count(*) FROM written)::bigint,
            pg_notify(\(channel), CASE WHEN EXISTS (SELECT 1 FROM written) THEN \(notice) ELSE \(keyNotice) END)
        FROM (SELECT 1 FROM changed LIMIT 1) AS one\(unescaped: durableJoin)
        """
    }

    /// Deletes the records of `name` written no later than `date` and moves its tombstone to
    /// `date` unless it is later already (the tombstone expires after `tombstoneLifetime`
    /// seconds); notifies when either changed a row.
    func orderedDelete(
        named name: String, before date: Date, tombstoneLifetime: Double, notifying notice: String
    ) -> PostgresQuery {
        """
        WITH \(unescaped: durableItem)tomb AS (
            INSERT INTO \(unescaped: quoted) AS t (name, version, bytes, size, expires_at, updated_at, written_at)
            VALUES (\(name), \(Self.tombstoneVersion), ''::bytea, 0,
                now() + make_interval(secs => \(tombstoneLifetime)), now(), \(date))
            ON CONFLICT (name, version) DO UPDATE SET written_at = excluded.written_at,
                expires_at = excluded.expires_at, updated_at = excluded.updated_at
            WHERE t.written_at < excluded.written_at
            RETURNING 1
        ), removed AS (
            DELETE FROM \(unescaped: quoted)
            WHERE name = \(name) AND version <> \(Self.tombstoneVersion) AND written_at <= \(date)
            RETURNING 1
        ), changed AS (SELECT 1 FROM tomb UNION ALL SELECT 1 FROM removed)
        SELECT pg_notify(\(channel), \(notice)) FROM (SELECT 1 FROM changed LIMIT 1) AS one\(unescaped: durableJoin)
        """
    }

    /// One ``SharedTierChange`` of a batch, as ``orderedBatch(_:tombstoneLifetime:)`` takes it.
    struct BatchItem {
        var name: String
        /// The slot's version; empty for a removal.
        var version: String
        var bytes: ByteBuffer
        /// 0: a store; 1: a store removing the other versions; 2: a removal.
        var kind: Int
        var expiresAt: Date?
        var writtenAt: Date
        /// Notified when the store landed (it may carry the record).
        var notice: String
        /// Notified when only a removal of other versions or a tombstone changed, or for a removal.
        var keyNotice: String
    }

    /// Applies `items` (of distinct keys) as ``orderedUpsert(_:in:notifying:)``,
    /// ``orderedUpsertRemovingOthers(_:in:tombstoneLifetime:notifying:orElse:)`` and
    /// ``orderedDelete(named:before:tombstoneLifetime:notifying:)`` would one after another, in
    /// one statement: one round trip and one commit for all. Each key that changed is notified
    /// once (its `notice` when its record was stored, its `keyNotice` otherwise).
    ///
    /// Answers a row per item, in order: whether its record was stored, and whether anything of
    /// its key changed. Pass the items sorted by name, so that two statements lock the rows of
    /// the keys they share in one order (each insert takes its rows in that order).
    func orderedBatch(_ items: [BatchItem], tombstoneLifetime: Double) -> PostgresQuery {
        let names = items.map(\.name)
        let versions = items.map(\.version)
        let bytes = items.map(\.bytes)
        let kinds = items.map(\.kind)
        let expires = items.map { $0.expiresAt ?? Date(timeIntervalSince1970: 0) }
        let expiring = items.map { $0.expiresAt != nil }
        let written = items.map(\.writtenAt)
        let notices = items.map(\.notice)
        let keyNotices = items.map(\.keyNotice)
        return """
            WITH \(unescaped: durableItem)input AS (
                SELECT * FROM unnest(\(names)::text[], \(versions)::text[], \(bytes)::bytea[], \(kinds)::int8[],
                    \(expires)::timestamptz[], \(expiring)::bool[], \(written)::timestamptz[], \(notices)::text[],
                    \(keyNotices)::text[])
                    WITH ORDINALITY AS i(name, version, bytes, kind, expires_at, expiring, written_at, notice, key_notice, ord)
            ), tomb AS (
                INSERT INTO \(unescaped: quoted) AS t (name, version, bytes, size, expires_at, updated_at, written_at)
                SELECT name, \(Self.tombstoneVersion), ''::bytea, 0, now() + make_interval(secs => \(tombstoneLifetime)),
                    now(), written_at
                FROM input WHERE kind >= 1 ORDER BY name
                ON CONFLICT (name, version) DO UPDATE SET written_at = excluded.written_at,
                    expires_at = excluded.expires_at, updated_at = excluded.updated_at
                WHERE t.written_at < excluded.written_at
                RETURNING t.name
            ), removed AS (
                DELETE FROM \(unescaped: quoted) AS t USING input AS i
                WHERE t.name = i.name AND i.kind >= 1 AND t.version <> \(Self.tombstoneVersion)
                    AND (i.kind = 2 OR t.version <> i.version) AND t.written_at <= i.written_at
                RETURNING t.name
            ), written AS (
                INSERT INTO \(unescaped: quoted) AS t (name, version, bytes, size, expires_at, updated_at, written_at)
                SELECT i.name, i.version, i.bytes, length(i.bytes), CASE WHEN i.expiring THEN i.expires_at END, now(),
                    i.written_at
                FROM input AS i
                WHERE i.kind <= 1 AND NOT EXISTS (
                    SELECT 1 FROM \(unescaped: quoted) AS d
                    WHERE d.name = i.name AND d.version = \(Self.tombstoneVersion) AND d.written_at > i.written_at
                )
                ORDER BY i.name
                ON CONFLICT (name, version) DO UPDATE SET bytes = excluded.bytes, size = excluded.size,
                    expires_at = excluded.expires_at, updated_at = excluded.updated_at, written_at = excluded.written_at
                WHERE t.written_at <= excluded.written_at
                RETURNING t.name
            ), changed AS (
                SELECT name FROM tomb UNION SELECT name FROM removed UNION SELECT name FROM written
            )
            SELECT i.ord, w.name IS NOT NULL, c.name IS NOT NULL,
                CASE WHEN c.name IS NOT NULL
                    THEN pg_notify(\(channel), CASE WHEN w.name IS NOT NULL THEN i.notice ELSE i.key_notice END)
                END
            FROM input AS i
                LEFT JOIN (SELECT DISTINCT name FROM written) AS w ON w.name = i.name
                LEFT JOIN changed AS c ON c.name = i.name\(unescaped: durableJoin)
            ORDER BY i.ord
            """
    }

    /// Deletes every row of `name`, its tombstone included, whenever written.
    func delete(named name: String, notifying notice: String) -> PostgresQuery {
        """
        WITH \(unescaped: durableItem)removed AS (DELETE FROM \(unescaped: quoted) WHERE name = \(name) RETURNING 1)
        SELECT pg_notify(\(channel), \(notice))\(unescaped: durableFrom)
        """
    }

    func deleteAll(notifying notice: String) -> PostgresQuery {
        """
        WITH \(unescaped: durableItem)\(unescaped: unloggedItem), removed AS (DELETE FROM \(unescaped: quoted) RETURNING 1),
        logged AS (INSERT INTO \(unescaped: quotedLog) (xid, name) VALUES (pg_current_xact_id(), NULL))
        SELECT pg_notify(\(channel), \(notice)) FROM unlogged\(unescaped: durableJoin)
        """
    }

    /// Deletes up to `limit` rows written before their key's tombstone (stores that ran beside
    /// a newer removal; reads skip them already); answers how many. Before the tombstones
    /// expire: a row outliving its tombstone would be read again.
    func deleteShadowed(limit: Int) -> PostgresQuery {
        """
        WITH \(unescaped: unloggedItem), removed AS (
            DELETE FROM \(unescaped: quoted) WHERE (name, version) IN (
                SELECT r.name, r.version FROM \(unescaped: quoted) AS r
                JOIN \(unescaped: quoted) AS d ON d.name = r.name AND d.version = \(Self.tombstoneVersion)
                WHERE r.version <> \(Self.tombstoneVersion) AND r.written_at < d.written_at
                LIMIT \(limit) FOR UPDATE OF r SKIP LOCKED
            )
            RETURNING 1
        )
        SELECT count(*)::bigint FROM removed, unlogged
        """
    }

    /// Deletes up to `limit` expired rows; answers how many. Rows another sweep holds are
    /// skipped, not waited for. No notification: every instance judges expiry from the record.
    func deleteExpired(limit: Int) -> PostgresQuery {
        """
        WITH \(unescaped: unloggedItem), removed AS (
            DELETE FROM \(unescaped: quoted) WHERE (name, version) IN (
                SELECT name, version FROM \(unescaped: quoted) WHERE expires_at < now()
                LIMIT \(limit) FOR UPDATE SKIP LOCKED
            )
            RETURNING 1
        )
        SELECT count(*)::bigint FROM removed, unlogged
        """
    }

    /// Deletes up to `limit` of the rows that lie beyond `sizeLimit` bytes when rows are counted
    /// from the newest write; answers how many. No notification: a record evicted here is still
    /// right where another instance keeps a copy.
    func deleteBeyond(sizeLimit: Int, limit: Int) -> PostgresQuery {
        """
        WITH \(unescaped: unloggedItem), ranked AS (
            SELECT name, version,
                sum(size) OVER (ORDER BY updated_at DESC, name DESC, version DESC) AS kept
            FROM \(unescaped: quoted) WHERE version <> \(Self.tombstoneVersion)
        ), removed AS (
            DELETE FROM \(unescaped: quoted) WHERE (name, version) IN (
                SELECT name, version FROM ranked WHERE kept > \(sizeLimit) LIMIT \(limit)
            )
            RETURNING 1
        )
        SELECT count(*)::bigint FROM removed, unlogged
        """
    }
}

extension Table {
    /// A mark of where the listening connection has heard to: the oldest transaction still
    /// running (every transaction that commits later has an id at least this) and the server's
    /// time; and a notification of `notice` on the channel, in the same transaction.
    ///
    /// The mark holds only once the listening connection hears `notice`: notifications come in
    /// the order their transactions committed, so by then it has heard every change committed
    /// before the mark's snapshot (earlier in the queue), and every change committing after it
    /// has an id no lower than the mark's (the log has it from there).
    ///
    /// The comment names the channel and the instance, so a test can tell the listening
    /// connection's backend (`pg_stat_activity.query`).
    func listeningMark(notifying notice: String, instance: UUID) -> PostgresQuery {
        """
        SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint, now(), pg_notify(\(channel), \(notice))
        \(unescaped: "/* cashier listening on \(channel) as \(instance.uuidString) */")
        """
    }

    /// The server's time and the oldest transaction running, for the sweep of the change log.
    var logMark: PostgresQuery {
        "SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint, now()"
    }

    /// The names the change log holds for transactions from `xmin` on (a listening mark's), at
    /// most `limit` + 1 of them; `NULL` for a removal of every key, and when a sweep deleted
    /// rows of the log from `xmin` on (it cannot tell).
    func missedChanges(since xmin: Int64, limit: Int) -> PostgresQuery {
        """
        (SELECT DISTINCT name FROM \(unescaped: quotedLog) WHERE xid >= \(xmin)::text::xid8
            LIMIT \(min(max(limit, 0), Int(Int32.max)) + 1))
        UNION ALL (SELECT NULL::text FROM \(unescaped: quotedCut) WHERE cut > \(xmin)::text::xid8 LIMIT 1)
        """
    }

    /// Notes that the log is cut at `xmin` (a mark at least as old as the log's lifetime), then
    /// deletes up to `limit` rows of the log of transactions before it; answers how many. The
    /// note first, in the same transaction: a reconnection from before the cut says `.all`.
    func deleteLogged(before xmin: Int64, limit: Int) -> PostgresQuery {
        """
        WITH noted AS (
            INSERT INTO \(unescaped: quotedCut) (cut)
            SELECT \(xmin)::text::xid8 WHERE NOT EXISTS (
                SELECT 1 FROM \(unescaped: quotedCut) WHERE cut >= \(xmin)::text::xid8
            )
        ), pruned AS (
            DELETE FROM \(unescaped: quotedCut) WHERE cut < \(xmin)::text::xid8
        ), removed AS (
            DELETE FROM \(unescaped: quotedLog) WHERE ctid IN (
                SELECT ctid FROM \(unescaped: quotedLog) WHERE xid < \(xmin)::text::xid8 LIMIT \(limit)
            )
            RETURNING 1
        )
        SELECT count(*)::bigint FROM removed
        """
    }
}

/// A notification's payload: the id of the instance that made the change, a space, then `k` and
/// the key's name; `*` for every key; or, for a store, `r` and the record stored:
/// `r<writtenAt> <expiresAt or -> <version length> <name length> <version><name><bytes in base64>`
/// (times in seconds since 1970, lengths in UTF-8 bytes).
///
/// A package of an earlier version ignores an `r` payload it cannot read: every instance of a
/// fleet must run a version that sends and reads them before one sends them (see README).
struct Notice: Sendable {
    let instance: String
    let change: SharedChange

    /// PostgreSQL refuses payloads of 8000 bytes or more: a store whose record does not fit
    /// goes out as its key's name, and a longer name as `*`.
    private static let maximumPayload = 7_999

    init(instance: String, change: SharedChange) {
        self.instance = instance
        self.change = change
    }

    init?(payload: String) {
        guard let space = payload.firstIndex(of: " ") else { return nil }
        instance = String(payload[..<space])
        let rest = payload[payload.index(after: space)...]
        if rest == "*" {
            change = .all
        } else if rest.first == "k" {
            change = .key(String(rest.dropFirst()))
        } else if rest.first == "r" {
            // A store this version cannot read whole (damaged, or a later version's format) is a
            // change all the same: of its key if the name reads, else of every key.
            change = Self.stored(rest.dropFirst()) ?? .all
        } else {
            return nil
        }
    }

    var payload: String {
        switch change {
        case .key(let name):
            let payload = "\(instance) k\(name)"
            if payload.utf8.count <= Self.maximumPayload { return payload }
        case .stored(let slot, let record):
            let expiresAt = record.expiresAt.map { "\($0.timeIntervalSince1970)" } ?? "-"
            let payload =
                "\(instance) r\(record.writtenAt.timeIntervalSince1970) \(expiresAt) \(slot.version.utf8.count) "
                + "\(slot.name.utf8.count) \(slot.version)\(slot.name)\(record.bytes.base64EncodedString())"
            if payload.utf8.count <= Self.maximumPayload { return payload }
            return Notice(instance: instance, change: .key(slot.name)).payload
        case .all, .reconnected:
            break
        }
        return "\(instance) *"
    }

    /// The change an `r` payload (after the `r`) describes: the store, or the key's name alone
    /// when only that reads; `nil` when not even the name does. Any lengths (a notification may
    /// come from anyone allowed to connect): nothing overflows.
    private static func stored(_ text: Substring) -> SharedChange? {
        let fields = text.split(separator: " ", maxSplits: 4, omittingEmptySubsequences: false)
        guard fields.count == 5, let versionLength = Int(fields[2]), let nameLength = Int(fields[3]),
            versionLength >= 0, nameLength >= 0
        else { return nil }
        let tail = fields[4].utf8
        guard versionLength <= tail.count, nameLength <= tail.count - versionLength else { return nil }
        let nameStart = tail.index(tail.startIndex, offsetBy: versionLength)
        let bytesStart = tail.index(nameStart, offsetBy: nameLength)
        guard let version = String(tail[tail.startIndex..<nameStart]), let name = String(tail[nameStart..<bytesStart])
        else { return nil }
        let expiresAt: Date??
        if fields[1] == "-" {
            expiresAt = .some(nil)
        } else {
            expiresAt = Double(fields[1]).map { Date(timeIntervalSince1970: $0) }
        }
        guard let writtenAt = Double(fields[0]), let expiresAt, let base64 = String(tail[bytesStart...]),
            let bytes = Data(base64Encoded: base64)
        else { return .key(name) }
        return .stored(
            SharedSlot(name: name, version: version),
            SharedRecord(bytes: bytes, expiresAt: expiresAt, writtenAt: Date(timeIntervalSince1970: writtenAt)))
    }
}
