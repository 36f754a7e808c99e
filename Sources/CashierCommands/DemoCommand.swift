import Cashier
import CashierPlatform
import Foundation

/// `cashier-tool demo [DIR]`: the library's main job, shown to a newcomer in one run.
///
/// Everything goes through the public API, as an app would use it.
enum DemoCommand {
    static func run(directory: String?, console: Console, now: Date) throws -> ExitStatus {
        let folder = directory ?? defaultFolder
        let cleared = try clearPreviousDemo(in: folder)
        let say = console.print
        say("Cashier demo: a cache in \(folder)")
        if cleared > 0 {
            say("(first removed the \(cleared) \(cleared == 1 ? "entry" : "entries") a previous demo left there)")
        }
        say("")

        // Two caches on the folder, both "app version 1.0": one whose clock says two hours
        // ago (so some entries are older, and one has expired), one at the present moment.
        let earlier = Cache(configuration(folder, appVersion: "1.0", now: now.addingTimeInterval(-2 * 3600)))
        let today = Cache(configuration(folder, appVersion: "1.0", now: now))

        say("1. App version 1.0 stores typed values through static keys:")
        try earlier.set(Forecast(city: "Oslo", celsius: 4.5, summary: "drizzle"), for: DemoKeys.forecast)
        say("   \(DemoKeys.forecast)  lifespan 30m, written 2h ago: expired")
        try earlier.setImage(pngData: Self.png, forKey: DemoKeys.avatar.name)
        earlier.lock(DemoKeys.avatar)
        say("   \(DemoKeys.avatar)  a 16 × 16 PNG through setImage(pngData:forKey:), then locked: never expires")
        try earlier.set(ArticleV1(title: "Typed keys", body: "Declare them once."), for: DemoKeys.articleV1)
        say("   \(DemoKeys.articleV1)")
        try earlier.set(SettingsV1(darkMode: true), for: DemoKeys.settingsV1)
        say("   \(DemoKeys.settingsV1)")
        try today.set(Profile(name: "Ada Lovelace", email: "ada@example.com", visits: 42), for: DemoKeys.profile)
        say("   \(DemoKeys.profile)  lifespan 1h")
        try today.set(["Swift 6 ships", "Caches, typed", "Migrations without crashes"], for: DemoKeys.headlines)
        say("   \(DemoKeys.headlines)  binary property list, lifespan 5m")
        try today.setString("Hello from version 1.0", forKey: "greeting")
        say("   \(CacheKey<String>("greeting"))  through setString(_:forKey:); unversioned, so tied to the app version")
        try today.set(Data((0..<300).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }), for: DemoKeys.blob)
        say("   \(DemoKeys.blob)  raw bytes")
        say("")

        say("2. Reading them back: each read is typed, and a miss is nil, never a crash:")
        say("   value(for: profile)    \(describe(today.value(for: DemoKeys.profile)))")
        say("   value(for: headlines)  \(describe(today.value(for: DemoKeys.headlines)))")
        say("   value(for: forecast)   \(describe(today.value(for: DemoKeys.forecast)))  (expired: a miss)")
        if let entry = today.entry(for: DemoKeys.forecast) {
            say(
                "   entry(for: forecast)   \(entry.value.summary) in \(entry.value.city), isExpired: \(entry.isExpired)  (stale values stay readable)"
            )
        }
        let avatar = today.imageData(forKey: DemoKeys.avatar.name)
        say(
            "   imageData(\"\(DemoKeys.avatar.name)\")  \(avatar.map { "\($0.count) bytes of PNG" } ?? "nil"), locked: \(today.entry(for: DemoKeys.avatar)?.isLocked ?? false)"
        )
        say("   string(\"greeting\")     \(describe(today.string(forKey: "greeting")))")
        say("")

        say("3. An app update: version 2.0 ships, and its models changed:")
        let events = EventRecorder()
        var updated = configuration(folder, appVersion: "2.0", now: now)
        updated.onEvent = events.record
        let update = Cache(updated)
        let article = update.value(for: DemoKeys.articleV2)
        say("   value(for: \(DemoKeys.articleV2))")
        say("     -> \(describe(article)); the entry written under schema 1 is discarded, not decoded into a crash:")
        for event in events.take() where event.isDiscardOrMigration { say("     event: \(describe(event))") }
        try update.set(
            ArticleV2(title: "Typed keys", paragraphs: ["Declare them once.", "Read them anywhere."], author: "Ada"),
            for: DemoKeys.articleV2)
        say("     the app fetches the article again and stores it under schema 2")
        let settings = update.value(for: DemoKeys.settingsV2)
        say("   value(for: \(DemoKeys.settingsV2)) with migrations: [.from(1, as: SettingsV1.self) { … }]")
        say("     -> \(describe(settings)); the old entry is converted and rewritten:")
        for event in events.take() where event.isDiscardOrMigration { say("     event: \(describe(event))") }
        let greeting = update.string(forKey: "greeting")
        say("   string(\"greeting\")  (unversioned, written by 1.0)")
        say("     -> \(describe(greeting)):")
        for event in events.take() where event.isDiscardOrMigration { say("     event: \(describe(event))") }
        let profile = update.value(for: DemoKeys.profile)
        say("   value(for: \(DemoKeys.profile))")
        say("     -> \(describe(profile)): a versioned key owns its compatibility and survives the update")
        _ = events.take()
        say("")

