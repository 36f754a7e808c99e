import CashierEntryFormat

/// What a read expects of a stored entry: everything ``EntryJudgement/judge(_:expecting:canMigrate:)``
/// compares a header with.
package struct EntryExpectation: Sendable, Hashable {
    /// The key's name: a header of another name belongs to a key whose file name hashes alike.
    package var name: String
    /// The key's schema version; `nil` for an unversioned key, whose entries must then come
    /// from the same ``appVersion``.
    package var schemaVersion: Int?
    /// The value's type as ``ValueCoding/typeName(of:)`` spells it; `nil` when the reader has
    /// no type (the string-keyed facade), and then any type is accepted.
    package var typeName: String?
    /// The reading cache's ``Cache/Configuration-swift.struct/appVersion``.
    package var appVersion: String?

    package init(name: String, schemaVersion: Int?, typeName: String?, appVersion: String?) {
        self.name = name
        self.schemaVersion = schemaVersion
        self.typeName = typeName
        self.appVersion = appVersion
    }
}

/// What a read may do with a stored entry.
package enum EntryVerdict: Sendable, Equatable {
    /// Decode it: the entry is what the key expects.
    case usable
    /// Convert it with the key's migration from this stored schema version, then store the result.
    case migrate(from: Int)
    /// Remove it and report ``CacheEvent/discarded(key:reason:)`` with this reason.
    case discard(DiscardReason)
    /// Leave it alone: it belongs to another key whose file name hashes alike.
    case otherKey
}

/// DESIGN's read order, written once: a pure function from what is stored and what the key
/// expects to a verdict. Every reader of an entry (``Cache/value(for:)`` and the other typed
/// reads, the string-keyed facade's ``Cache/isValid(forKey:)``, ``Cache/refreshValidation(forKey:)``
/// and its reads) reaches a file through the one loader (Cache+Loading.swift), which reads
/// it, checks header and checksum (damage is ``DiscardReason/corrupt`` before this is
/// asked), and then asks this.
///
/// The order: the key's name; the schema version (migrate when the key has a migration from
/// the stored one, else discard); the type; for an unversioned key, the app version. Decoding
/// comes last and needs the payload, so the loader judges it (``DiscardReason/undecodable``).
/// The memory tier holds only entries this found usable, and re-checks a record with the
/// same rule in the form a hit can afford (``EntryMetadata/matches(schemaVersion:appVersion:)``).
package enum EntryJudgement {
    /// The verdict on an entry stored with `header`, for a read that expects `expectation`.
    /// `canMigrate` says whether the key has a migration from a stored schema version.
    @inline(__always)
    package static func judge(
        _ header: borrowing EntryHeader, expecting expectation: borrowing EntryExpectation,
        canMigrate: (Int) -> Bool = { _ in false }
    ) -> EntryVerdict {
        guard header.key == expectation.name else { return .otherKey }
        if header.schemaVersion != expectation.schemaVersion {
            if let stored = header.schemaVersion, canMigrate(stored) { return .migrate(from: stored) }
            return .discard(.schemaMismatch(stored: header.schemaVersion, expected: expectation.schemaVersion))
        }
        // Written by this platform's spelling, the names are equal; normalize only when not.
        if let expected = expectation.typeName, header.typeName != expected,
            ValueCoding.normalizedTypeName(header.typeName) != expected
        {
            return .discard(.typeMismatch(stored: header.typeName, expected: expected))
        }
        if expectation.schemaVersion == nil, header.appVersion != expectation.appVersion {
            return .discard(.appVersionMismatch(stored: header.appVersion, current: expectation.appVersion))
        }
        return .usable
    }
}

/// How a stored entry stands when there is no key to judge it against: the tool's `list`,
/// `show`, `stats` and `prune` (a key's expectations need its type, which only the app has).
package enum EntryStanding: String, Sendable {
    case valid, expired, damaged
}

extension EntryJudgement {
    /// The standing of an entry file: damaged when the reader found it so (`header` is then
    /// `nil` or unverified), else expired or valid by the one definition of expiry
    /// (`EntryHeader.isExpired(at:lastUsedAt:)`), the read's own order without a key.
    package static func standing(of header: EntryHeader?, isDamaged: Bool, at now: Double, lastUsedAt: Double)
        -> EntryStanding
    {
        guard !isDamaged, let header else { return .damaged }
        return header.isExpired(at: now, lastUsedAt: lastUsedAt) ? .expired : .valid
    }
}
