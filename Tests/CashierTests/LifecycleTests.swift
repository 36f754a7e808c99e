import CashierEntryFormat
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// Where a lifespan comes from when `set` writes an entry.
enum LifespanSource: String, CaseIterable, Sendable {
    case argument, key, configuration
}

/// Writes `"v"` for "k" with `lifespan` given by `source`, through a fresh instance on `folder`.
private func write(
    _ lifespan: Lifespan, from source: LifespanSource, in folder: TemporaryFolder,
    events: EventLog? = nil
) throws {
    var configuration = makeConfiguration(folder, events: events)
    if source == .configuration { configuration.defaultLifespan = lifespan }
    let key = CacheKey<String>("k", lifespan: source == .key ? lifespan : nil)
    try Cache(configuration).set("v", for: key, lifespan: source == .argument ? lifespan : nil)
}

/// Lifespans that are not finite, named: a test case's description must not print their Dates
/// (Foundation traps on describing a Date that is not finite).
enum OddLifespan: String, CaseIterable, Sendable {
    case endlessSeconds, endlessDate, overflowingDays, secondsEndedForever, dateEndedForever, notANumberSeconds,
        notANumberDate

    var lifespan: Lifespan {
        switch self {
        case .endlessSeconds: .seconds(.infinity)
        case .endlessDate: .until(Date(timeIntervalSince1970: .infinity))
        case .overflowingDays: .days(.greatestFiniteMagnitude)
        case .secondsEndedForever: .seconds(-.infinity)
        case .dateEndedForever: .until(Date(timeIntervalSince1970: -.infinity))
        case .notANumberSeconds: .seconds(.nan)
        case .notANumberDate: .until(Date(timeIntervalSince1970: .nan))
        }
    }
}

@Suite struct LifespanNormalizationTests {
    let folder = TemporaryFolder()

    static let endless: [OddLifespan] = [.endlessSeconds, .endlessDate, .overflowingDays]
    static let endedForever: [OddLifespan] = [.secondsEndedForever, .dateEndedForever]

    @Test(arguments: endless, LifespanSource.allCases)
    func endlessLifespanReadsBackAfterARelaunchAsNever(lifespan: OddLifespan, source: LifespanSource) throws {
        try write(lifespan.lifespan, from: source, in: folder)
        let events = EventLog()
        let relaunched = Cache(makeConfiguration(folder, events: events))
        let entry = try #require(relaunched.entry(for: CacheKey<String>("k")))
        #expect(entry.value == "v")
        #expect(entry.expiresAt == nil)
        #expect(!entry.isExpired)
        #expect(events.discards.isEmpty)
    }

    @Test(arguments: endedForever, LifespanSource.allCases)
    func lifespanThatEndedForeverAgoIsExpiredNotDamaged(lifespan: OddLifespan, source: LifespanSource) throws {
        try write(lifespan.lifespan, from: source, in: folder)
        let events = EventLog()
        let relaunched = Cache(makeConfiguration(folder, events: events))
        #expect(relaunched.value(for: CacheKey<String>("k")) == nil)
        let entry = try #require(relaunched.entry(for: CacheKey<String>("k")))
        #expect(entry.value == "v")
        #expect(entry.isExpired)
        #expect(events.discards.isEmpty)
        #expect(relaunched.count == 1) // not discarded
    }

    @Test(arguments: [OddLifespan.notANumberSeconds, .notANumberDate], LifespanSource.allCases)
    func notANumberLifespanIsRefusedAndLeavesTheOldEntry(lifespan: OddLifespan, source: LifespanSource) throws {
        try Cache(makeConfiguration(folder)).set("old", for: CacheKey<String>("k"))
        let events = EventLog()
        #expect {
            try write(lifespan.lifespan, from: source, in: folder, events: events)
        } throws: { error in
            (error as? CacheError)?.kind == .invalidValue && (error as? CacheError)?.key == "k"
        }
        #expect(events.failures.map(\.kind) == [.invalidValue])
        #expect(Cache(makeConfiguration(folder)).value(for: CacheKey<String>("k")) == "old")
    }
}

@Suite struct FacadeCheckTests {
    let folder = TemporaryFolder()

    /// Flips the last byte of the one entry file: its checksum no longer matches.
    private func damageTheEntry() throws {
        let path = try #require(folder.entryFiles.first.map { folder.path + "/" + $0 })
        var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        bytes[bytes.count - 1] ^= 0xFF
        try bytes.write(to: URL(fileURLWithPath: path))
    }

    @Test func isValidForKeyIsFalseAfterAnAppUpdateAndDiscardsTheEntry() throws {
        try Cache(makeConfiguration(folder, appVersion: "1.0")).setString("v", forKey: "k")
        let events = EventLog()
        let updated = Cache(makeConfiguration(folder, events: events, appVersion: "2.0"))
        #expect(!updated.isValid(forKey: "k"))
        #expect(events.discards.first?.1 == .appVersionMismatch(stored: "1.0", current: "2.0"))
        #expect(folder.entryFiles.isEmpty)
    }

