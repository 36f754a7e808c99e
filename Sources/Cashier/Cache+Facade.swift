import Foundation

/// The string-keyed accessors of the caches Cashier replaces. Each is a
/// ``CacheKey`` under the hood (unversioned, the cache's default lifespan), so it
/// gets the same header, checks and limits.
extension Cache {
    /// Stores a string under `key`. - Throws: ``CacheError`` when it cannot be written.
    public func setString(_ value: String, forKey key: String) throws {
        try set(value, for: CacheKey<String>(key))
    }

    /// The string stored under `key`, or `nil` on a miss.
    public func string(forKey key: String) -> String? {
        value(for: CacheKey<String>(key))
    }

    /// Stores bytes under `key`, raw (no encoding overhead). - Throws: ``CacheError`` when they cannot be written.
    public func setData(_ value: Data, forKey key: String) throws {
        try set(value, for: CacheKey<Data>(key))
    }

    /// The bytes stored under `key`, or `nil` on a miss.
    public func data(forKey key: String) -> Data? {
        value(for: CacheKey<Data>(key))
    }

    /// Stores a dictionary under `key`. - Throws: ``CacheError`` when it cannot be encoded or written.
    public func setDictionary<V: Codable & Sendable>(_ value: [String: V], forKey key: String) throws {
        try set(value, for: CacheKey<[String: V]>(key))
    }

    /// The dictionary stored under `key`, or `nil` on a miss or when it holds another type.
    public func dictionary<V: Codable & Sendable>(forKey key: String) -> [String: V]? {
        value(for: CacheKey<[String: V]>(key))
    }

    /// Stores an array under `key`. - Throws: ``CacheError`` when it cannot be encoded or written.
    public func setArray<E: Codable & Sendable>(_ value: [E], forKey key: String) throws {
        try set(value, for: CacheKey<[E]>(key))
    }

    /// The array stored under `key`, or `nil` on a miss or when it holds another type.
    public func array<E: Codable & Sendable>(forKey key: String) -> [E]? {
        value(for: CacheKey<[E]>(key))
    }

    /// Stores PNG image bytes under `key`, raw.
    ///
    /// - Throws: ``CacheError`` of kind ``CacheError/Kind/invalidValue`` unless the bytes
    ///   start with the PNG signature; ``CacheError`` when they cannot be written.
    public func setImage(pngData: Data, forKey key: String) throws {
        guard Self.isPNG(pngData) else {
            throw CacheError(kind: .invalidValue, key: key, message: "the bytes are not a PNG image (no PNG signature)")
        }
        try set(pngData, for: CacheKey<Data>(key))
    }

    /// The PNG bytes stored under `key`, or `nil` on a miss or when what is stored is not a PNG.
    public func imageData(forKey key: String) -> Data? {
        guard let data = value(for: CacheKey<Data>(key)), Self.isPNG(data) else { return nil }
        return data
    }

    /// Stores any `Codable` value under `key` as JSON. - Throws: ``CacheError`` when it cannot be encoded or written.
    public func setObject<V: Codable & Sendable>(_ value: V, forKey key: String) throws {
        try set(value, for: CacheKey<V>(key))
    }

    /// The value of type `type` stored under `key`, or `nil` on a miss or when another type is stored.
    public func object<V: Codable & Sendable>(forKey key: String, as type: V.Type) -> V? {
        value(for: CacheKey<V>(key))
    }

    /// Removes whatever is stored under `key`, whatever its type.
    public func removeObject(forKey key: String) {
        removeEntry(named: key)
    }

    /// Whether something usable and unexpired is stored under `key`, whatever its type.
    ///
    /// Checks as ``value(for:)`` does for an unversioned key: the whole file is read and
    /// its checksum verified, an entry stored under a schema version or written by another
    /// ``Configuration/appVersion`` is not usable. An unusable entry is removed and reported
    /// as ``CacheEvent/discarded(key:reason:)``, as ``value(for:)`` would. The stored type
    /// cannot be checked without a type: an entry of any type counts.
    public func isValid(forKey key: String) -> Bool {
        guard let metadata = metadata(named: key) else { return false }
        return !metadata.isExpired(at: nowSeconds)
    }

    /// Restarts the lifespan of whatever is stored under `key` from now.
    ///
    /// Checks the entry first as ``isValid(forKey:)`` does: a damaged or outdated entry is
    /// discarded, never refreshed. Nothing happens on a miss.
    public func refreshValidation(forKey key: String) {
        guard metadata(named: key) != nil else { return }
        let now = nowSeconds
        updateMetadata(named: key) { $0.validatedAt = now }
    }

    /// Whether `data` starts with the 8-byte PNG signature.
    static func isPNG(_ data: Data) -> Bool {
        data.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
    }
}

#if canImport(UIKit)
import UIKit

extension Cache {
    /// The image stored under `key` with ``setImage(pngData:forKey:)``, or `nil`.
    public func image(forKey key: String) -> UIImage? {
        imageData(forKey: key).flatMap { UIImage(data: $0) }
    }
}
#elseif canImport(AppKit)
import AppKit

extension Cache {
    /// The image stored under `key` with ``setImage(pngData:forKey:)``, or `nil`.
    public func image(forKey key: String) -> NSImage? {
        imageData(forKey: key).flatMap { NSImage(data: $0) }
    }
}
#endif
