import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

@Suite struct AppVersionTests {
    @Test func bundleVersionComesFirst() {
        let version = Cache.Configuration.defaultAppVersion(
            bundleVersion: "2.0 (41)", environment: ["CASHIER_APP_VERSION": "server-7"])
        #expect(version == "2.0 (41)")
    }

    @Test func environmentVariableStandsInWithoutABundleVersion() {
        let version = Cache.Configuration.defaultAppVersion(
            bundleVersion: nil, environment: ["CASHIER_APP_VERSION": "server-7"])
        #expect(version == "server-7")
    }

    @Test(arguments: [[:], ["CASHIER_APP_VERSION": ""]])
    func noVersionAtAllIsNil(environment: [String: String]) {
        #expect(Cache.Configuration.defaultAppVersion(bundleVersion: nil, environment: environment) == nil)
    }

    @Test func bundleVersionIsTheShortVersionWithoutTheBuildNumber() {
        #expect(Cache.Configuration.bundleVersion(shortVersion: "1.4", build: "212") == "1.4")
        #expect(Cache.Configuration.bundleVersion(shortVersion: "1.4", build: "213") == "1.4")
        #expect(Cache.Configuration.bundleVersion(shortVersion: "1.4", build: "1.4") == "1.4")
    }

    @Test func bundleVersionFallsBackOnTheBuildNumber() {
        #expect(Cache.Configuration.bundleVersion(shortVersion: nil, build: "212") == "212")
        #expect(Cache.Configuration.bundleVersion(shortVersion: "", build: "212") == "212")
        #expect(Cache.Configuration.bundleVersion(shortVersion: nil, build: nil) == nil)
        #expect(Cache.Configuration.bundleVersion(shortVersion: "", build: "") == nil)
    }

    @Test func newConfigurationTakesTheProcessDefault() {
        #expect(Cache.Configuration(name: "x").appVersion == Cache.Configuration.defaultAppVersion)
    }

    @Test func namedWithAnAppVersionUsesIt() {
        let cache = Cache.named("cashier-tests-app-version", appVersion: "7.1")
        #expect(cache.configuration.appVersion == "7.1")
        #expect(cache.configuration.name == "cashier-tests-app-version")
        #expect(Cache.named("cashier-tests-app-version", appVersion: "7.1") === cache)
        #expect(Cache.named("cashier-tests-app-version", appVersion: "7.2") !== cache)
    }

    @Test func namedWithTheDefaultAppVersionIsTheSameInstanceAsNamed() {
        let plain = Cache.named("cashier-tests-default-version")
        #expect(plain.configuration.appVersion == Cache.Configuration.defaultAppVersion)
        #expect(
            Cache.named("cashier-tests-default-version", resolvedAppVersion: Cache.Configuration.defaultAppVersion)
                === plain)
    }

    @Test func anotherAppVersionDiscardsUnversionedEntriesOfANamedCacheFolder() throws {
        let name = "cashier-tests-deploy-\(UUID().uuidString)"
        let key = CacheKey<String>("greeting")
        let first = Cache.named(name, appVersion: "1")
        defer {
            first.removeAll()
            if let folder = first.folder { try? FileManager.default.removeItem(at: folder) }
        }
        try first.set("hello", for: key)
        #expect(Cache.named(name, appVersion: "1").value(for: key) == "hello")
        #expect(Cache.named(name, appVersion: "2").value(for: key) == nil)
    }
}
