import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// What the "Coming from Cashier" guide promises to code moving from string keys to
/// typed keys one call site at a time.
@Suite struct GradualMoveTests {
    let folder = TemporaryFolder()
    let user = User(name: "Ada", age: 36)

    @Test func stringKeyedEntryReadsThroughAnUnversionedTypedKey() throws {
        try Cache(makeConfiguration(folder)).setObject(user, forKey: "user")
        let cache = Cache(makeConfiguration(folder))
        #expect(cache.value(for: CacheKey<User>("user", lifespan: .hours(1))) == user)
    }

    @Test func unversionedTypedKeyEntryReadsThroughTheStringKeyedAccessor() throws {
        try Cache(makeConfiguration(folder)).set(user, for: CacheKey<User>("user", lifespan: .hours(1)))
        let cache = Cache(makeConfiguration(folder))
        #expect(cache.object(forKey: "user", as: User.self) == user)
        #expect(cache.isValid(forKey: "user"))
    }

    @Test func givingTheKeyASchemaVersionLaterDiscardsTheStringKeyedEntryOnce() throws {
        let events = EventLog()
        try Cache(makeConfiguration(folder)).setObject(user, forKey: "user")
        let cache = Cache(makeConfiguration(folder, events: events))
        let versioned = CacheKey<User>("user", schemaVersion: 1)
        #expect(cache.value(for: versioned) == nil)
        #expect(events.discards.map(\.1) == [.schemaMismatch(stored: nil, expected: 1)])
        try cache.set(user, for: versioned)
        #expect(Cache(makeConfiguration(folder)).value(for: versioned) == user)
    }
}
