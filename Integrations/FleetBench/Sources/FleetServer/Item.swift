import Cashier

/// The one model the test server serves, in the shape one build of the app stores it.
///
/// The two schema versions stand for two builds of an app, the old one and the new one of a
/// rolling deploy: one executable serves either (`--schema 1` or `--schema 2`), so CI builds it
/// once. Each build only ever names its own key, as two real builds would.
protocol Item: Codable, Sendable {
    static var schemaVersion: Int { get }
    /// The item `id` at `version`, as the origin has it: every other field follows from these
    /// two, so a client can tell a right value from a wrong one.
    init(id: Int, version: Int)
    var id: Int { get }
    var version: Int { get }
    /// Whether the fields that follow from `id` and `version` do.
    var isConsistent: Bool { get }
    static func key(_ id: Int, lifespan: Lifespan) -> CacheKey<Self>
}

/// Schema 1, the old build's: a label.
struct ItemV1: Item {
    var id: Int
    var version: Int
    var label: String

    static let schemaVersion = 1

    init(id: Int, version: Int) {
        self.id = id
        self.version = version
        label = "item-\(id)-v\(version)"
    }

    var isConsistent: Bool { label == "item-\(id)-v\(version)" }

    static func key(_ id: Int, lifespan: Lifespan) -> CacheKey<ItemV1> {
        CacheKey("item-\(id)", schemaVersion: 1, lifespan: lifespan)
    }
}

/// Schema 2, the new build's: a title and tags, another encoded shape. It migrates schema 1's
/// records, so the new build starts warm from the old one's.
struct ItemV2: Item {
    var id: Int
    var version: Int
    var title: String
    var tags: [String]

    static let schemaVersion = 2

    init(id: Int, version: Int) {
        self.id = id
        self.version = version
        title = "Item \(id), version \(version)"
        tags = ["v\(version)"]
    }

    var isConsistent: Bool { title == "Item \(id), version \(version)" && tags == ["v\(version)"] }

    static func key(_ id: Int, lifespan: Lifespan) -> CacheKey<ItemV2> {
        CacheKey(
            "item-\(id)", schemaVersion: 2, lifespan: lifespan,
            migrations: [.from(1, as: ItemV1.self) { ItemV2(id: $0.id, version: $0.version) }])
    }
}
