import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// A class value: a read copies out a reference, whose object must outlive the record.
private final class ReviewBox: Codable, Sendable, Equatable {
    let name: String
    let items: [Int]

    init(generation: Int) {
        name = "generation-\(generation)"
        items = Array(0..<(generation % 50 + 1))
    }

    /// A box is whole when its name and its items agree (a torn or freed one would not).
    var isWhole: Bool {
        guard let generation = Int(name.dropFirst("generation-".count)), generation >= 0 else { return false }
        return items == Array(0..<(generation % 50 + 1))
    }

    static func == (lhs: ReviewBox, rhs: ReviewBox) -> Bool { lhs.name == rhs.name && lhs.items == rhs.items }
}

private enum ReviewShape: Codable, Sendable, Equatable {
    case circle(radius: Double)
    case polygon([String: [Int]])
    case nothing
}

private struct ReviewLarge: Codable, Sendable, Equatable {
    var text: String
    var shapes: [ReviewShape]
    var when: Date
    var link: URL
    var maybe: Int?
}

/// Written with `count` as a string when it is odd: only a decoder that lets `init(from:)`
/// catch a type mismatch and try again reads it (`PayloadDecoder` may give up; `JSONDecoder` must).
private struct ReviewLenient: Codable, Sendable, Equatable {
    var count: Int

    init(count: Int) { self.count = count }

    enum CodingKeys: String, CodingKey { case count }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        if let count = try? container.decode(Int.self, forKey: .count) {
            self.count = count
        } else {
            let text = try container.decode(String.self, forKey: .count)
            guard let count = Int(text) else {
                throw DecodingError.dataCorruptedError(forKey: .count, in: container, debugDescription: "not a count")
            }
            self.count = count
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        if count.isMultiple(of: 2) {
            try container.encode(count, forKey: .count)
        } else {
            try container.encode(String(count), forKey: .count)
        }
    }
}

/// A value that no decoder reads back once written with `poisoned`: its decode throws.
private struct ReviewRefusing: Codable, Sendable, Equatable {
    var poisoned: Bool

    init(poisoned: Bool) { self.poisoned = poisoned }

    enum CodingKeys: String, CodingKey { case poisoned }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        poisoned = try container.decode(Bool.self, forKey: .poisoned)
        if poisoned {
            throw DecodingError.dataCorruptedError(forKey: .poisoned, in: container, debugDescription: "refused")
        }
    }
}

/// A hostile review of f4be28b (the read path's `Found` holds the record, the disk's value is
/// copied out of its address by `value(for:)`'s closure, `ValueCoding.decode` uses `try`): values
/// of non-trivial types, read from disk with no memory tier (the read's own record is the only
/// owner of the value), replaced, removed and evicted by other threads while reads copy them out.
@Suite("Read path review")
struct ReadPathReviewTests {
    private static let large = ReviewLarge(
        text: String(repeating: "é✓ text ", count: 4_000),
        shapes: [.circle(radius: 2.5), .polygon(["a": [1, 2, 3], "b": []]), .nothing],
        when: Date(timeIntervalSince1970: 1_700_000_000.25), link: URL(string: "https://example.com/a?b=c")!,
        maybe: nil)

    /// Every read API, on a fresh cache whose memory tier holds nothing (`memoryCountLimit` 0:
    /// the record the read makes is not kept, so `Found` alone owns the value it copies out).
    private func readsWhole<V: Codable & Sendable & Equatable>(
        _ value: V, _ key: CacheKey<V>, folder: TemporaryFolder, memoryCountLimit: Int?
    ) async throws {
        let writer = Cache(makeConfiguration(folder))
        try writer.set(value, for: key)
        var configuration = makeConfiguration(folder)
        configuration.memoryCountLimit = memoryCountLimit
        let cache = Cache(configuration)
        #expect(cache.value(for: key) == value, "value(for:) of \(V.self)")
        #expect(cache.entry(for: key)?.value == value, "entry(for:) of \(V.self)")
        let fetched = try await cache.value(for: key) { () async throws -> V in
            Issue.record("fetched \(V.self) although it is stored")
            return value
        }
        #expect(fetched == value, "value(for:fetch:) of \(V.self)")
        var updates = cache.updates(for: key).makeAsyncIterator()
        let first = await updates.next()
        #expect(first == .some(value), "updates(for:)'s current value of \(V.self)")
    }

    @Test(
        "Values of classes, enums, large structs, raw Data and optionals read back whole from disk through every read API",
        arguments: [0, 1_000] as [Int])
    func nonTrivialValuesReadBackWhole(memoryCountLimit: Int) async throws {
        let folder = TemporaryFolder()
        try await readsWhole(
            ReviewBox(generation: 7), CacheKey("box"), folder: folder, memoryCountLimit: memoryCountLimit)
        try await readsWhole(
            ReviewShape.polygon(["x": [4, 5]]), CacheKey("shape"), folder: folder, memoryCountLimit: memoryCountLimit)
        try await readsWhole(Self.large, CacheKey("large"), folder: folder, memoryCountLimit: memoryCountLimit)
        try await readsWhole(
            Data((0..<70_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }), CacheKey("data-file"), folder: folder,
            memoryCountLimit: memoryCountLimit)
        try await readsWhole(Data([1, 2, 3]), CacheKey("data-row"), folder: folder, memoryCountLimit: memoryCountLimit)
        try await readsWhole(Int?.none, CacheKey("nil-int"), folder: folder, memoryCountLimit: memoryCountLimit)
        try await readsWhole(
            [String: [ReviewBox]](uniqueKeysWithValues: [("k", [ReviewBox(generation: 3)])]), CacheKey("nested"),
            folder: folder, memoryCountLimit: memoryCountLimit)
        try await readsWhole(
            ReviewLenient(count: 5), CacheKey("lenient-odd"), folder: folder, memoryCountLimit: memoryCountLimit)
        try await readsWhole(
            ReviewLenient(count: 6), CacheKey("lenient-even"), folder: folder, memoryCountLimit: memoryCountLimit)
    }

