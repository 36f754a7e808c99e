import Cashier
import Foundation
import PostgresNIO

/// The SQL of the tier, every statement in one place: the table, its indexes, and what each call
/// runs. Values are bound, never spliced; the table's name is spliced, checked by
/// ``isValidName(_:)`` and quoted.
struct Table: Sendable {
    let name: String
    let channel: String

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

    /// `size` is the length of `bytes`, kept so the size bound sums integers, not values.
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
                PRIMARY KEY (name, version)
            )
            """,
            """
            CREATE INDEX IF NOT EXISTS \(unescaped: "\"\(name)_expires_at\"")
                ON \(unescaped: quoted) (expires_at) WHERE expires_at IS NOT NULL
            """,
            """
            CREATE INDEX IF NOT EXISTS \(unescaped: "\"\(name)_updated_at\"") ON \(unescaped: quoted) (updated_at)
            """,
        ]
    }

    /// The record in `slot`, unless it expired (by the server's clock, which the sweep uses too).
    func select(_ slot: SharedSlot) -> PostgresQuery {
        """
        SELECT bytes, expires_at FROM \(unescaped: quoted)
        WHERE name = \(slot.name) AND version = \(slot.version) AND (expires_at IS NULL OR expires_at > now())
        """
    }

    /// Writes the row and notifies in one statement: the notification goes out when the write
    /// commits, never before it, and never without it.
    func upsert(_ record: SharedRecord, in slot: SharedSlot, notifying notice: String) throws -> PostgresQuery {
        try """
        WITH written AS (
            INSERT INTO \(unescaped: quoted) (name, version, bytes, size, expires_at, updated_at)
            VALUES (\(slot.name), \(slot.version), \(record.bytes), \(record.bytes.count), \(record.expiresAt), now())
            ON CONFLICT (name, version) DO UPDATE SET bytes = excluded.bytes, size = excluded.size,
                expires_at = excluded.expires_at, updated_at = excluded.updated_at
            RETURNING 1
        )
        SELECT pg_notify(\(channel), \(notice))
        """
    }

    /// ``upsert(_:in:notifying:)``, deleting the name's rows of other versions in the same
    /// statement: no reader finds the key missing in between, and one notification goes out.
    func upsertRemovingOtherVersions(
        _ record: SharedRecord, in slot: SharedSlot, notifying notice: String
    ) throws -> PostgresQuery {
        try """
        WITH removed AS (
            DELETE FROM \(unescaped: quoted) WHERE name = \(slot.name) AND version <> \(slot.version) RETURNING 1
        ), written AS (
            INSERT INTO \(unescaped: quoted) (name, version, bytes, size, expires_at, updated_at)
            VALUES (\(slot.name), \(slot.version), \(record.bytes), \(record.bytes.count), \(record.expiresAt), now())
            ON CONFLICT (name, version) DO UPDATE SET bytes = excluded.bytes, size = excluded.size,
                expires_at = excluded.expires_at, updated_at = excluded.updated_at
            RETURNING 1
        )
        SELECT pg_notify(\(channel), \(notice))
        """
    }

    func delete(named name: String, notifying notice: String) -> PostgresQuery {
        """
        WITH removed AS (DELETE FROM \(unescaped: quoted) WHERE name = \(name) RETURNING 1)
        SELECT pg_notify(\(channel), \(notice))
        """
    }

    func deleteAll(notifying notice: String) -> PostgresQuery {
        """
        WITH removed AS (DELETE FROM \(unescaped: quoted) RETURNING 1)
        SELECT pg_notify(\(channel), \(notice))
        """
    }

    /// Deletes up to `limit` expired rows; answers how many. Rows another sweep holds are
    /// skipped, not waited for. No notification: every instance judges expiry from the record.
    func deleteExpired(limit: Int) -> PostgresQuery {
        """
        WITH removed AS (
            DELETE FROM \(unescaped: quoted) WHERE (name, version) IN (
                SELECT name, version FROM \(unescaped: quoted) WHERE expires_at < now()
                LIMIT \(limit) FOR UPDATE SKIP LOCKED
            )
            RETURNING 1
        )
        SELECT count(*)::bigint FROM removed
        """
    }

    /// Deletes up to `limit` of the rows that lie beyond `sizeLimit` bytes when rows are counted
    /// from the newest write; answers how many. No notification: a record evicted here is still
    /// right where another instance keeps a copy.
    func deleteBeyond(sizeLimit: Int, limit: Int) -> PostgresQuery {
        """
        WITH ranked AS (
            SELECT name, version,
                sum(size) OVER (ORDER BY updated_at DESC, name DESC, version DESC) AS kept
            FROM \(unescaped: quoted)
        ), removed AS (
            DELETE FROM \(unescaped: quoted) WHERE (name, version) IN (
                SELECT name, version FROM ranked WHERE kept > \(sizeLimit) LIMIT \(limit)
            )
            RETURNING 1
        )
        SELECT count(*)::bigint FROM removed
        """
    }
}

/// A notification's payload: the id of the instance that made the change, a space, then `k` and
/// the key's name, or `*` for every key.
struct Notice: Sendable {
    let instance: String
    let change: SharedChange

    /// PostgreSQL refuses payloads of 8000 bytes or more: a longer name goes out as `*`.
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
        } else {
            return nil
        }
    }

    var payload: String {
        if case .key(let name) = change {
            let payload = "\(instance) k\(name)"
            if payload.utf8.count <= Self.maximumPayload { return payload }
        }
        return "\(instance) *"
    }
}