        say("4. What the folder holds now (cashier-tool list):")
        let inventory = try Inventory.load(folder)
        say(inventory.table(sortedBy: .key, now: now.timeIntervalSince1970))
        say("")
        say(inventory.summary)
        if inventory.showsLocation {
            // Where the cache put them: small values as rows of one store file, large ones as files.
            say("(small entries are rows of the store: \(StatsCommand.storeLine(inventory)))")
        }
        say("")
        say("Look closer with:")
        say("   swift run cashier-tool list \(shellQuoted(folder))")
        say("   swift run cashier-tool show \(shellQuoted(folder)) user.profile")
        say("   swift run cashier-tool stats \(shellQuoted(folder))")
        say("   swift run cashier-tool verify \(shellQuoted(folder))")
        return .success
    }

    private static func configuration(_ folder: String, appVersion: String, now: Date) -> Cache.Configuration {
        var configuration = Cache.Configuration(name: "demo")
        configuration.location = .directory(URL(fileURLWithPath: folder, isDirectory: true))
        configuration.appVersion = appVersion
        configuration.now = { now }
        return configuration
    }

    /// The one folder every demo without DIR uses: `Cashier/demo` in the user's cache folder.
    static var defaultFolder: String {
        Cache.folderPath(for: Cache.Configuration(name: "demo"))!
    }

    /// Makes `directory` ready for a run: missing, empty, or holding only what a demo writes,
    /// which is removed so every run starts alike. Returns how many entries it removed.
    ///
    /// - Throws: ``ToolError`` when the folder holds anything else (other files, other keys' entries):
    ///   the demo never writes among, or removes, what it did not write.
    private static func clearPreviousDemo(in directory: String) throws -> Int {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) else { return 0 }
        guard isDirectory.boolValue else { throw ToolError("not a folder: \(directory)", status: .usage) }
        let inventory = try Inventory.load(directory)
        guard inventory.foreign.isEmpty else {
            throw ToolError(
                "\(directory) holds files that are not cache entries (\(inventory.foreign.prefix(3).joined(separator: ", "))); give the demo an empty or new folder"
            )
        }
        // A damaged file whose key does not read is taken for the demo's: the folder holds nothing else.
        let others = inventory.entries.compactMap(\.key).filter { !DemoKeys.names.contains($0) }
        guard others.isEmpty else {
            let shown = others.sorted().prefix(3).map { "\"\(Format.escaped($0))\"" }.joined(separator: ", ")
            throw ToolError(
                "\(directory) holds entries the demo did not write (\(shown)); give the demo an empty or new folder")
        }
        let removal = EntryRemoval(directory: directory, state: inventory.store.state)
        for entry in inventory.entries {
            let shadowed = entry.location == .row ? entry.rowKey.flatMap { inventory.shadowed[$0] } : nil
            if let problem = removal.remove(entry, shadowed: shadowed) {
                throw ToolError("could not remove the previous demo's \(entry.place): \(problem)")
            }
        }
        return inventory.entries.count
    }

    private static func shellQuoted(_ path: String) -> String {
        path.allSatisfy { $0.isLetter || $0.isNumber || "/._-+:@".contains($0) }
            ? path : "'" + path.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }

    private static func describe<T>(_ value: T?) -> String {
        guard let value else { return "nil" }
        if let string = value as? String { return "\"\(string)\"" }
        return String(describing: value)
    }

    static func describe(_ event: CacheEvent) -> String {
        func version(_ version: Int?) -> String { version.map(String.init) ?? "nil" }
        func text(_ text: String?) -> String { text.map { "\"\($0)\"" } ?? "nil" }
        switch event {
        case .hit(let key): return ".hit(key: \"\(key)\")"
        case .miss(let key): return ".miss(key: \"\(key)\")"
        case .write(let key, let bytes): return ".write(key: \"\(key)\", bytes: \(bytes))"
        case .evicted(let key, let bytes): return ".evicted(key: \"\(key)\", bytes: \(bytes))"
        case .failure(let key, let error): return ".failure(key: \(text(key)), error: \(error))"
        case .migrated(let key, let from, let to):
            return ".migrated(key: \"\(key)\", from: \(version(from)), to: \(version(to)))"
        case .discarded(let key, let reason):
            let why: String
            switch reason {
            case .schemaMismatch(let stored, let expected):
                why = ".schemaMismatch(stored: \(version(stored)), expected: \(version(expected)))"
            case .appVersionMismatch(let stored, let current):
                why = ".appVersionMismatch(stored: \(text(stored)), current: \(text(current)))"
            case .typeMismatch(let stored, let expected):
                why = ".typeMismatch(stored: \(text(stored)), expected: \(text(expected)))"
            case .corrupt: why = ".corrupt"
            case .undecodable: why = ".undecodable"
            case .expired: why = ".expired"
            case .migrationFailed: why = ".migrationFailed"
            }
            return ".discarded(key: \"\(key)\", reason: \(why))"
        }
    }

    /// A 16 × 16 RGB gradient, a complete PNG file.
    static let png = Data(
        hex: """
            89504e470d0a1a0a0000000d494844520000001000000010080200000090916836000001964944415478da0dcb410100210800412310c108442082118c40042218c10844e0b94f2318c10877f39fd61ad2e80d6d58633466c31bd1588dddc846354ee3365ea33541842ea860c210a6e042084bd8420a251ce10a4ffed0914eef68c73aa3333bde89ceeaec4e76aa733ab7f3fa1f1451baa28a2943998a2ba12c652ba9947294ab3cfd83214637d4306318d370238c656c238d328e718d677f18c8a00f7460833198031fc4600df620073538833b78e30f1399f4894e6c322673e29398acc99ee4a4266772276ffec111a73bea98339ce9b813ce72b6934e39c7b9cef33f0412f440030b4630030f2258c10e32a8e0043778f187852cfa4217b6188bb9f0452cd6622f72518bb3b88bb7feb0914ddfe8c636633337be89cddaec4d6e6a733677f3f61f12497aa289252399892791ac6427995472929bbcfc4321452fb4b06214b3f0228a55ec228b2a4e718b577f38c8a11ff460877198073fc4611df6210f7538877b78e70f17b9f48b5eec322ef3e297b8accbbee4a52ee7722feffee1218ffed0873dc6633efc118ff5d88f7cd4e33ceee33d3e8674b810f218d8a20000000049454e44ae426082
            """)
}

