import Foundation

extension Cache {
    /// Removes every entry of every cache stored in `location`, as ``removeAll()`` does for
    /// each: a Settings screen's "Clear cache" in one call.
    ///
    /// For ``Location/caches`` and ``Location/persistent``, every cache folder under that
    /// location's `Cashier` folder counts, those this process never opened included; for
    /// ``Location/directory(_:)``, that one folder; ``Location/memoryOnly`` has none. Each
    /// folder is cleared through a ``Cache`` on it, so the instances this process has open on
    /// it drop their memory tier, keep `count` and `totalSize` right, and tell their
    /// observers. Locked entries go too. The folders themselves stay: deleting a cache folder
    /// while the app runs leaves open instances with a stale index.
    ///
    /// Touches the disk on the calling thread, and returns once each store has given its pages
    /// back, so ``totalSize(in:)`` right after it shows what the folders occupy now: call it
    /// off the main thread. An entry whose removal fails (a read-only folder) stays in place.
    public static func removeAll(in location: Location) {
        removeAll(inFolders: folders(in: location))
    }

    /// Clears each of `folders` through a ``Cache`` on it, and waits for its background work:
    /// the store gives its pages back off the caller's thread, in steps that yield to any
    /// other write of the store, which the caller's next calls would otherwise race.
    package static func removeAll(inFolders folders: [String]) {
        for folder in folders {
            let cache = Cache(Configuration(clearing: folder))
            cache.removeAll()
            cache.waitForBackgroundWork()
        }
    }

    /// The bytes on disk of every cache stored in `location` (the folders ``removeAll(in:)``
    /// clears): what a Settings screen shows beside "Clear cache".
    ///
    /// Reads each folder's index, scanning a folder this process has not opened yet: call it
    /// off the main thread.
    public static func totalSize(in location: Location) -> Int {
        totalSize(ofFolders: folders(in: location))
    }

    /// The sum of ``totalSize`` of a ``Cache`` on each of `folders`.
    package static func totalSize(ofFolders folders: [String]) -> Int {
        folders.reduce(0) { $0 + Cache(Configuration(clearing: $1)).totalSize }
    }

    /// The cache folders in `location`: the subfolders of its `Cashier` folder (not following
    /// symbolic links), or the one folder of a ``Location/directory(_:)``.
    static func folders(in location: Location) -> [String] {
        switch location {
        case .memoryOnly: return []
        case .directory(let url): return [url.standardizedFileURL.path]
        case .caches: return cacheFolders(under: platformFolder(caches: true) + "/Cashier")
        case .persistent: return cacheFolders(under: platformFolder(caches: false) + "/Cashier")
        }
    }

    /// The folders directly inside `parent`, sorted; none when it does not exist.
    package static func cacheFolders(under parent: String) -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: parent)) ?? []
        return names.sorted().compactMap { name in
            let path = parent + "/" + name
            let type = (try? FileManager.default.attributesOfItem(atPath: path))?[.type] as? FileAttributeType
            return type == .typeDirectory ? path : nil
        }
    }
}

extension Cache.Configuration {
    /// A configuration on exactly `folder`, with no bounds of its own: the instance
    /// ``Cache/removeAll(in:)`` clears a folder through.
    fileprivate init(clearing folder: String) {
        self.init(name: (folder as NSString).lastPathComponent)
        location = .directory(URL(fileURLWithPath: folder, isDirectory: true))
    }
}
