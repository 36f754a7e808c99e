import CashierStress
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// A hostile review of the room the store keeps for removals on a tight volume
/// (`store.sqlite-reserve`, `EntryStore+Reserve.swift`): what is planted under its name is
/// never written through, never hangs or crashes a call, and a reserve that holds no blocks is
/// no reserve. In `FullVolumeTests`: the small volume is tight, so every store opened on it
/// keeps a reserve, and the full-volume cases fill it.
extension FullVolumeTests {
    /// What a file planted outside the folder holds: short, so that a reserve "completed" in
    /// place would overwrite it.
    static let plantedBytes = Data(repeating: 0x5A, count: 1_000)

    /// A file beside the folder on the same volume, holding ``plantedBytes``.
    static func plantOutside(_ volume: String) throws -> URL {
        let outside = URL(fileURLWithPath: volume).appendingPathComponent("outside-\(UUID().uuidString)")
        try plantedBytes.write(to: outside)
        return outside
    }

    /// "Nothing escapes the cache folder". A hard link planted under the reserve's name, to a file
    /// outside the folder shorter than the reserve, is a regular file to `lstat` and followed by
    /// no `O_NOFOLLOW`: a store that completes a short reserve in place writes its zeros into
    /// that file. The store must make its reserve as a file of its own.
    @Test("Reserve review: a hard link planted at store.sqlite-reserve is never written through")
    func aHardLinkAtTheReserveIsNotWrittenThrough() throws {
        let volume = try #require(FullVolume.folder)
        let folder = URL(fileURLWithPath: volume).appendingPathComponent("reserve-link-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let outside = try Self.plantOutside(volume)
        defer { try? FileManager.default.removeItem(at: outside) }
        try #require(link(outside.path, Self.reservePath(folder)) == 0, "no hard link: errno \(errno)")
        do {
            let cache = Cache(Self.configuration(folder))
            try cache.set(Data(repeating: 7, count: 1_500), for: CacheKey<Data>("a"))
            cache.removeValue(for: CacheKey<Data>("a"))
            cache.waitForBackgroundWork()
        }
        #expect(
            (try? Data(contentsOf: outside)) == Self.plantedBytes,
            "the file outside the folder was written through the reserve's hard link")
    }

    enum Planted: String, CaseIterable, Sendable {
        case symbolicLink
        case fifo
        case directory
    }

