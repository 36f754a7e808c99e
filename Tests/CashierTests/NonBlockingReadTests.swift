import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Nothing in the folder can block the cache: entry files are opened without waiting
/// (`O_NONBLOCK`) and without following links (`O_NOFOLLOW`), and only regular files are read.
@Suite struct NonBlockingReadTests {
    let folder = TemporaryFolder()
    let key = CacheKey<String>("pipe")

    private func plantFIFO() throws -> Cache {
        let cache = Cache(makeConfiguration(folder, storage: .files))
        try cache.set("seed", for: CacheKey<String>("other")) // makes the folder
        let path = folder.path + "/" + DiskTier.fileName(for: key.name)
        try #require(mkfifo(path, 0o600) == 0)
        return cache
    }

    /// Before: `open(O_RDONLY)` on a FIFO with no writer waited forever, holding the key's lock.
    @Test func aFIFOInAnEntrysPlaceIsAMissNotAWait() throws {
        let cache = try plantFIFO()
        #expect(cache.value(for: key) == nil)
        #expect(cache.keys == ["other"])
        cache.collectGarbage()
        #expect(cache.value(for: CacheKey<String>("other")) == "seed")
        try cache.set("written", for: key) // the FIFO's name takes a regular entry again
        #expect(Cache(makeConfiguration(folder, storage: .files)).value(for: key) == "written")
    }

    @Test func aSymbolicLinkInAnEntrysPlaceIsNotFollowed() throws {
        let outside = TemporaryFolder()
        let other = Cache(makeConfiguration(outside, storage: .files))
        try other.set("outside", for: key)
        let cache = Cache(makeConfiguration(folder, storage: .files))
        try cache.set("seed", for: CacheKey<String>("other"))
        let name = DiskTier.fileName(for: key.name)
        try #require(symlink(outside.path + "/" + name, folder.path + "/" + name) == 0)
        #expect(cache.value(for: key) == nil)
    }
}
