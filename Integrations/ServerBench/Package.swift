// swift-tools-version: 6.0
import PackageDescription

// Issue 35's server figure (run.sh): one Hummingbird 2 server answering the same routes with a
// Cashier cache (`/cached/…`) and without one (`/plain/…`), so wrk measures both in one run on
// one process. Not published; it names only Cashier and Hummingbird.
let package = Package(
    name: "ServerBench",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(name: "Cashier", path: "../.."),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
    ],
    targets: [
        .executableTarget(
            name: "ServerBench",
            dependencies: [
                .product(name: "Cashier", package: "Cashier"),
                .product(name: "Hummingbird", package: "hummingbird"),
            ])
    ],
    swiftLanguageModes: [.v6]
)
