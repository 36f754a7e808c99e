import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A ``CacheError`` is matched by kind in a `catch` clause, and a kind is its token, not its words.
@Suite struct CacheErrorTests {
    let folder = TemporaryFolder()

    /// A `set` on a volume that is full: it throws a ``CacheError/Kind/noSpace`` error.
    func setOnAFullVolume() throws {
        let faults = FaultyFileSystem()
        faults.set(.fail(ENOSPC), for: .writeNewFile)
        var configuration = makeConfiguration(folder)
        configuration.fileSystem = faults
        try Cache(configuration).set(1, for: CacheKey<Int>("n"))
    }

    @Test func catchClauseMatchesAnErrorByItsKind() {
        var caught = false
        do {
            try setOnAFullVolume()
        } catch CacheError.Kind.noSpace {
            caught = true
        } catch {
            Issue.record("not matched by CacheError.Kind.noSpace: \(error)")
        }
        #expect(caught)
    }

    @Test func catchClauseOfAnotherKindDoesNotMatch() {
        var caughtByOtherKind = false
        var caughtAfter: (any Error)?
        do {
            try setOnAFullVolume()
        } catch CacheError.Kind.permissionDenied {
            caughtByOtherKind = true
        } catch {
            caughtAfter = error
        }
        #expect(!caughtByOtherKind)
        #expect((caughtAfter as? CacheError)?.kind == .noSpace)
    }

    @Test func kindPatternMatchesNoErrorOfAnotherType() {
        struct Unrelated: Error {}
        let error: any Error = Unrelated()
        #expect(!(CacheError.Kind.noSpace ~= error))
        switch error {
        case CacheError.Kind.noSpace: Issue.record("an unrelated error matched a kind")
        default: break
        }
    }

    @Test func kindIsItsTokenNotItsWords() {
        #expect(CacheError.Kind.noSpace.rawValue == "noSpace")
        #expect(CacheError.Kind(rawValue: "noSpace") == .noSpace)
        #expect(CacheError.Kind(rawValue: "no space") != .noSpace)
        #expect(CacheError.Kind.noSpace.description == "no space")
        #expect(CacheError.Kind.ioFailure.description == "I/O failure")
        #expect(CacheError.Kind(rawValue: "custom").description == "custom")
    }

    @Test func everyKindHasItsOwnTokenAndWords() {
        let kinds: [CacheError.Kind] = [
            .encodingFailed, .invalidValue, .folderUnavailable, .permissionDenied, .untrustedFolder, .noSpace,
            .ioFailure, .decodingFailed, .fetchFailed,
        ]
        #expect(Set(kinds).count == kinds.count)
        #expect(Set(kinds.map(\.description)).count == kinds.count)
        for kind in kinds { #expect(kind.description != kind.rawValue) }
    }

    @Test func eventsAndDiscardReasonsAreHashable() {
        let events: Set<CacheEvent> = [
            .hit(key: "a"), .hit(key: "a"), .discarded(key: "a", reason: .corrupt),
            .failure(key: nil, error: CacheError(kind: .noSpace, message: "full")),
        ]
        #expect(events.count == 3)
        let reasons: Set<DiscardReason> = [.expired, .expired, .schemaMismatch(stored: 1, expected: 2)]
        #expect(reasons.count == 2)
    }
}
