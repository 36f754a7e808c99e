// swift-tools-version: 6.1
// Benchmarks of Cashier, kept out of the library's package so that its
// dependency graph stays empty (README.md says what is here).
//
//   swift run -c release cashier-ratios               # the ratio table of the README
//   swift run -c release cashier-ratios --footprint   # 100,000 entries: disk, fresh-process times, memory
//   swift run -c release cashier-ratios --ops overwrite 1000   # the SQLite table in a loop, for callgrind
//   swift package benchmark                           # package-benchmark: time and allocations
import Foundation
import PackageDescription

// The root package is referenced by path; its identity is the name of the
// folder it was cloned into, whatever that is.
let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
let cashier = Target.Dependency.product(name: "Cashier", package: root.lastPathComponent)

let package = Package(
    name: "CashierBenchmarks",
    platforms: [.macOS(.v13)],
    dependencies: [
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
        .package(path: ".."),
    ],
    targets: [
        // The system's SQLite through its C API, for the baseline of issue 25 (a key-value table);
        // on Linux it needs libsqlite3-dev (.ci/benchmarks.sh installs it).
        .systemLibrary(name: "CSQLite3", providers: [.apt(["libsqlite3-dev"])]),
        // Each measured operation and the baseline it is compared with, shared by both runners.
        .target(name: "CashierWorkloads", dependencies: [cashier, "CSQLite3"]),
        // Interleaved rounds of each pair in one process, printed as a table of ratios.
        .executableTarget(name: "cashier-ratios", dependencies: ["CashierWorkloads"]),
        .executableTarget(
            name: "CashierBenchmarks",
            dependencies: ["CashierWorkloads", cashier, .product(name: "Benchmark", package: "benchmark")],
            path: "Benchmarks/CashierBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
