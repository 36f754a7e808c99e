import CashierJSON
import CashierPlatform
import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// The decisions that differ per Apple platform, made by pure functions so Linux tests them:
/// the default folder of an unsandboxed Mac process.
@Suite struct DefaultFolderTests {
    let caches = "/Users/ada/Library/Caches"

    func folder(isMac: Bool = true, isSandboxed: Bool = false, bundleIdentifier: String?, processName: String = "tool")
        -> String
    {
        Cache.ownFolder(
            in: caches, isMac: isMac, isSandboxed: isSandboxed, bundleIdentifier: bundleIdentifier,
            processName: processName)
    }

    @Test func anUnsandboxedMacAppGetsAFolderNamedByItsBundleIdentifier() {
        #expect(folder(bundleIdentifier: "com.example.Notes") == caches + "/com.example.Notes")
    }

    @Test func anUnsandboxedProcessWithoutBundleIdentifierIsNamedByItsExecutable() {
        #expect(folder(bundleIdentifier: nil, processName: "cashier-tool") == caches + "/cashier-tool")
        #expect(folder(bundleIdentifier: "", processName: "cashier-tool") == caches + "/cashier-tool")
    }

    @Test func twoUnsandboxedMacAppsNeverShareAFolder() {
        #expect(folder(bundleIdentifier: "com.example.A") != folder(bundleIdentifier: "com.example.B"))
        #expect(folder(bundleIdentifier: nil, processName: "a") != folder(bundleIdentifier: nil, processName: "b"))
    }

    @Test(arguments: [("my tool", "my%20tool"), ("..", "%2E%2E"), ("a/b", "a%2Fb"), ("", "%")])
    func theOwnersNameIsMadeSafeAsOnePathComponent(name: String, component: String) {
        #expect(folder(bundleIdentifier: nil, processName: name) == caches + "/" + component)
    }

    @Test func sandboxedMacAppsKeepTheirContainer() {
        #expect(folder(isSandboxed: true, bundleIdentifier: "com.example.Notes") == caches)
        let container = "/Users/ada/Library/Containers/com.example.Notes/Data/Library/Caches"
        #expect(
            Cache.ownFolder(
                in: container, isMac: true, isSandboxed: false, bundleIdentifier: "com.example.Notes",
                processName: "Notes")
                == container)
    }

    @Test func iOSTVOSAndWatchOSKeepTheirContainer() {
        #expect(folder(isMac: false, bundleIdentifier: "com.example.Notes") == caches)
        #expect(folder(isMac: false, bundleIdentifier: nil) == caches)
    }

    @Test func aTrailingSlashOfTheBaseIsNotDoubled() {
        #expect(
            Cache.ownFolder(in: "/tmp/", isMac: true, isSandboxed: false, bundleIdentifier: nil, processName: "t")
                == "/tmp/t")
    }

    #if os(Linux)
    @Test func linuxFoldersAreUnchanged() {
        var configuration = Cache.Configuration(name: "api")
        configuration.location = .caches
        let path = Cache.folderPath(for: configuration) ?? ""
        let environment = ProcessInfo.processInfo.environment
        if let xdg = environment["XDG_CACHE_HOME"], xdg.hasPrefix("/") {
            #expect(path == xdg + "/Cashier/api")
        } else {
            #expect(path.hasSuffix("/.cache/Cashier/api"))
        }
    }
    #endif
}

/// CCashierPlatform gives the C library's `_GNU_SOURCE` names, which replaced copies of their values.
@Suite struct CPlatformShimTests {
    #if os(Linux)
    @Test func linuxNamesHaveTheCLibrarysValues() {
        #expect(CCashierPlatform_O_NOATIME == 0o1000000) // <bits/fcntl-linux.h>, x86 and ARM
        #expect(CCashierPlatform_UTIME_OMIT == (1 << 30) - 2) // <bits/stat.h>
        #expect(CCashierPlatform_RENAME_EXCHANGE == 1 << 1) // <linux/fs.h>
    }

