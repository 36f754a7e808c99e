// swift-tools-version: 6.0
import PackageDescription

// The library, the `cashier-tool` tool and its plugin depend on the Swift toolchain
// alone. Sources/ holds their modules; Tools/ the executables of development (the store
// benchmark, the tests' child processes, the trace replay). Development-only packages
// (benchmarks) live in Benchmarks/Package.swift.
let package = Package(
    name: "Cashier",
    platforms: [.iOS(.v16), .macOS(.v13), .tvOS(.v16), .watchOS(.v9), .visionOS(.v1)],
    products: [
        .library(name: "Cashier", targets: ["Cashier"]),
        .executable(name: "cashier-tool", targets: ["cashier-tool"]),
        .plugin(name: "CashierPlugin", targets: ["CashierPlugin"]),
    ],
    targets: [
        // The layers under the cache, each a module that knows nothing of the ones above it
        // (swift-collections' InternalCollectionsUtilities is the model; no product names them).
        // What Swift cannot spell of the C library (`_GNU_SOURCE` names), as swift-nio's CNIOLinux.
        .target(name: "CCashierPlatform"),
        // SQLite's one variadic call, made in C (sqlite3_db_config); it includes no SQLite header.
        .target(name: "CCashierSQLite"),
        // Every platform branch of the package: the C library, locks, file calls, system signals,
        // and how SQLite's functions are found (the SDK's, or libsqlite3.so.0 through dlopen).
        .target(name: "CashierPlatform", dependencies: ["CCashierPlatform", "CCashierSQLite"]),
        // Byte helpers the modules below share.
        .target(name: "CashierInternals"),
        // The entry file format: header, reader, checksums (fuzzed and benchmarked on its own).
        .target(name: "CashierEntryFormat", dependencies: ["CashierInternals"]),
        // The JSON fast path: decodes what JSONEncoder wrote, or gives up for JSONDecoder to decide.
        .target(name: "CashierJSON", dependencies: ["CashierInternals"]),
        // Replacement policies (LRU, SIEVE, S3-FIFO, W-TinyLFU, adaptive) behind one protocol:
        // internal to the package, depending on nothing, so the trace replay can link them alone.
        .target(name: "CashierEviction"),
        .target(
            name: "Cashier",
            dependencies: [
                "CashierPlatform", "CashierInternals", "CashierEntryFormat", "CashierJSON", "CashierEviction",
                "CashierStore",
            ]),
        // SQLite through its C API, found at run time by CashierPlatform: builds without sqlite3.h
        // or libsqlite3.so.
        .target(name: "CashierSQLite", dependencies: ["CashierPlatform"]),
        // The store of small entries: one SQLite file per cache folder, an index of every entry.
        .target(name: "CashierStore", dependencies: ["CashierSQLite", "CashierPlatform"]),
        // The tool's commands live in a library so tests can drive them in-process.
        .target(
            name: "CashierCommands",
            dependencies: ["Cashier", "CashierPlatform", "CashierEntryFormat", "CashierStore", "CashierSQLite"]),
        // Named like its product so the command plugin can depend on it (Swift 6.3 rule), and unlike
        // `Cashier` by more than case: on a case-insensitive volume (macOS's default) `Cashier.build`
        // and `cashier.build` would be one folder (SwiftPM issue 4746). The plugin verb stays `cashier`.
        .executableTarget(name: "cashier-tool", dependencies: ["CashierCommands"], path: "Sources/CashierTool"),
        .plugin(
            name: "CashierPlugin",
            capability: .command(
                intent: .custom(verb: "cashier", description: "Inspect and maintain a Cashier cache folder"),
                permissions: []
            ),
            dependencies: ["cashier-tool"]
        ),
        // Tools/: the package's other executables, none a product (dependents never build them).
        // Measures the store against entry files: the row threshold, sweeps, coherence checks.
        .executableTarget(
            name: "CashierStoreBench", dependencies: ["CashierStore", "CashierStoreSupport", "CashierPlatform"],
            path: "Tools/CashierStoreBench"),
        // The second process of the store's tests: writes until killed, sweeps a store afresh.
        .executableTarget(
            name: "CashierStoreChild", dependencies: ["CashierStore", "CashierStoreSupport"],
            path: "Tools/CashierStoreChild"),
        // Whole sweeps and coarse recency made of the store calls the disk tier makes: what the
        // store's tests and tools drive (the library keeps no API that only they would use).
        .target(name: "CashierStoreSupport", dependencies: ["CashierStore"], path: "Tools/CashierStoreSupport"),
        // The child process of the crash-kill and multi-process tests.
        .executableTarget(
            name: "CashierStress",
            dependencies: ["Cashier", "CashierPlatform", "CashierEntryFormat", "CashierTestSupport"],
            path: "Tools/CashierStress"),
        // The trace replay of the eviction policies, the store and a real Cache: Benchmarks/Eviction/README.md.
        .executableTarget(
            name: "CashierReplay", dependencies: ["CashierEviction", "Cashier", "CashierStore", "CashierStoreSupport"],
            path: "Tools/CashierReplay"),
        // What the test targets and the stress child share: a seedable generator, temporary folders,
        // a store's free pages.
        .target(
            name: "CashierTestSupport", dependencies: ["Cashier", "CashierSQLite"], path: "Tests/CashierTestSupport"),
        .testTarget(
            name: "CashierTests",
            dependencies: [
                "Cashier", "CashierPlatform", "CashierEntryFormat", "CashierJSON", "CashierEviction",
                "CashierStore", "CashierSQLite", "CashierTestSupport",
            ],
            exclude: ["Fixtures"]),
        .testTarget(
            name: "CashierCommandsTests",
            dependencies: [
                "CashierCommands", "Cashier", "CashierPlatform", "CashierEntryFormat", "CashierStore",
                "CashierSQLite", "CashierTestSupport",
            ]),
        .testTarget(name: "CashierEvictionTests", dependencies: ["CashierEviction"]),
        // Depends on CashierStoreChild so that it is built: the kill and eviction tests run it.
        .testTarget(
            name: "CashierStoreTests",
            dependencies: [
                "CashierStore", "CashierSQLite", "CashierStoreChild", "CashierStoreSupport", "CashierTestSupport",
            ]
        ),
        // Starts CashierStress processes: kills them mid-write, runs several on one folder.
        .testTarget(
            name: "CashierProcessTests",
            dependencies: ["Cashier", "CashierPlatform", "CashierSQLite", "CashierStress", "CashierTestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
