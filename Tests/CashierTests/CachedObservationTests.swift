import CashierPlatform
import CashierTestSupport
import Foundation
import Observation
import Testing

@testable import Cashier

/// A view model as an app writes it: `@Observable` on the main actor, with a property
/// backed by a key. That this compiles is the first assertion (without
/// `@ObservationIgnored` it does not).
@MainActor @Observable final class ProfileModel {
    @ObservationIgnored @Cached var profile: User?
    @ObservationIgnored let title = "Profile"

    init(_ key: CacheKey<User>, in cache: Cache) {
        _profile = Cached(key, in: cache)
    }
}

@Suite(.timeLimit(.minutes(1))) @MainActor struct CachedObservationTests {
    let folder = TemporaryFolder()
    let key = CacheKey<User>("profile", schemaVersion: 1)

    @Test func cachedPropertyOfAnObservableModelReadsAndWritesTheKey() throws {
        let cache = Cache(makeConfiguration(folder))
        let model = ProfileModel(key, in: cache)
        #expect(model.profile == nil)
        model.profile = User(name: "Ada", age: 36)
        #expect(cache.value(for: key) == User(name: "Ada", age: 36))
        #expect(Cache(makeConfiguration(folder)).value(for: key) == User(name: "Ada", age: 36))
        #expect(model.$profile?.value == User(name: "Ada", age: 36))
        model.profile = nil
        #expect(!cache.contains(key))
    }

    @Test func observerOfTheModelLearnsOfAWriteThroughTheCache() async throws {
        let cache = Cache(makeConfiguration(folder))
        let model = ProfileModel(key, in: cache)
        await changeIsReported(reading: model) {
            try? cache.set(User(name: "Bo", age: 2), for: key)
        }
        #expect(model.profile == User(name: "Bo", age: 2))
    }

    @Test func observerOfTheModelLearnsOfAnAssignmentToTheProperty() async {
        let cache = Cache(makeConfiguration(folder))
        let model = ProfileModel(key, in: cache)
        await changeIsReported(reading: model) { model.profile = User(name: "Cy", age: 3) }
    }

    @Test func observerLearnsOfAChangeMadeByAnotherInstanceOnTheFolder() async throws {
        let cache = Cache(makeConfiguration(folder))
        try cache.set(User(name: "Ada", age: 36), for: key)
        let model = ProfileModel(key, in: cache)
        let other = Cache(makeConfiguration(folder))
        await changeIsReported(reading: model) { other.removeValue(for: key) }
        #expect(model.profile == nil)
    }

    @Test func observerLearnsOfRemoveAll() async throws {
        let cache = Cache(makeConfiguration(folder))
        try cache.set(User(name: "Ada", age: 36), for: key)
        let model = ProfileModel(key, in: cache)
        await changeIsReported(reading: model) { cache.removeAll() }
    }

    @Test func aReadModelReleasesItsSubscriptionWhenItGoes() throws {
        let cache = Cache(makeConfiguration(folder))
        let before = cache.observerCount
        do {
            let model = ProfileModel(key, in: cache)
            _ = model.profile
            #expect(cache.observerCount == before + 1)
            _ = model.profile
            #expect(cache.observerCount == before + 1)
        }
        #expect(cache.observerCount == before)
    }

    @Test func aWriteOnlyPropertySubscribesToNothing() {
        let cache = Cache(makeConfiguration(folder))
        let before = cache.observerCount
        let model = ProfileModel(key, in: cache)
        model.profile = User(name: "Ada", age: 36)
        #expect(cache.observerCount == before)
    }

    /// Tracks a read of `model.profile` as SwiftUI does, runs `change`, and returns once
    /// Observation has reported the change. Bounded: a change never reported records an issue
    /// that says so, instead of hanging until the suite's time limit.
    private func changeIsReported(
        reading model: ProfileModel, seconds: Double = 30, sourceLocation: SourceLocation = #_sourceLocation,
        by change: () -> Void
    ) async {
        let reported = Locked<CheckedContinuation<Bool, Never>?>(nil)
        let resume: @Sendable (Bool) -> Void = { wasReported in
            reported.withLock {
                $0?.resume(returning: wasReported)
                $0 = nil
            }
        }
        // A bound, not a poll: resumed with false only if Observation never calls `onChange`.
        let timeout = Task {
            guard (try? await Task.sleep(for: .seconds(seconds))) != nil else { return }
            resume(false)
        }
        defer { timeout.cancel() }
        let wasReported = await withCheckedContinuation { continuation in
            reported.withLock { $0 = continuation }
            withObservationTracking {
                _ = model.profile
            } onChange: {
                resume(true)
            }
            change()
        }
        if !wasReported {
            Issue.record(
                "Observation did not report the change within \(seconds) seconds", sourceLocation: sourceLocation)
        }
    }
}
