import CashierEntryFormat
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// A hostile review of the check a removal of planned rows makes before each file (the store's
/// path must still name the store open): a cache folder named through a symbolic link, as a
/// deployment's `current` link names a release's folder.
@Suite struct SweepThroughFolderLinkReviewTests {
    let base = TemporaryFolder()
    var link: String { base.path + "/current" }

    init() throws {
        for name in ["one", "two"] {
            try FileManager.default.createDirectory(
                atPath: base.path + "/" + name, withIntermediateDirectories: true)
        }
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: "one")
    }

    /// A large entry's file (every entry a file: `rowSizeLimit` 0), indexed by the folder's store.
    static func writeLarge(_ key: String, _ disk: DiskTier) throws {
        let payload = Data(repeating: 7, count: 1_000)
        let header = EntryHeader(
            key: key, typeName: "Foundation.Data", format: .raw, createdAt: 0, validatedAt: 0, lifespan: .never,
            schemaVersion: nil, appVersion: nil, isLocked: false, payloadLength: payload.count)
        _ = try disk.write(
            DiskTier.fileName(for: key), header: header, payload: payload,
            options: .init(
                filePermissions: 0o644, folderPermissions: 0o755, synchronize: false, completeProtection: false))
    }

    /// No false `ESTALE`: the store opens the link's resolved path, the files are named through
    /// the link, and a removal of planned rows still removes the large entry's file and row.
    @Test func aPlannedRemovalThroughAFolderLinkRemovesTheLargeEntrysFile() throws {
        let disk = DiskTier(folder: link, rowSizeLimit: 0)
        try Self.writeLarge("image", disk)
        let file = base.path + "/one/" + DiskTier.fileName(for: "image")
        #expect(FileManager.default.fileExists(atPath: file))
        let removals = disk.apply(disk.planRemovals { $0.key == "image" })
        #expect(removals.count == 1)
        #expect(!FileManager.default.fileExists(atPath: file))
        guard case .absent = disk.read(key: "image") else {
            Issue.record("the removed entry still reads")
            return
        }
    }

    /// The link now names another folder, which another process's cache uses (its own store,
    /// its own large entry of the same key). This process's store is still at the old folder's
    /// resolved path, so the check passes; but the files are named through the link: the plan's
    /// removal unlinks the other folder's file, and the other cache's entry is lost.
    @Test func aPlannedRemovalAfterTheFolderLinkMovedRemovesNoFileOfTheOtherFolder() throws {
        let disk = DiskTier(folder: link, rowSizeLimit: 0)
        try Self.writeLarge("image", disk)
        let plan = disk.planRemovals { $0.key == "image" }
        try FileManager.default.removeItem(atPath: link)
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: "two")
        let other = DiskTier(folder: link, rowSizeLimit: 0)
        try Self.writeLarge("image", other)
        let othersFile = base.path + "/two/" + DiskTier.fileName(for: "image")
        #expect(FileManager.default.fileExists(atPath: othersFile))
        _ = disk.apply(plan)
        #expect(FileManager.default.fileExists(atPath: othersFile), "the sweep removed the other folder's entry")
        guard case .entry = other.read(key: "image") else {
            Issue.record("the other folder's cache lost its entry")
            return
        }
    }
}

/// The change's own case one level up, through the disk tier: a planned removal (a sweep's,
/// a collection's) made before another process removed the folder and made it again.
@Suite struct SweepOfAReplacedFolderReviewTests {
    let folder = TemporaryFolder()

    /// The removal refuses (ESTALE inside the store): nothing is reported removed and the other
    /// process's large entry keeps its file; the next plan (the store rechecked at once:
    /// `recheckInterval` 0) is the new store's, and its removal goes through.
    @Test func aStalePlanRemovesNothingAndTheNextPlanIsTheNewStores() throws {
        let disk = DiskTier(folder: folder.path, rowSizeLimit: 0, recheckInterval: 0)
        let links = SweepThroughFolderLinkReviewTests.self
        try FileManager.default.createDirectory(atPath: folder.path, withIntermediateDirectories: true)
        try links.writeLarge("image", disk)
        let plan = disk.planRemovals { $0.key == "image" }
        try FileManager.default.removeItem(atPath: folder.path)
        try FileManager.default.createDirectory(atPath: folder.path, withIntermediateDirectories: true)
        let other = DiskTier(folder: folder.path, rowSizeLimit: 0)
        try links.writeLarge("image", other)
        let file = folder.path + "/" + DiskTier.fileName(for: "image")
        #expect(disk.apply(plan).isEmpty)
        #expect(FileManager.default.fileExists(atPath: file), "the stale sweep removed the other process's entry")
        #expect(disk.apply(disk.planRemovals { $0.key == "image" }).count == 1)
        #expect(!FileManager.default.fileExists(atPath: file))
    }
}
