// swift-tools-version: 6.0
import PackageDescription

// Cashier as Hummingbird's `PersistDriver`. Published as its own package: Hummingbird's graph
// never reaches the library's, whose manifest names no dependency.
let package = Package(
    name: "CashierHummingbird",
    // Hummingbird 2's own floor.
    platforms: [.macOS(.v14), .iOS(.v17), .tvOS(.v17)],
    products: [
        .library(name: "CashierHummingbird", targets: ["CashierHummingbird"])
    ],
    dependencies: [
        .package(name: "Cashier", path: "../.."),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
    ],
    targets: [
        .target(
            name: "CashierHummingbird",
            dependencies: [
                .product(name: "Cashier", package: "Cashier"),
                .product(name: "Hummingbird", package: "hummingbird"),
            ]),
        .testTarget(
            name: "CashierHummingbirdTests",
            dependencies: [
                "CashierHummingbird",
                .product(name: "Cashier", package: "Cashier"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
            ]),
    ],
    swiftLanguageModes: [.v6]
)
