import CashierPlatform
import CashierStore
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// A removal made through a store another process replaced since the cache last looked (the
/// folder removed and made again, with a store of its own): it reaches the folder's store now.
/// Before, it went to the old, unlinked store: the new store's row of the key stayed, read
/// again by every instance once they noticed (DESIGN.md: nothing removed is read again), and
/// the new folder's file of a large key was unlinked under its row.
@Suite struct RemovalThroughAReplacedStoreTests: ReplacedFolderSuite {
    let folder = TemporaryFolder()
    let other = TemporaryFolder()
    let clock = TestClock()
    let events = EventLog()

    @Test(arguments: [false, true])
    func aRemovalOfAKeyReachesTheStoreThatReplacedTheOldOne(large: Bool) throws {
        let key = CacheKey<Data>("k")
        let value = large ? Self.large : Self.small
        let cache = cache()
        try cache.set(value, for: key)
        #expect(cache.value(for: key) == value) // a read: the store file's check is not due again
        try replaceTheFolder(writing: [key], value: value)
        #expect(try folder.row(for: key.name) != nil)
        cache.removeValue(for: key)
        #expect(try folder.row(for: key.name) == nil, "the replacing store's row went")
        #expect(!folder.hasEntryFile(for: key.name))
        #expect(relaunched().value(for: key) == nil)
    }

    @Test func aRemovalOfEveryKeyReachesTheStoreThatReplacedTheOldOne() throws {
        let keys = [CacheKey<Data>("a"), CacheKey<Data>("b")]
        let cache = cache()
        for key in keys { try cache.set(Self.small, for: key) }
        #expect(cache.value(for: keys[0]) == Self.small) // a read: the store file's check is not due again
        try replaceTheFolder(writing: keys + [CacheKey<Data>("big")], value: Self.large)
        cache.removeAll()
        for name in ["a", "b", "big"] { #expect(try folder.row(for: name) == nil, "\(name) stayed") }
        #expect(folder.entryFiles.isEmpty)
        #expect(relaunched().count == 0)
    }
}
