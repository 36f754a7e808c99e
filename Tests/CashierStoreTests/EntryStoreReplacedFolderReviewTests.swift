import CashierSQLite
import CashierStore
import CashierTestSupport
import Foundation
import Testing

/// A hostile review of the check the removal of planned rows gained (the store's path must still
/// name the store open before each file goes): the other removals that unlink entries' files
/// through a store whose folder another process removed and made again. Found and fixed: the
/// removal of every entry and of one key took the new folder's files and left its rows.
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

    /// Whether `call` threw `ESTALE`: the store is not its folder's now.
    func throwsStale(_ call: () throws(StoreError) -> Void) -> Bool {
        do throws(StoreError) {
            try call()
            return false
        } catch .failed(let error) {
            return error.systemCode == ESTALE
        } catch {
            return false
        }
    }

    /// A removal of every entry (`Cache.removeAll`) through the replaced store unlinked every
    /// file of the new folder (the large entries' under the old rows' names, and every other
    /// entry file listed) while the new store's rows stayed. Now it throws `ESTALE` and touches
    /// nothing; reopened, the store removes the new folder's entries, files and rows.
    @Test func aRemovalOfEveryEntryThroughAReplacedStoreRemovesNoFileAndGoesThroughTheReopenedOne() throws {
        let (other, file) = try replaceTheStore()
        #expect(
            throwsStale { () throws(StoreError) in
                _ = try store.removeAll(filePath: { _ in file }, otherFiles: { [file] })
            })
        #expect(FileManager.default.fileExists(atPath: file), "the removal took another store's file")
        #expect(try other.record(for: "image") != nil)
        #expect(try store.reopenIfMoved())
        try store.removeAll(filePath: { _ in file }, otherFiles: { [file] })
        #expect(!FileManager.default.fileExists(atPath: file))
        #expect(try other.record(for: "image") == nil, "the folder's store now holds no entry")
    }

    /// The same for the removal of one key (`Cache.remove`, the store's removal that may evict
    /// for room): the other process's file of the key went, its row stayed. Now neither, until
    /// the store is reopened; then both go.
    @Test func aRemovalOfAKeyThroughAReplacedStoreRemovesNoFileAndGoesThroughTheReopenedOne() throws {
        let (other, file) = try replaceTheStore()
        #expect(
            throwsStale { () throws(StoreError) in
                _ = try store.remove("image", filePath: file, evictingFilesAt: { _ in file }, evicted: { _ in })
            })
        #expect(FileManager.default.fileExists(atPath: file), "the removal took another store's file")
        #expect(try other.record(for: "image") != nil)
        #expect(try store.reopenIfMoved())
        #expect(try store.remove("image", filePath: file, evictingFilesAt: { _ in file }, evicted: { _ in }) != nil)
        #expect(!FileManager.default.fileExists(atPath: file))
        #expect(try other.record(for: "image") == nil)
    }
}
