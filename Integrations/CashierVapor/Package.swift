// swift-tools-version: 6.0
import PackageDescription

// Cashier as a Vapor `Cache` (`app.caches.use(.cashier(...))`). Published as its own package:
// Vapor's graph never reaches the library's, whose manifest names no dependency.
let package = Package(
    name: "CashierVapor",
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .watchOS(.v9)],
    products: [
        .library(name: "CashierVapor", targets: ["CashierVapor"])
    ],
    dependencies: [
        .package(name: "Cashier", path: "../.."),
        .package(url: "https://github.com/vapor/vapor.git", from: "4.122.3"),
    ],
    targets: [
        .target(
            name: "CashierVapor",
            dependencies: [
                .product(name: "Cashier", package: "Cashier"),
                .product(name: "Vapor", package: "vapor"),
            ]),
        .testTarget(
            name: "CashierVaporTests",
            dependencies: [
                "CashierVapor",
                .product(name: "Cashier", package: "Cashier"),
                .product(name: "VaporTesting", package: "vapor"),
            ]),
    ],
    swiftLanguageModes: [.v6]
)