    /// A symbolic link (to a short file outside the folder), a FIFO or a directory under the
    /// reserve's name: the store neither writes through it, nor blocks opening it, nor crashes;
    /// writes and reads go on, and a removal on the full volume still commits (evicting the large
    /// entries for room, as with no reserve). What was planted is left as it was.
    @Test(
        "Reserve review: a link, FIFO or directory at store.sqlite-reserve is left alone and blocks nothing",
        arguments: Planted.allCases)
    func somethingPlantedAtTheReserveIsLeftAlone(_ planted: Planted) throws {
        let volume = try #require(FullVolume.folder)
        let folder = URL(fileURLWithPath: volume).appendingPathComponent("reserve-\(planted)-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        try Self.seedForReview(folder)
        let outside = try Self.plantOutside(volume)
        defer { try? FileManager.default.removeItem(at: outside) }
        let reserve = Self.reservePath(folder)
        switch planted {
        case .symbolicLink: try #require(symlink(outside.path, reserve) == 0)
        case .fifo: try #require(mkfifo(reserve, 0o600) == 0)
        case .directory: try #require(mkdir(reserve, 0o700) == 0)
        }
        do {
            // A tight volume: the opening and the reclaim after the removal both keep the reserve.
            let cache = Cache(Self.configuration(folder, memoryCountLimit: 0))
            try cache.set(Data(repeating: 3, count: 1_500), for: CacheKey<Data>("planted"))
            #expect(cache.value(for: CacheKey<Data>("planted")) == Data(repeating: 3, count: 1_500))
            cache.removeValue(for: CacheKey<Data>("planted"))
            cache.waitForBackgroundWork()
        }
        let shm = folder.path + "/" + DiskTier.storeFileName + "-shm"
        try #require(poll { !FileManager.default.fileExists(atPath: shm) }, "the store stayed open")
        let filler = Self.fillVolumeWithAFile(volume)
        var fillerRemoved = false
        defer { if !fillerRemoved { unlink(filler) } }
        let remover = try StressSession(folderPath: folder.path)
        #expect(remover.ask("remove \(Self.reviewRow.name)") == "ok")
        #expect(remover.ask("wait") == "ok")
        remover.exit()
        unlink(filler)
        fillerRemoved = true

        var info = stat()
        #expect(lstat(reserve, &info) == 0, "what was planted at the reserve's name is gone")
        let kind: mode_t =
            switch planted {
            case .symbolicLink: S_IFLNK
            case .fifo: S_IFIFO
            case .directory: S_IFDIR
            }
        #expect(info.st_mode & S_IFMT == kind, "what was planted at the reserve's name was replaced")
        #expect((try? Data(contentsOf: outside)) == Self.plantedBytes, "written through the planted link")
        let fresh = Cache(Self.configuration(folder, memoryCountLimit: 0))
        let removed = Self.largeSeedNames.union([Self.reviewRow.name])
        #expect(Self.wrongSeeds(fresh, removed: removed).isEmpty, "the removal or its evictions for room")
    }

    /// A reserve of the right size that holds no blocks (a sparse file: planted, or restored by
    /// a tool that makes holes of zeros) gives the volume nothing when a removal unlinks it, and
    /// the removal then awaits room in its process's memory only and comes back once it exits.
    /// The store must take such a file for what it is, no reserve, and make one that holds its room.
    @Test("Reserve review: a sparse store.sqlite-reserve is made whole, and a removal on a full volume still commits")
    func aSparseReserveIsMadeWhole() throws {
        let volume = try #require(FullVolume.folder)
        let folder = URL(fileURLWithPath: volume).appendingPathComponent("reserve-sparse-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        try Self.seedForReview(folder)
        let reserve = Self.reservePath(folder)
        let fd = open(reserve, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        try #require(fd >= 0)
        try #require(ftruncate(fd, off_t(1 << 20)) == 0)
        close(fd)
        do {
            // A read opens the store on the tight volume, which keeps its reserve.
            let cache = Cache(Self.configuration(folder, memoryCountLimit: 0))
            #expect(Self.wrongSeeds(cache).isEmpty)
            cache.waitForBackgroundWork()
        }
        let shm = folder.path + "/" + DiskTier.storeFileName + "-shm"
        try #require(poll { !FileManager.default.fileExists(atPath: shm) }, "the store stayed open")
        let filler = Self.fillVolumeWithAFile(volume)
        defer { unlink(filler) }
        let there = try Self.removeReviewRowInAProcessOfItsOwn(folder)
        #expect(there == "nil", "the removed value reads again: the sparse reserve gave back no room")
    }
}

/// The reserve is made when a store opens on a tight volume, at a reclaim, and every MiB a
/// process writes: a process that opened its store while the volume was roomy, and only writes
/// while it goes tight and then full, reaches no opening or reclaim (the review found its removal
/// on the full volume had no reserve to draw on), but measures the volume as it writes.
extension FullVolumeTighteningReviewTests {
    /// DESIGN.md: "Nothing removed is read again, after a kill, in any process". StorageAndLimits
    /// says a removal on a full volume waits in its process's memory only when the reserve is
    /// spent or was never made, "a volume another app filled from roomy to full between two of the
    /// store's reclaims". Here another app only makes the volume tight; this process's own writes
    /// then fill it, long after the volume was tight, and still no reserve was made.
    @Test("Reserve review: a process whose own writes fill a tight volume has a reserve for its removal")
    func aProcessWhoseWritesFillATightVolumeHasAReserve() throws {
        let volume = try #require(TighteningVolume.folder)
        let folder = URL(fileURLWithPath: volume).appendingPathComponent("reserve-tightening-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let session = try StressSession(folderPath: folder.path)
        var sessionExited = false
        defer { if !sessionExited { session.exit() } }
        // Roomy: the store opens and keeps no reserve.
        for index in 0..<20 { #expect(session.ask("fill row-\(index) 1500 \(index)") == "ok") }
        #expect(!FullVolumeTests.hasReserve(folder), "a reserve on a roomy volume")
        // Another app leaves 3 MiB: tight, not full.
        let filler = TighteningVolume.fill(volume, leaving: 3 << 20)
        var fillerRemoved = false
        defer { if !fillerRemoved { unlink(filler) } }
        // This process's own writes fill the volume.
        var answer = "ok"
        for index in 0..<200 where answer == "ok" { answer = session.ask("fill grow-\(index) 100000 \(index)") }
        #expect(answer.hasPrefix("error noSpace"), "the writes never filled the volume: \(answer)")
        // Then rows, until one finds no room even after the log was folded in.
        answer = "ok"
        for index in 0..<2_000 where answer == "ok" { answer = session.ask("fill small-\(index) 1500 \(index)") }
        #expect(answer.hasPrefix("error noSpace"), "the rows never filled the volume: \(answer)")
        #expect(session.ask("remove row-1") == "ok")
        #expect(session.ask("wait") == "ok")
        session.exit()
        sessionExited = true
        unlink(filler)
        fillerRemoved = true
        let fresh = Cache(FullVolumeTests.configuration(folder, memoryCountLimit: 0))
        #expect(
            fresh.value(for: CacheKey<Data>("row-1")) == nil,
            "the removal made on the full volume came back once its process exited (no reserve was ever made)")
    }

    /// CHANGELOG: the reserve is "removed once [the volume] has 64 MiB free again". A folder
    /// carried to a roomy volume with its reserve (or a volume that got room back while no
    /// process removed anything) keeps it until some process's reclaim; the store opened on a
    /// roomy volume should drop it, as it makes one when opened on a tight volume.
    @Test("Reserve review: a store opened on a roomy volume drops the reserve")
    func aStoreOpenedOnARoomyVolumeDropsTheReserve() throws {
        let volume = try #require(TighteningVolume.folder)
        let folder = URL(fileURLWithPath: volume).appendingPathComponent("reserve-roomy-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        do {
            let cache = Cache(FullVolumeTests.configuration(folder))
            try cache.set(Data(repeating: 1, count: 1_500), for: CacheKey<Data>("a"))
        }
        // What a store left when the volume was tight.
        try Data(count: 128 << 10).write(to: URL(fileURLWithPath: FullVolumeTests.reservePath(folder)))
        let session = try StressSession(folderPath: folder.path)
        #expect(session.ask("fill b 1500 2") == "ok")
        session.exit()
        #expect(!FullVolumeTests.hasReserve(folder), "the reserve outlived the opening on a roomy volume")
    }
}