// MARK: - The demo's models and keys

struct Profile: Codable, Sendable {
    var name: String
    var email: String
    var visits: Int
}

struct Forecast: Codable, Sendable {
    var city: String
    var celsius: Double
    var summary: String
}

/// The article model as app version 1.0 stored it.
struct ArticleV1: Codable, Sendable {
    var title: String
    var body: String
}

/// The article model of app version 2.0: another shape, so schema version 2.
struct ArticleV2: Codable, Sendable {
    var title: String
    var paragraphs: [String]
    var author: String
}

struct SettingsV1: Codable, Sendable {
    var darkMode: Bool
}

struct SettingsV2: Codable, Sendable {
    var theme: String
    var fontSize: Int
}

enum DemoKeys {
    static let profile = CacheKey<Profile>("user.profile", schemaVersion: 1, lifespan: .hours(1))
    static let headlines = CacheKey<[String]>("feed.headlines", lifespan: .minutes(5), codec: .propertyList)
    static let forecast = CacheKey<Forecast>("weather.today", schemaVersion: 1, lifespan: .minutes(30))
    static let avatar = CacheKey<Data>("user.avatar")
    static let blob = CacheKey<Data>("session.blob", schemaVersion: 1)
    static let articleV1 = CacheKey<ArticleV1>("article.42", schemaVersion: 1)
    static let articleV2 = CacheKey<ArticleV2>("article.42", schemaVersion: 2)
    static let settingsV1 = CacheKey<SettingsV1>("settings", schemaVersion: 1)
    static let settingsV2 = CacheKey<SettingsV2>(
        "settings", schemaVersion: 2,
        migrations: [
            .from(1, as: SettingsV1.self) { old in SettingsV2(theme: old.darkMode ? "dark" : "light", fontSize: 14) }
        ])

    /// Every key the demo writes (`greeting` through `setString(_:forKey:)`): what a rerun may remove.
    static let names: Set<String> = [
        profile.name, headlines.name, forecast.name, avatar.name, blob.name, articleV1.name, settingsV1.name,
        "greeting",
    ]
}

/// Collects the events a cache reports, for the demo to print after each step.
private final class EventRecorder: Sendable {
    private let events = Locked<[CacheEvent]>([])

    var record: @Sendable (CacheEvent) -> Void {
        { event in self.events.withLock { $0.append(event) } }
    }

    func take() -> [CacheEvent] {
        events.withLock { events in
            defer { events.removeAll() }
            return events
        }
    }
}

extension CacheEvent {
    fileprivate var isDiscardOrMigration: Bool {
        switch self {
        case .discarded, .migrated: true
        default: false
        }
    }
}

extension Data {
    fileprivate init(hex: String) {
        var bytes: [UInt8] = []
        var high: UInt8?
        for character in hex {
            guard let nibble = character.hexDigitValue.map(UInt8.init) else { continue }
            if let first = high {
                bytes.append(first << 4 | nibble)
                high = nil
            } else {
                high = nibble
            }
        }
        self.init(bytes)
    }
}
