import CashierStress
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// A volume that was roomy when the store opened and that another app then filled: the case the
/// 2 MiB full-volume tests cannot reach, since a volume under ``DiskTier/tightVolumeBytes``
/// (64 MiB) is tight from the first call and the store keeps its log small from the start.
/// Runs only when `CASHIER_TIGHTENING_VOLUME` names a folder on a volume of 64 to 256 MiB with
/// more than 64 MiB free (`.ci/tightening-volume.sh` mounts an 80 MiB tmpfs below a link).
enum TighteningVolume {
    static let folder: String? = {
        guard let named = ProcessInfo.processInfo.environment["CASHIER_TIGHTENING_VOLUME"], !named.isEmpty else {
            return nil
        }
        try? FileManager.default.createDirectory(atPath: named, withIntermediateDirectories: true)
        guard let size = FullVolume.volumeSize(named), size > DiskTier.tightVolumeBytes, size <= 256 << 20,
            FullVolume.freeBytes(named) > DiskTier.tightVolumeBytes
        else { return nil }
        return named
    }()

    /// Fills the volume of `path` with a file of its own, `filler` in `path`, until under `left` bytes are free.
    static func fill(_ path: String, leaving left: Int) -> String {
        let filler = path + "/filler-\(UUID().uuidString)"
        let descriptor = open(filler, O_CREAT | O_WRONLY, 0o600)
        defer { close(descriptor) }
        let chunk = [UInt8](repeating: 1, count: 64 << 10)
        while FullVolume.freeBytes(path) >= left {
            let wrote = chunk.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            if wrote <= 0 { break }
        }
        return filler
    }
}

@Suite(
    "A volume that became tight since the store opened",
    .serialized,
    .enabled(
        if: TighteningVolume.folder != nil,
        "CASHIER_TIGHTENING_VOLUME does not name a folder on a roomy small volume: skipped"))
struct FullVolumeTighteningReviewTests {
    @Test("Removing an entry on a volume another app filled gives space back, and a large write resumes")
    func aRemovalOnAVolumeThatBecameFullGivesSpaceBack() throws {
        let volume = try #require(TighteningVolume.folder)
        let folder = URL(fileURLWithPath: volume).appendingPathComponent("tightening-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let cache = Cache(FullVolumeTests.configuration(folder))

        // Roomy: rows written as an app writes them, the log as SQLite's own checkpoints leave it.
        for index in 0..<1_500 {
            let key = "row-\(index)"
            try cache.set(StressSession.value(for: key, bytes: 1_000, seed: 1), for: CacheKey<Data>(key))
        }
        cache.waitForBackgroundWork()
        let log =
            (try? FileManager.default.attributesOfItem(atPath: folder.path + "/store.sqlite-wal"))?[.size]
            as? NSNumber
        #expect((log?.intValue ?? 0) > 1 << 20, "the writes left a log of \(log?.intValue ?? 0) bytes")

        // Another app fills the volume, leaving less than one large entry's room.
        let filler = TighteningVolume.fill(volume, leaving: 256 << 10)
        defer { unlink(filler) }
        let freeWhenFull = FullVolume.freeBytes(volume)
        let whenFull = FullVolume.describe(folder)
        let large = StressSession.value(for: "large", bytes: 512 << 10, seed: 2)

        // The user removes entries to make room: a few small ones, each its own call.
        for index in stride(from: 0, to: 1_500, by: 300) { cache.removeValue(for: CacheKey<Data>("row-\(index)")) }
        cache.waitForBackgroundWork()
        let freeAfter = FullVolume.freeBytes(volume)
        #expect(
            freeAfter > freeWhenFull,
            "removing 5 entries freed nothing: \(freeWhenFull) bytes free before, \(freeAfter) after; the folder held \(whenFull), now \(FullVolume.describe(folder))"
        )
        #expect(throws: Never.self, "a large write after the removals (\(freeAfter) bytes free)") {
            try cache.set(large, for: CacheKey<Data>("large"))
        }
        print(
            "tightening volume: \(freeWhenFull) bytes free when full, \(freeAfter) after 5 removals; the folder held \(whenFull), now \(FullVolume.describe(folder))"
        )
    }
}
