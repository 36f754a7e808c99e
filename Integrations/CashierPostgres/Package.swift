// swift-tools-version: 6.0
import PackageDescription

// Cashier's shared tier on PostgreSQL, through postgres-nio. Published as its own package: the
// library's manifest names no dependency, and only servers that share a tier pay for this graph.
// swift-service-lifecycle, swift-log and swift-nio are named because this package's code imports
// them; postgres-nio depends on each already, so they add nothing to the build.
let package = Package(
    name: "CashierPostgres",
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .watchOS(.v9)],
    products: [
        .library(name: "CashierPostgres", targets: ["CashierPostgres"])
    ],
    dependencies: [
        .package(name: "Cashier", path: "../.."),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
    ],
    targets: [
        .target(
            name: "CashierPostgres",
            dependencies: [
                .product(name: "Cashier", package: "Cashier"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]),
        .testTarget(
            name: "CashierPostgresTests",
            dependencies: [
                "CashierPostgres",
                .product(name: "Cashier", package: "Cashier"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ]),
    ],
    swiftLanguageModes: [.v6]
)
