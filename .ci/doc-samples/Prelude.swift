// The names the DocC articles' code samples use without declaring them.
//
// .ci/doc-samples.sh compiles this file into the module DocSamplesPrelude and
// type-checks every sample as the main file of its own module, importing
// Cashier and DocSamplesPrelude, and nothing else: a sample that names a
// Foundation type imports Foundation itself (importing Foundation here does not
// make its names visible there). A sample that declares one of these names
// itself (its own `Keys` or `User`, say) shadows the one here.
//
// Keep these in line with what the articles show: the model types and keys
// match the ones declared in GettingStarted.md and ExpiryAndFetching.md.
import Cashier
import Foundation

// MARK: Models

public struct User: Codable, Sendable {
    public var name: String
    public var email: String

    public init(name: String, email: String) {
        self.name = name
        self.email = email
    }
}

public struct Post: Codable, Sendable {
    public var id: Int
    public var title: String

    public init(id: Int, title: String) {
        self.id = id
        self.title = title
    }
}

/// What version 1 of the profile stored (VersioningAndMigrations.md).
public struct UserV1: Codable, Sendable {
    public var fullName: String

    public init(fullName: String) { self.fullName = fullName }
}

// MARK: Keys

public enum Keys {
    /// GettingStarted.md, ObservingChanges.md.
    public static let profile = CacheKey<User>("profile", schemaVersion: 1, lifespan: .hours(1))
    /// ExpiryAndFetching.md (its samples count on the 5-minute lifespan).
    public static let feed = CacheKey<[String]>("feed", lifespan: .minutes(5))
}

// MARK: Values samples start from

/// The cache most samples read and write.
public let cache = Cache.named("api")

/// A value to store.
public let user = User(name: "Ada", email: "ada@example.com")

/// A network client whose results the samples cache.
public struct API: Sendable {
    public init() {}

    public func feed() async throws -> [String] { ["a", "b"] }

    /// The feed with its response's `max-age`, in seconds (ExpiryAndFetching.md, ComingFromAwesomeCache.md).
    public func feedWithMaxAge() async throws -> (feed: [String], maxAge: TimeInterval) { (["a", "b"], 300) }
}

public let api = API()

/// The observation task of ObservingChanges.md, which a later sample cancels.
public let observation = Task<Void, Never> {}

/// ComingFromSPTPersistentCache.md.
public let cacheFolder = URL(fileURLWithPath: "/tmp/covers", isDirectory: true)
public let albumID = "4aawyAB9vmqN3uQ7FjRGTy"
public let pngData = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