    @Test func isValidForKeyIsFalseForADamagedFile() throws {
        try Cache(makeConfiguration(folder, storage: .files)).setString("v", forKey: "k")
        try damageTheEntry()
        let events = EventLog()
        #expect(!Cache(makeConfiguration(folder, events: events, storage: .files)).isValid(forKey: "k"))
        #expect(events.discards.map(\.1) == [.corrupt])
        #expect(folder.entryFiles.isEmpty)
    }

    @Test func isValidForKeyIsFalseForAnEntryStoredUnderASchemaVersion() throws {
        try Cache(makeConfiguration(folder)).set("v", for: CacheKey<String>("k", schemaVersion: 1))
        let events = EventLog()
        #expect(!Cache(makeConfiguration(folder, events: events)).isValid(forKey: "k"))
        #expect(events.discards.map(\.1) == [.schemaMismatch(stored: 1, expected: nil)])
    }

    @Test func isValidForKeyIsTrueForAUsableEntryOfAnyType() throws {
        try Cache(makeConfiguration(folder)).set(User(name: "A", age: 1), for: CacheKey<User>("k"))
        let events = EventLog()
        #expect(Cache(makeConfiguration(folder, events: events)).isValid(forKey: "k"))
        #expect(events.discards.isEmpty)
    }

    @Test func refreshValidationDoesNotRepairADamagedEntry() throws {
        let clock = TestClock()
        var configuration = makeConfiguration(folder, clock: clock, storage: .files)
        configuration.defaultLifespan = .seconds(60)
        try Cache(configuration).setString("v", forKey: "k")
        try damageTheEntry()
        let events = EventLog()
        configuration.onEvent = events.handler
        let relaunched = Cache(configuration)
        relaunched.refreshValidation(forKey: "k")
        #expect(events.discards.map(\.1) == [.corrupt])
        #expect(folder.entryFiles.isEmpty)
        #expect(relaunched.string(forKey: "k") == nil)
    }

    @Test func refreshValidationDiscardsAnEntryOfAnotherAppVersion() throws {
        try Cache(makeConfiguration(folder, appVersion: "1.0")).setString("v", forKey: "k")
        let events = EventLog()
        let updated = Cache(makeConfiguration(folder, events: events, appVersion: "2.0"))
        updated.refreshValidation(forKey: "k")
        #expect(events.discards.map(\.1) == [.appVersionMismatch(stored: "1.0", current: "2.0")])
        #expect(folder.entryFiles.isEmpty)
    }
}

private struct PostalAddress: Codable, Sendable, Equatable {
    var street: String
    var zip: Int
}

private struct Customer: Codable, Sendable, Equatable {
    var name: String
    var addresses: [PostalAddress]
}

@Suite struct DiscardDetailTests {
    let folder = TemporaryFolder()

    /// Writes `json` as the payload of an unversioned `Customer` entry named "customer".
    private func plantCustomer(_ json: String) throws {
        let payload = Data(json.utf8)
        let header = EntryHeader(
            key: "customer", typeName: ValueCoding.typeName(of: Customer.self), format: .json, createdAt: 0,
            validatedAt: 0,
            lifespan: .never, schemaVersion: nil, appVersion: "1.0", isLocked: false, payloadLength: payload.count)
        _ = try DiskTier(folder: folder.path).write(
            DiskTier.fileName(for: "customer"), header: header, payload: payload,
            options: {
                let cache = Cache(makeConfiguration(folder))
                return cache.writeOptions(usedAt: cache.nowSeconds)
            }())
    }

