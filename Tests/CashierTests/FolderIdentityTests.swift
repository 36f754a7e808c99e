import CashierTestSupport
import Foundation
import Testing

@testable import Cashier

/// One folder is one cache in a process, however its path is spelled: instances on a
/// symbolic link to the folder and on the folder itself share memory invalidation and observers.
@Suite struct FolderIdentityTests {
    let folder = TemporaryFolder()
    let key = CacheKey<String>("greeting", schemaVersion: 1)

    var real: URL { folder.url.appendingPathComponent("real", isDirectory: true) }
    var link: URL { folder.url.appendingPathComponent("link", isDirectory: true) }

    init() throws {
        try FileManager.default.createDirectory(at: real, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: real.path)
    }

    func cache(at url: URL) -> Cache {
        var configuration = makeConfiguration(folder)
        configuration.location = .directory(url)
        return Cache(configuration)
    }

    @Test func instanceHoldingTheValueInMemorySeesAWriteThroughTheOtherSpelling() throws {
        let viaFolder = cache(at: real)
        let viaLink = cache(at: link)
        try viaFolder.set("v1", for: key)
        #expect(viaFolder.value(for: key) == "v1")
        #expect(viaFolder.memory.peek(key.name) != nil)
        try viaLink.set("v2", for: key)
        #expect(viaFolder.value(for: key) == "v2")
        viaLink.removeValue(for: key)
        #expect(viaFolder.value(for: key) == nil)
    }

    @Test func writeThroughTheLinkIsObservedThroughTheFolder() async throws {
        let viaFolder = cache(at: real)
        let viaLink = cache(at: link)
        try viaFolder.set("v1", for: key)
        let updates = viaFolder.updates(for: key)
        try viaLink.set("v2", for: key)
        let seen = await bounded("the write through the link reaching the folder's stream") {
            for await value in updates where value == "v2" { return true }
            return false
        }
        #expect(seen == true)
    }

    @Test func spellingsOfOneFolderHaveOneIdentity() {
        #expect(DiskTier.resolvedPath(of: link.path) == DiskTier.resolvedPath(of: real.path))
        // Parts not made yet keep their spelling, after the resolved part.
        #expect(DiskTier.resolvedPath(of: link.path + "/a/b") == DiskTier.resolvedPath(of: real.path) + "/a/b")
        #expect(DiskTier.resolvedPath(of: real.path + "/../real") == DiskTier.resolvedPath(of: real.path))
        #expect(DiskTier.resolvedPath(of: "/") == "/")
    }
}
