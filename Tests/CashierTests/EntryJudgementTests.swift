import CashierEntryFormat
import Testing

@testable import Cashier

/// DESIGN's read order as a pure function: every verdict here is reached without a disk.
@Suite struct EntryJudgementTests {
    static let typeName = "Swift.Array<Swift.Int>"

    func header(
        key: String = "k", typeName: String = Self.typeName, schemaVersion: Int? = nil, appVersion: String? = "1.0"
    ) -> EntryHeader {
        EntryHeader(
            key: key, typeName: typeName, format: .json, createdAt: 0, validatedAt: 0, lifespan: .never,
            schemaVersion: schemaVersion, appVersion: appVersion, isLocked: false, payloadLength: 0)
    }

    func expecting(
        key: String = "k", schemaVersion: Int? = nil, typeName: String? = Self.typeName, appVersion: String? = "1.0"
    ) -> EntryExpectation {
        EntryExpectation(name: key, schemaVersion: schemaVersion, typeName: typeName, appVersion: appVersion)
    }

    @Test func anEntryAsTheKeyExpectsIsUsable() {
        #expect(EntryJudgement.judge(header(), expecting: expecting()) == .usable)
        #expect(
            EntryJudgement.judge(header(schemaVersion: 3), expecting: expecting(schemaVersion: 3)) == .usable)
    }

    @Test func anotherKeysEntryIsLeftAlone() {
        #expect(EntryJudgement.judge(header(key: "other"), expecting: expecting()) == .otherKey)
    }

    @Test func anotherSchemaVersionIsDiscardedWithoutAMigration() {
        #expect(
            EntryJudgement.judge(header(schemaVersion: 1), expecting: expecting(schemaVersion: 2))
                == .discard(.schemaMismatch(stored: 1, expected: 2)))
        #expect(
            EntryJudgement.judge(header(schemaVersion: nil), expecting: expecting(schemaVersion: 2))
                == .discard(.schemaMismatch(stored: nil, expected: 2)))
    }

    @Test func anotherSchemaVersionMigratesWhenTheKeyHasAMigrationFromIt() {
        let verdict = EntryJudgement.judge(
            header(schemaVersion: 1), expecting: expecting(schemaVersion: 2), canMigrate: { $0 == 1 })
        #expect(verdict == .migrate(from: 1))
        // An unversioned entry has no version to migrate from.
        #expect(
            EntryJudgement.judge(
                header(schemaVersion: nil), expecting: expecting(schemaVersion: 2), canMigrate: { _ in true })
                == .discard(.schemaMismatch(stored: nil, expected: 2)))
    }

    @Test func anotherTypeIsDiscarded() {
        #expect(
            EntryJudgement.judge(header(typeName: "Swift.String"), expecting: expecting())
                == .discard(.typeMismatch(stored: "Swift.String", expected: Self.typeName)))
    }

    @Test func aTypeNameOfAnotherSpellingIsTheSameType() {
        let stored = header(typeName: "Swift.Array<FoundationEssentials.Date>")
        #expect(EntryJudgement.judge(stored, expecting: expecting(typeName: "Swift.Array<Foundation.Date>")) == .usable)
    }

    @Test func aReadWithoutATypeAcceptsAnyType() {
        #expect(EntryJudgement.judge(header(typeName: "Swift.String"), expecting: expecting(typeName: nil)) == .usable)
    }

    @Test func anUnversionedKeyDiscardsAnotherAppVersionsEntry() {
        #expect(
            EntryJudgement.judge(header(appVersion: "0.9"), expecting: expecting())
                == .discard(.appVersionMismatch(stored: "0.9", current: "1.0")))
        #expect(
            EntryJudgement.judge(header(appVersion: nil), expecting: expecting())
                == .discard(.appVersionMismatch(stored: nil, current: "1.0")))
    }

    @Test func aVersionedKeyKeepsAnotherAppVersionsEntry() {
        let stored = header(schemaVersion: 2, appVersion: "0.9")
        #expect(EntryJudgement.judge(stored, expecting: expecting(schemaVersion: 2)) == .usable)
    }

    @Test func theSchemaIsJudgedBeforeTheTypeAndTheTypeBeforeTheAppVersion() {
        let everythingDiffers = header(typeName: "Swift.String", schemaVersion: 1, appVersion: "0.9")
        #expect(
            EntryJudgement.judge(everythingDiffers, expecting: expecting())
                == .discard(.schemaMismatch(stored: 1, expected: nil)))
        let typeAndApp = header(typeName: "Swift.String", appVersion: "0.9")
        #expect(
            EntryJudgement.judge(typeAndApp, expecting: expecting())
                == .discard(.typeMismatch(stored: "Swift.String", expected: Self.typeName)))
    }

    @Test(arguments: [nil, 1, 2] as [Int?], [nil, 1, 2] as [Int?])
    func theMemoryTiersRuleAgreesWithTheJudgement(stored: Int?, expected: Int?) {
        for (storedApp, app) in [("1.0", "1.0"), ("0.9", "1.0"), (nil, "1.0"), (nil, nil)] as [(String?, String?)] {
            let entry = header(schemaVersion: stored, appVersion: storedApp)
            let metadata = EntryMetadata(entry, size: 0)
            let judged = EntryJudgement.judge(entry, expecting: expecting(schemaVersion: expected, appVersion: app))
            #expect(metadata.matches(schemaVersion: expected, appVersion: app) == (judged == .usable))
        }
    }

    @Test func withoutAKeyAnEntryIsDamagedExpiredOrValid() {
        var entry = header()
        entry.lifespan = .seconds(10)
        #expect(EntryJudgement.standing(of: entry, isDamaged: true, at: 0, lastUsedAt: 0) == .damaged)
        #expect(EntryJudgement.standing(of: nil, isDamaged: false, at: 0, lastUsedAt: 0) == .damaged)
        #expect(EntryJudgement.standing(of: entry, isDamaged: false, at: 5, lastUsedAt: 0) == .valid)
        #expect(EntryJudgement.standing(of: entry, isDamaged: false, at: 10, lastUsedAt: 0) == .expired)
        entry.isLocked = true
        #expect(EntryJudgement.standing(of: entry, isDamaged: false, at: 10, lastUsedAt: 0) == .valid)
    }
}
