import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// Two servers on one fake shared tier (``SharedBacking``): caches on folders A and B, each
/// with a clock of its own, so that a test sets the order of their changes' times apart from
/// the order in which the changes arrive.
struct TwoServers {
    let backing = SharedBacking()
    let folderA = TemporaryFolder()
    let folderB = TemporaryFolder()
    let clockA = TestClock()
    let clockB = TestClock()

    /// Server 1's configuration (folder A, clock A) or server 2's (B), on `tier` (the
    /// backing's by default), with a 30-second tier timeout; `retryDelay`: the first wait of
    /// the retry timer of failed changes (``SharedTierWrites/FailedChanges``), if not the default.
    func configuration(
        _ server: Int, events: EventLog? = nil, tier: (any SharedTier)? = nil, timeout: TimeInterval = 30,
        retryDelay: TimeInterval? = nil
    ) -> Cache.Configuration {
        var configuration = makeConfiguration(
            server == 1 ? folderA : folderB, clock: server == 1 ? clockA : clockB, events: events)
        configuration.sharedTier = tier ?? backing.tier(server)
        configuration.sharedTierTimeout = timeout
        if let retryDelay { configuration.sharedTierRetryDelay = retryDelay }
        return configuration
    }
}

/// A suite of tests on ``TwoServers``: the servers' backing, folders and clocks as its own
/// members, and the key most of its tests use, with its slot in the tier.
protocol TwoServerSuite {
    var servers: TwoServers { get }
}

extension TwoServerSuite {
    var backing: SharedBacking { servers.backing }
    var folderA: TemporaryFolder { servers.folderA }
    var folderB: TemporaryFolder { servers.folderB }
    var clockA: TestClock { servers.clockA }
    var clockB: TestClock { servers.clockB }

    static var key: CacheKey<Int> { CacheKey<Int>("n", schemaVersion: 1) }
    static var slot: SharedSlot { SharedSlot(name: "n", version: "schema-1") }

    /// A fetch that must not run: a read given it is answered by a tier.
    static var noFetch: @Sendable () async throws -> Int {
        {
            Issue.record("fetched")
            return -1
        }
    }
}