    @Test func renameat2ExchangesTwoFiles() throws {
        let folder = TemporaryFolder()
        try FileManager.default.createDirectory(atPath: folder.path, withIntermediateDirectories: true)
        let first = folder.path + "/a"
        let second = folder.path + "/b"
        try Data("a".utf8).write(to: URL(fileURLWithPath: first))
        try Data("b".utf8).write(to: URL(fileURLWithPath: second))
        let result = CCashierPlatform_renameat2(AT_FDCWD, first, AT_FDCWD, second, CCashierPlatform_RENAME_EXCHANGE)
        // EINVAL: a file system that cannot exchange (the library then renames).
        try #require(result == 0 || errno == EINVAL)
        if result == 0 {
            #expect(try Data(contentsOf: URL(fileURLWithPath: first)) == Data("b".utf8))
            #expect(try Data(contentsOf: URL(fileURLWithPath: second)) == Data("a".utf8))
        }
    }
    #endif

    @Test func renameat2FailsWithErrnoWhenTheSourceIsMissing() {
        let result = CCashierPlatform_renameat2(AT_FDCWD, "/nonexistent/a", AT_FDCWD, "/nonexistent/b", 0)
        #expect(result == -1)
        #expect(errno == ENOENT || errno == ENOSYS)
    }
}

private struct Reading: Codable, Equatable {
    var label: String
    var celsius: Float
}

private struct Measurement: Codable, Equatable {
    var label: String
    var value: Double
    var at: Date
}

private struct Counter: Codable, Equatable {
    var name: String
    var count: Int
    var total: Int64
}

private struct Huge: Codable, Equatable {
    var value: UInt64
}

private struct LateReading: Codable, Equatable {
    var celsius: Float
}

/// The JSON fast path where Apple's older Foundation `JSONDecoder` (macOS 13, iOS 16) decodes.
@Suite struct JSONDecoderGenerationTests {
    func decode<V: Decodable>(_ type: V.Type, _ json: String, _ generation: JSONDecoderGeneration) -> (
        value: V?, leftToJSONDecoder: Bool
    ) {
        var met = false
        let value = Data(json.utf8).withUnsafeBytes { bytes in
            try? PayloadDecoder.decode(type, from: bytes, agreeingWith: generation, metSpecialType: &met)
        }
        return (value, met)
    }