    @Test func undecodableDiscardIsFollowedByWhichFieldFailed() throws {
        try plantCustomer(#"{"name": "A", "addresses": [{"street": "Main", "zip": "nine"}]}"#)
        let events = EventLog()
        #expect(Cache(makeConfiguration(folder, events: events)).value(for: CacheKey<Customer>("customer")) == nil)
        #expect(events.discards.map(\.1) == [.undecodable])
        let discard = try #require(events.all.firstIndex { if case .discarded = $0 { true } else { false } })
        guard events.all.indices.contains(discard + 1), case .failure(let key, let error) = events.all[discard + 1]
        else {
            Issue.record("no failure right after the discard: \(events.all)")
            return
        }
        #expect(key == "customer")
        #expect(error.kind == .decodingFailed)
        #expect(error.message.hasPrefix("expected Int at \"addresses[0].zip\""), "\(error.message)")
    }

    @Test func missingFieldIsNamed() throws {
        try plantCustomer(#"{"name": "A"}"#)
        let events = EventLog()
        _ = Cache(makeConfiguration(folder, events: events)).value(for: CacheKey<Customer>("customer"))
        #expect(events.failures.map(\.kind) == [.decodingFailed])
        #expect(events.failures.first?.message.hasPrefix("missing field \"addresses\"") == true, "\(events.failures)")
    }

    @Test func migrationFailureCarriesWhatTheMigrationThrew() throws {
        struct Refused: Error, CustomStringConvertible {
            var description: String { "no email in version 1" }
        }
        try Cache(makeConfiguration(folder)).set(
            User(name: "A", age: 1), for: CacheKey<User>("profile", schemaVersion: 1))
        let key = CacheKey<UserV2>(
            "profile", schemaVersion: 2,
            migrations: [
                .from(1, as: User.self) { _ in throw Refused() }
            ])
        let events = EventLog()
        #expect(Cache(makeConfiguration(folder, events: events)).value(for: key) == nil)
        #expect(events.discards.map(\.1) == [.migrationFailed])
        #expect(events.failures.map(\.kind) == [.decodingFailed])
        #expect(events.failures.first?.message == "no email in version 1")
    }

    @Test(arguments: [
        (
            CacheEvent.discarded(key: "profile", reason: .schemaMismatch(stored: nil, expected: 1)),
            "discarded \"profile\": stored under schema version none, the key expects 1"
        ),
        (
            .discarded(key: "p", reason: .appVersionMismatch(stored: "1.0", current: nil)),
            "discarded \"p\": written by app version \"1.0\", the app is now none"
        ),
        (
            .discarded(key: "p", reason: .typeMismatch(stored: "App.User", expected: "App.Profile")),
            "discarded \"p\": stored as App.User, the key's type is App.Profile"
        ),
        (
            .discarded(key: "p", reason: .undecodable),
            "discarded \"p\": the payload no longer decodes as the key's type"
        ),
        (.hit(key: "p"), "hit \"p\""),
        (.miss(key: "line\nbreak"), "miss \"line\\nbreak\""),
        (.write(key: "p", bytes: 120), "wrote \"p\": 120 bytes"),
        (.evicted(key: "p", bytes: 120), "evicted \"p\": 120 bytes"),
        (.migrated(key: "p", from: nil, to: 2), "migrated \"p\" from schema version none to 2"),
        (
            .failure(key: "p", error: CacheError(kind: .decodingFailed, key: "p", message: "missing field \"name\"")),
            "failed \"p\": decoding failed: missing field \"name\""
        ),
        (
            .failure(key: nil, error: CacheError(kind: .noSpace, path: "/tmp/c", message: "No space left on device")),
            "failed: no space at /tmp/c: No space left on device"
        ),
    ])
    func eventPrintsAsASentence(event: CacheEvent, sentence: String) {
        #expect("\(event)" == sentence)
    }

    @Test func discardReasonPrintsAsASentence() {
        #expect("\(DiscardReason.corrupt)" == "the file is damaged (bad header, checksum mismatch, or wrong length)")
        #expect(String(describing: DiscardReason.expired) == "its lifespan ran out")
        #expect("\(DiscardReason.migrationFailed)" == "its migration threw")
    }
}

@Suite struct StableTypeNameTests {
    private struct PrivateModel: Codable, Sendable, Equatable {
        var name: String
    }

    @Test func privateTypeNameCarriesNoAddress() {
        let reflected = String(reflecting: PrivateModel.self)
        let stored = ValueCoding.typeName(of: PrivateModel.self)
        #expect(reflected.contains("(unknown context at $"))
        #expect(!stored.contains(" at $"))
        #expect(stored.hasSuffix("(unknown context).PrivateModel"))
    }

    @Test(arguments: [
        ("App.(unknown context at $55e3387690fc).Profile", "App.(unknown context).Profile"),
        (
            "Swift.Array<App.(unknown context at $1234).A.(unknown context at $abcd).B>",
            "Swift.Array<App.(unknown context).A.(unknown context).B>"
        ),
        ("FoundationEssentials.Data", "Foundation.Data"),
        ("App.User", "App.User"),
    ])
    func storedNamesAreNormalizedTheSameWay(stored: String, normalized: String) {
        #expect(ValueCoding.normalizedTypeName(stored) == normalized)
    }

    @Test func entryWrittenUnderAnOldAddressBearingNameStaysReadable() throws {
        let folder = TemporaryFolder()
        let key = CacheKey<PrivateModel>("model", schemaVersion: 1)
        let name = ValueCoding.typeName(of: PrivateModel.self)
            .replacingOccurrences(of: "(unknown context)", with: "(unknown context at $7f00deadbeef)")
        let payload = try JSONEncoder().encode(PrivateModel(name: "A"))
        let header = EntryHeader(
            key: "model", typeName: name, format: .json, createdAt: 0, validatedAt: 0, lifespan: .never,
            schemaVersion: 1, appVersion: "1.0", isLocked: false, payloadLength: payload.count)
        _ = try DiskTier(folder: folder.path).write(
            DiskTier.fileName(for: "model"), header: header, payload: payload,
            options: {
                let cache = Cache(makeConfiguration(folder, storage: .files))
                return cache.writeOptions(usedAt: cache.nowSeconds)
            }())
        let events = EventLog()
        #expect(
            Cache(makeConfiguration(folder, events: events, storage: .files)).value(for: key) == PrivateModel(name: "A")
        )
        #expect(events.discards.isEmpty)
    }
}
