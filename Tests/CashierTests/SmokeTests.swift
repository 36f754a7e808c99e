import Foundation
import Testing
@testable import Cashier

@Suite struct SmokeTests {
    let folder = TemporaryFolder()

    @Test func roundTripThroughDisk() throws {
        let key = CacheKey<User>("profile", schemaVersion: 2)
        let events = EventLog()
        let cache = Cache(makeConfiguration(folder, events: events))
        try cache.set(User(name: "Ada", age: 36), for: key)
        #expect(cache.value(for: key) == User(name: "Ada", age: 36))
        let other = Cache(makeConfiguration(folder))
        #expect(other.value(for: key) == User(name: "Ada", age: 36))
        #expect(folder.entryFiles.count == 1)
        #expect(cache.count == 1)
        #expect(cache.totalSize > 0)
        #expect(cache.keys == ["profile"])
    }
}