    /// A payload no decoder reads is a miss and is discarded (`try`, not `try?`, in the JSON
    /// path must not turn a refusal into a trap or a value); a readable one of the same type
    /// under another key still reads.
    @Test("A payload whose decode throws is a discarded miss; one of the same type that decodes still reads")
    func aPayloadThatThrowsIsAMiss() throws {
        let folder = TemporaryFolder()
        let events = EventLog()
        try Cache(makeConfiguration(folder)).set(ReviewRefusing(poisoned: true), for: CacheKey("bad"))
        try Cache(makeConfiguration(folder)).set(ReviewRefusing(poisoned: false), for: CacheKey("good"))
        var configuration = makeConfiguration(folder, events: events)
        configuration.memoryCountLimit = 0
        let cache = Cache(configuration)
        #expect(cache.value(for: CacheKey<ReviewRefusing>("bad")) == nil)
        #expect(cache.value(for: CacheKey<ReviewRefusing>("good")) == ReviewRefusing(poisoned: false))
        #expect(cache.entry(for: CacheKey<ReviewRefusing>("bad")) == nil, "discarded, not read on the second try")
        #expect(
            events.all.contains { if case .discarded(key: "bad", _) = $0 { true } else { false } },
            "the undecodable entry was not discarded: \(events.all)")
    }

    /// A migrated value (decoded as the old type, converted) and a raw `Data` payload migrated
    /// to another type come out of the read's record whole, with no memory tier.
    @Test("Migrated values, from JSON and from a raw Data payload, read back whole with no memory tier")
    func migratedValuesReadBackWhole() throws {
        let folder = TemporaryFolder()
        let writer = Cache(makeConfiguration(folder))
        try writer.set(ReviewShape.circle(radius: 3), for: CacheKey("shape", schemaVersion: 1))
        try writer.set(Data("raw text".utf8), for: CacheKey("raw", schemaVersion: 1))
        var configuration = makeConfiguration(folder)
        configuration.memoryCountLimit = 0
        let cache = Cache(configuration)
        let shapeKey = CacheKey<ReviewBox>(
            "shape", schemaVersion: 2,
            migrations: [
                .from(1, as: ReviewShape.self) { shape in
                    guard case .circle(let radius) = shape else { return ReviewBox(generation: 0) }
                    return ReviewBox(generation: Int(radius))
                }
            ])
        let rawKey = CacheKey<String>(
            "raw", schemaVersion: 2, migrations: [.from(1, as: Data.self) { String(decoding: $0, as: UTF8.self) }])
        #expect(cache.value(for: shapeKey) == ReviewBox(generation: 3))
        #expect(cache.value(for: rawKey) == "raw text")
        #expect(cache.value(for: shapeKey) == ReviewBox(generation: 3), "read again, as migrated")
    }

    /// Reads racing writes that replace the value, removals and evictions (a memory tier of one
    /// value, two keys): every value a read copies out is one that was written, whole. Under
    /// ASan or TSan (`swift test --sanitize=address|thread`) this pins the record's lifetime.
    @Test("Reads racing replacements, removals and evictions copy out whole values only", arguments: [0, 1] as [Int])
    func readsRacingReplacementsCopyOutWholeValues(memoryCountLimit: Int) async throws {
        let folder = TemporaryFolder()
        var configuration = makeConfiguration(folder)
        configuration.memoryCountLimit = memoryCountLimit
        let cache = Cache(configuration)
        let keys = [CacheKey<ReviewBox>("a"), CacheKey<ReviewBox>("b")]
        let texts = [CacheKey<String>("text-a"), CacheKey<String>("text-b")]
        for (index, key) in keys.enumerated() { try cache.set(ReviewBox(generation: index), for: key) }
        let torn = await withTaskGroup(of: [String].self) { group in
            group.addTask {
                var failures: [String] = []
                for generation in 0..<300 {
                    let key = keys[generation % 2]
                    do {
                        if generation % 7 == 0 {
                            cache.removeValue(for: key)
                        } else {
                            try cache.set(ReviewBox(generation: generation), for: key)
                        }
                        try cache.set(String(repeating: "\(generation % 10)", count: 64), for: texts[generation % 2])
                    } catch {
                        failures.append("write \(generation): \(error)")
                    }
                }
                return failures
            }
            for reader in 0..<3 {
                group.addTask {
                    var failures: [String] = []
                    for round in 0..<400 {
                        let key = keys[(round + reader) % 2]
                        let box: ReviewBox? =
                            switch round % 3 {
                            case 0: cache.value(for: key)
                            case 1: cache.entry(for: key)?.value
                            default: cache.contains(key) ? cache.value(for: key) : nil
                            }
                        if let box, !box.isWhole {
                            failures.append("torn box \(box.name) with \(box.items.count) items")
                        }
                        if let text = cache.value(for: texts[round % 2]),
                            text.count != 64 || Set(text).count != 1
                        {
                            failures.append("torn text \(text.prefix(10))… of \(text.count)")
                        }
                    }
                    return failures
                }
            }
            return await group.reduce(into: []) { $0 += $1 }
        }
        #expect(torn.isEmpty, "\(torn.count) torn reads: \(torn.prefix(5))")
    }
}
