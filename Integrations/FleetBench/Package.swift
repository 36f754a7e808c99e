// swift-tools-version: 6.0
import PackageDescription

// A test server for the fleet figures of issue 37 (run.sh, rolling.py): Hummingbird serving one
// model through a Cashier cache whose shared tier is PostgreSQL. Not published; it names the
// same packages as CashierPostgres and CashierHummingbird, so in CI's shared scratch folder it
// compiles only its own target.
let package = Package(
    name: "FleetBench",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Cashier", path: "../.."),
        .package(name: "CashierPostgres", path: "../CashierPostgres"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
    ],
    targets: [
        .executableTarget(
            name: "FleetServer",
            dependencies: [
                .product(name: "Cashier", package: "Cashier"),
                .product(name: "CashierPostgres", package: "CashierPostgres"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ])
    ],
    swiftLanguageModes: [.v6]
)
