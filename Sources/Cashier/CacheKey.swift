/// A typed name for one cached value, declared once as a static constant.
///
/// ```swift
/// enum Keys {
///     static let profile = CacheKey<User>("profile", schemaVersion: 2, lifespan: .hours(1))
///     static let avatar  = CacheKey<Data>("avatar")
/// }
/// let user = cache.value(for: Keys.profile)   // User?
/// ```
///
/// Any string is a valid name: files are named from a hash of it, never from
/// the name itself. Two keys are equal when their name, schema version, lifespan
/// and codec are; migrations are closures and take no part in equality.
public struct CacheKey<Value: Codable & Sendable>: Sendable, Hashable {
    /// The name the value is stored under; the whole name is kept in the entry's header.
    public let name: String
    /// The version of `Value`'s stored form; `nil` ties stored entries to the app version instead.
    ///
    /// An entry written under another schema version is migrated when a
    /// ``Migration`` from that version is given, and discarded otherwise.
    public let schemaVersion: Int?
    /// How long values stay valid; `nil` uses the cache's ``Cache/Configuration/defaultLifespan``.
    public let lifespan: Lifespan?
    /// How values are encoded on disk.
    public let codec: Codec
    /// Conversions from older schema versions, tried when a stored entry's version differs.
    public let migrations: [Migration<Value>]

    /// Declares a key.
    ///
    /// - Parameters:
    ///   - name: Any string; it identifies the value in its cache.
    ///   - schemaVersion: Bump it whenever `Value`'s encoded form changes. `nil`: entries are discarded when the app version changes.
    ///   - lifespan: How long a value stays valid; `nil` for the cache's default.
    ///   - codec: How values are encoded. `Data` is always stored raw.
    ///   - migrations: How to read entries stored under older schema versions.
    public init(
        _ name: String, schemaVersion: Int? = nil, lifespan: Lifespan? = nil,
        codec: Codec = .json, migrations: [Migration<Value>] = []
    ) {
        self.name = name
        self.schemaVersion = schemaVersion
        self.lifespan = lifespan
        self.codec = codec
        self.migrations = migrations
    }

    /// Whether two keys have the same name, schema version, lifespan and codec (migrations are not compared).
    public static func == (lhs: CacheKey, rhs: CacheKey) -> Bool {
        lhs.name == rhs.name && lhs.schemaVersion == rhs.schemaVersion
            && lhs.lifespan == rhs.lifespan && lhs.codec == rhs.codec
    }

    /// Hashes the name, schema version, lifespan and codec (not the migrations).
    public func hash(into hasher: inout Hasher) {
        hasher.combine(name)
        hasher.combine(schemaVersion)
        hasher.combine(lifespan)
        hasher.combine(codec)
    }

    /// The migration that reads entries stored under `version`, if any.
    func migration(from version: Int?) -> Migration<Value>? {
        guard let version else { return nil }
        return migrations.first { $0.version == version }
    }
}

extension CacheKey: CustomStringConvertible {
    /// The key's type, name and schema version, for logs.
    public var description: String {
        "CacheKey<\(Value.self)>(\"\(name)\", schemaVersion: \(schemaVersion.map(String.init) ?? "nil"))"
    }
}
