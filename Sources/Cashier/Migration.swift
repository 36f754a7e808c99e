import CashierEntryFormat
import Foundation

/// A conversion from a value stored under an older schema version.
///
/// ```swift
/// static let profile = CacheKey<User>("profile", schemaVersion: 2, migrations: [
///     .from(1, as: UserV1.self) { User(name: $0.fullName, email: nil) },
/// ])
/// ```
///
/// When a read finds an entry stored under version 1, the payload is decoded as
/// `UserV1` with the codec it was stored with, converted, rewritten under
/// version 2 and returned; ``Cache/Configuration/onEvent`` receives
/// ``CacheEvent/migrated(key:from:to:)``. If decoding or `convert` throws, the
/// entry is discarded with ``DiscardReason/migrationFailed``.
public struct Migration<Value: Codable & Sendable>: Sendable {
    /// The stored schema version this migration reads.
    public let version: Int
    let convert: @Sendable (_ payload: Data, _ format: PayloadFormat) throws -> Value

    /// A migration from entries stored under `version`, decoded as `Old`, converted by `convert`.
    public static func from<Old: Codable & Sendable>(
        _ version: Int, as old: Old.Type,
        _ convert: @escaping @Sendable (Old) throws -> Value
    ) -> Migration<Value> {
        Migration(version: version) { payload, format in
            try convert(ValueCoding.decode(Old.self, from: payload, format: format))
        }
    }
}
