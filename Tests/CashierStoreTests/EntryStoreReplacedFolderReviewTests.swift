import CashierSQLite
import CashierStore
import CashierTestSupport
import Foundation
import Testing

/// A hostile review of the check the removal of planned rows gained (the store's path must still
/// name the store open before each file goes): the other removals that unlink entries' files
/// through a store whose folder another process removed and made again.
@Suite struct EntryStoreReplacedFolderReviewTests {
    let folder = TemporaryFolder()
    let store: EntryStore

    init() throws {
        try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: true)
        store = try EntryStore(folder: folder.path)
    }

    /// The old store and the new one, each with a large entry `image` whose file (the new
    /// store's) is at the returned path.
    func replaceTheStore() throws -> (other: EntryStore, file: String) {
        let large = StoreEntry(key: "image", location: .file, size: 5, lastUse: 1)
        try store.upsert(large, record: [])
        for suffix in ["", "-wal", "-shm"] { unlink(store.path + suffix) }
        let other = try EntryStore(folder: folder.path)
        try other.upsert(large, record: [])
        let file = folder.path + "/another-process-image"
        #expect(FileManager.default.createFile(atPath: file, contents: Data("image".utf8)))
        return (other, file)
    }

    /// A removal of every entry (`Cache.removeAll`) through the replaced store unlinks every file
    /// of the new folder (the large entries' under the old rows' names, and every other entry
    /// file listed) while the new store's rows stay: the sweep's removal refuses the same.
    ///
    /// A known issue: the caller asked for every entry to go, so the files going is what it
    /// wanted; the new store's small entries staying is not. The fix is to run such a removal
    /// again on the reopened store (a sweep's plan must not be: it was the old store's).
    @Test func aRemovalOfEveryEntryThroughAReplacedStoreRemovesNoFile() throws {
        let (other, file) = try replaceTheStore()
        _ = try? store.removeAll(filePath: { _ in file }, otherFiles: { [file] })
        withKnownIssue("a removal of every entry through a replaced store unlinks the new folder's files") {
            #expect(FileManager.default.fileExists(atPath: file), "the removal took another store's file")
        }
        #expect(try other.record(for: "image") != nil)
    }

    /// The same for the removal of one key (`Cache.remove`, the store's removal that may evict
    /// for room): the other process's file of the key goes, its row stays.
    @Test func aRemovalOfAKeyThroughAReplacedStoreRemovesNoFile() throws {
        let (_, file) = try replaceTheStore()
        _ = try? store.remove("image", filePath: file, evictingFilesAt: { _ in file }, evicted: { _ in })
        // A known issue, as above: the key's file goes, as its caller asked, but its row stays.
        withKnownIssue("a removal of one key through a replaced store unlinks the new folder's file of the key") {
            #expect(FileManager.default.fileExists(atPath: file), "the removal took another store's file")
        }
    }
}