    @Test func newFoundationDecodesFloatsOnTheFastPath() {
        let reading = decode(Reading.self, #"{"label":"a","celsius":16777217.000000000000001}"#, .swiftFoundation)
        #expect(reading.value == Reading(label: "a", celsius: 16_777_218))
        #expect(!reading.leftToJSONDecoder)
        let measurement = decode(Measurement.self, #"{"label":"a","value":0.1,"at":1.5}"#, .swiftFoundation)
        #expect(measurement.value == Measurement(label: "a", value: 0.1, at: Date(timeIntervalSinceReferenceDate: 1.5)))
    }

    @Test func olderFoundationLeavesFloatDoubleAndDateToJSONDecoder() {
        let reading = decode(Reading.self, #"{"label":"a","celsius":21.5}"#, .serialization)
        #expect(reading.value == nil)
        #expect(reading.leftToJSONDecoder)
        let measurement = decode(Measurement.self, #"{"label":"a","value":0.1,"at":1.5}"#, .serialization)
        #expect(measurement.value == nil)
        #expect(measurement.leftToJSONDecoder)
    }

    @Test func olderFoundationStillDecodesStringsAndIntegersOnTheFastPath() {
        let counter = decode(Counter.self, #"{"name":"n","count":-3,"total":9223372036854775807}"#, .serialization)
        #expect(counter.value == Counter(name: "n", count: -3, total: .max))
        #expect(!counter.leftToJSONDecoder)
    }

    @Test func olderFoundationLeavesIntegersAboveInt64MaxToJSONDecoder() {
        let json = #"{"value":18446744073709551615}"#
        #expect(decode(Huge.self, json, .swiftFoundation).value == Huge(value: .max))
        let older = decode(Huge.self, json, .serialization)
        #expect(older.value == nil)
        // By value, not by type: an UInt64 that fits Int64 still takes the fast path.
        #expect(!older.leftToJSONDecoder)
        #expect(
            decode(Huge.self, #"{"value":9223372036854775807}"#, .serialization).value == Huge(value: UInt64(Int64.max))
        )
    }

    @Test func decodeJSONAnswersJSONDecodersValueOnOlderFoundation() throws {
        let payload = try JSONEncoder().encode(LateReading(celsius: 0.1))
        let expected = try JSONDecoder().decode(LateReading.self, from: payload)
        #expect(try ValueCoding.decodeJSON(LateReading.self, from: payload, agreeingWith: .serialization) == expected)
        #expect(try ValueCoding.decodeJSON(LateReading.self, from: payload, agreeingWith: .serialization) == expected)
    }

    #if !canImport(Darwin)
    @Test func linuxRunsTheNewFoundation() {
        #expect(JSONDecoderGeneration.current == .swiftFoundation)
    }
    #endif
}

/// The helper the background sweeps and collections run in.
@Suite struct BackgroundActivityTests {
    @Test func whereAppsAreNotSuspendedTheBodyRunsAtOnce() {
        var ran = false
        let result = withBackgroundActivity("test") { () -> Int in
            ran = true
            return 42
        }
        #expect(ran)
        #expect(result == 42)
    }

    @Test func anActivityRunsItsBodyOnTheFirstCallAndIgnoresTheExpiryNotice() {
        let counter = Locked(0)
        let activity = ExpiringActivity {
            counter.withLock {
                $0 += 1
                return $0
            }
        }
        activity.run(expired: false)
        activity.run(expired: true)
        #expect(activity.finished.wait(timeout: .now()) == .success)
        #expect(activity.result == 1)
        #expect(counter.withLock { $0 } == 1)
    }

    @Test func anActivityThatHasAlreadyExpiredNeverRunsItsBody() {
        let counter = Locked(0)
        let activity = ExpiringActivity { counter.withLock { $0 += 1 } }
        activity.run(expired: true)
        #expect(activity.finished.wait(timeout: .now()) == .success)
        #expect(activity.result == nil)
        #expect(counter.withLock { $0 } == 0)
    }
}

/// A stand-in for the system's `performExpiringActivity`: keeps the block, calls it on
/// another thread, and calls it again (expired) after the caller has returned.
private final class FakeSystem: @unchecked Sendable {
    private let kept = Locked<[@Sendable (Bool) -> Void]>([])

    func perform(firstCallExpired: Bool) -> (@escaping @Sendable (Bool) -> Void) -> Void {
        { block in
            self.kept.withLock { $0.append(block) }
            DispatchQueue.global().async { block(firstCallExpired) }
        }
    }

    func sendExpiryNotices() {
        for block in kept.withLock({ $0 }) { block(true) }
    }
}

@Suite struct ExpiringActivityTests {
    @Test func theBodyRunsOnTheSystemsThreadAndTheCallerGetsItsResult() {
        let system = FakeSystem()
        var ran = false
        let result = runExpiringActivity(
            { () -> String in
                ran = true
                return "swept"
            }, perform: system.perform(firstCallExpired: false))
        #expect(ran)
        #expect(result == "swept")
        // The system may call the block again after the caller has gone: nothing escapes, nothing runs.
        system.sendExpiryNotices()
    }

    @Test func noTimeLeftMeansTheBodyNeverRuns() {
        let system = FakeSystem()
        var ran = false
        let result: Void? = runExpiringActivity({ ran = true }, perform: system.perform(firstCallExpired: true))
        #expect(!ran)
        #expect(result == nil)
    }
}
