import CashierEntryFormat
import CashierStore
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// A hostile review, through the disk tier, of a size sweep's removal by the row ids its walk
/// read (`StoreIndex.chooseVictims` -> `removeRows(_:evictionOrder:walkedStore:)`).
@Suite struct SweepAsWalkedReviewTests {
    let folder = TemporaryFolder()

    static let options = DiskTier.WriteOptions(
        filePermissions: 0o644, folderPermissions: 0o755, synchronize: false, completeProtection: false)

    /// A small entry (a row) of `key`, `locked` or not.
    static func write(_ key: String, _ disk: DiskTier, locked: Bool = false) throws {
        let payload = Data(repeating: 7, count: 100)
        let header = EntryHeader(
            key: key, typeName: "Foundation.Data", format: .raw, createdAt: 0, validatedAt: 0, lifespan: .never,
            schemaVersion: nil, appVersion: nil, isLocked: locked, payloadLength: payload.count)
        _ = try disk.write(DiskTier.fileName(for: key), header: header, payload: payload, options: options)
    }

    static func reads(_ key: String, _ disk: DiskTier) -> Bool {
        if case .entry = disk.read(key: key) { return true }
        return false
    }

    /// A sweep planned on the folder's store; the folder then removed by another process (the
    /// next read finds the store gone and cannot reopen it: the tier forgets it), made again
    /// and written as the first was, the tier opening a new store. Applied now, the plan
    /// removes nothing: its snapshot names the old store's writer, so the walk's ids are not
    /// taken for the new store's rows (a fresh writer counts data versions and changes as the
    /// first did), and none of the old keys is there. (More than
    /// `DiskTier.unlinksWithoutListing` victims: fewer go row by row, each checked.)
    @Test func aSweepPlannedBeforeTheFolderWasMadeAgainDeletesNoRowOfTheNewStore() throws {
        let disk = DiskTier(folder: folder.path, recheckInterval: 0)
        for index in 0..<100 { try Self.write("old\(index)", disk, locked: index == 99) }
        var limits = DiskTier.Limits(size: 1, minimumFreeSpace: nil)
        limits.evictionOrder = .leastRecentlyUsed
        let plan = disk.planSweep(limits: limits, at: 100)
        try #require(!plan.isEmpty)
        try FileManager.default.removeItem(at: folder.url)
        #expect(!Self.reads("old0", disk))
        for index in 0..<100 { try Self.write("new\(index)", disk, locked: index == 0) }
        let removals = disk.apply(plan)
        #expect(removals.isEmpty, "reported \(removals.count) entries of the old store removed")
        let lost = (0..<100).map { "new\($0)" }.filter { !Self.reads($0, disk) }
        #expect(lost.isEmpty, "the new store lost \(lost.count) entries")
        #expect(Self.reads("new0", disk), "the new store's locked entry was deleted")
    }
}
