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

/// No one else reads or plants entries: owner-only modes, and folders others could write refused.
///
/// Serialized: two tests set the process's umask (to 022, the usual one, so suites running
/// beside these see no change).
@Suite(.serialized) struct FolderTrustTests {
    let folder = TemporaryFolder()
    let events = EventLog()
    let key = CacheKey<String>("token")

    private func cache(sharing: Cache.Sharing = .owner) -> Cache {
        var configuration = makeConfiguration(folder, events: events, storage: .files)
        configuration.sharing = sharing
        return Cache(configuration)
    }

    private func mode(_ path: String) throws -> mode_t {
        var st = stat()
        try #require(lstat(path, &st) == 0)
        return st.st_mode & 0o7777
    }

    private func withUmask<R>(_ mask: mode_t, _ body: () throws -> R) rethrows -> R {
        let previous = umask(mask)
        defer { umask(previous) }
        return try body()
    }

    /// A folder holding one entry for `key`, written by a cache that trusted it.
    private func folderWithEntry() throws {
        try Cache(makeConfiguration(folder, storage: .files)).set("secret", for: key)
    }

    private var untrustedFailures: [CacheError] {
        events.failures.filter { $0.kind == .untrustedFolder }
    }

    private func expectRefused(_ cache: Cache, mentioning detail: String) {
        #expect(cache.value(for: key) == nil)
        let error = #expect(throws: CacheError.self) { try cache.set("planted?", for: key) }
        #expect(error?.kind == .untrustedFolder)
        #expect(error?.key == "token")
        #expect(error?.path == folder.path)
        #expect(error?.message.contains(detail) == true, "\(error?.message ?? "")")
        #expect(untrustedFailures.count >= 2)
        #expect(untrustedFailures.allSatisfy { $0.key == "token" })
    }

    @Test func defaultModesAreOwnerOnlyWhateverTheUmask() throws {
        try withUmask(0o022) { try cache().set("secret", for: key) }
        #expect(try mode(folder.path) == 0o700)
        #expect(try mode(folder.path + "/" + folder.entryFiles[0]) == 0o600)
    }

    @Test func groupSharingMakesGroupModesThroughTheUmask() throws {
        try withUmask(0o022) { try cache(sharing: .group).set("shared", for: key) }
        #expect(try mode(folder.path) == 0o2770)
        #expect(try mode(folder.path + "/" + folder.entryFiles[0]) == 0o660)
        #expect(cache(sharing: .group).value(for: key) == "shared")
    }

    @Test func aFolderOthersCanWriteIsRefused() throws {
        try folderWithEntry()
        try #require(chmod(folder.path, 0o777) == 0)
        expectRefused(cache(), mentioning: "mode 0777")
        // Group sharing does not accept others either.
        #expect(throws: CacheError.self) { try cache(sharing: .group).set("x", for: key) }
        #expect(folder.entryFiles.count == 1)
    }

    @Test func aFolderItsGroupCanWriteIsRefusedUnlessSharingIsGroup() throws {
        try folderWithEntry()
        try #require(chmod(folder.path, 0o770) == 0)
        expectRefused(cache(), mentioning: "mode 0770")
        let shared = cache(sharing: .group)
        #expect(shared.value(for: key) == "secret")
        try shared.set("new", for: key)
        #expect(cache(sharing: .group).value(for: key) == "new")
    }

    @Test func aFolderAnotherUserOwnsIsRefused() throws {
        try folderWithEntry()
        try #require(chown(folder.path, 12345, 12345) == 0)
        expectRefused(cache(), mentioning: "uid 12345")
        // Group 12345 is not this process's: group sharing refuses it too.
        #expect(throws: CacheError.self) { try cache(sharing: .group).set("x", for: key) }
    }

    @Test func housekeepingLeavesARefusedFolderAlone() throws {
        try folderWithEntry()
        try #require(chmod(folder.path, 0o777) == 0)
        let cache = cache()
        #expect(cache.keys.isEmpty)
        #expect(cache.count == 0)
        cache.removeAll()
        cache.collectGarbage()
        #expect(folder.entryFiles.count == 1)
        #expect(untrustedFailures.count == 4)
    }

    @Test func removeAllOnARefusedFolderStillForgetsWhatIsInMemory() throws {
        let cache = cache()
        try cache.set("secret", for: key)
        try #require(chmod(folder.path, 0o777) == 0)
        cache.removeAll()
        #expect(cache.value(for: key) == nil)
        #expect(folder.entryFiles.count == 1)
        #expect(untrustedFailures.count == 2)
    }

    @Test func aSymbolicLinkAnotherUserOwnsIsRefusedAndTheUsersOwnIsFollowed() throws {
        let target = TemporaryFolder()
        try Cache(makeConfiguration(target, storage: .files)).set("secret", for: key)
        try FileManager.default.createSymbolicLink(atPath: folder.path, withDestinationPath: target.path)
        #expect(cache().value(for: key) == "secret")
        try #require(lchown(folder.path, 12345, 12345) == 0)
        expectRefused(cache(), mentioning: "symbolic link owned by uid 12345")
    }

    @Test func anEntryFileAnotherUserOwnsIsAMiss() throws {
        try folderWithEntry()
        try #require(chown(folder.path + "/" + folder.entryFiles[0], 12345, 12345) == 0)
        #expect(cache().value(for: key) == nil)
        #expect(untrustedFailures.map(\.key) == ["token"])
        #expect(untrustedFailures.first?.message.contains("uid 12345") == true)
        #expect(cache(sharing: .group).value(for: key) == "secret")
    }

    @Test func theFacadeNeitherTrustsNorLaundersAnEntryFileAnotherUserOwns() throws {
        try folderWithEntry()
        let path = folder.path + "/" + folder.entryFiles[0]
        try #require(chown(path, 12345, 12345) == 0)
        let cache = cache()
        #expect(!cache.isValid(forKey: key.name))
        // A refresh would rewrite the planted payload as this user's file, which reads then trust.
        cache.refreshValidation(forKey: key.name)
        var st = stat()
        try #require(stat(path, &st) == 0)
        #expect(st.st_uid == 12345)
        #expect(cache.value(for: key) == nil)
        #expect(untrustedFailures.allSatisfy { $0.key == "token" } && !untrustedFailures.isEmpty)
    }

    @Test func aFolderReplacedAfterItWasJudgedIsJudgedAgain() throws {
        let cache = cache()
        try cache.set("secret", for: key)
        // Someone else's folder, with an entry of theirs, takes the judged folder's place.
        let elsewhere = TemporaryFolder()
        let planted = CacheKey<String>("planted")
        try Cache(makeConfiguration(elsewhere, storage: .files)).set("poison", for: planted)
        let plantedFile = DiskTier.fileName(for: planted.name)
        try FileManager.default.moveItem(atPath: folder.path, toPath: folder.path + "-judged")
        defer { try? FileManager.default.removeItem(atPath: folder.path + "-judged") }
        try #require(mkdir(folder.path, 0o700) == 0)
        try FileManager.default.copyItem(
            atPath: elsewhere.path + "/" + plantedFile, toPath: folder.path + "/" + plantedFile)
        try #require(chown(folder.path + "/" + plantedFile, 12345, 12345) == 0)
        try #require(chown(folder.path, 12345, 12345) == 0)
        // Reads judge the folder as last seen, so the planted file's owner is what refuses it.
        #expect(cache.value(for: planted) == nil)
        // The next write stats the folder again.
        let error = #expect(throws: CacheError.self) { try cache.set("more", for: key) }
        #expect(error?.kind == .untrustedFolder)
        #expect(cache.value(for: planted) == nil)
        #expect(!FileManager.default.fileExists(atPath: folder.path + "/" + DiskTier.fileName(for: key.name)))
    }
}
