import Foundation
import Testing

/// How the process tests find `CashierStress` wherever the test runner is.
@Suite struct ChildLocationTests {
    @Test func underXCTestOnMacOSTheFolderHoldingTheTestBundleComesFirst() {
        let bundle = URL(fileURLWithPath: "/work/p/.build/arm64-apple-macosx/debug/CashierPackageTests.xctest")
        let folders = Child.searchFolders(
            bundles: [bundle], argument0: "/Applications/Xcode.app/Contents/Developer/usr/bin/xctest")
        #expect(folders.first?.path == "/work/p/.build/arm64-apple-macosx/debug")
    }

    @Test func aBundlesExecutableLeadsToTheFolderHoldingTheBundle() {
        let executable = URL(
            fileURLWithPath: "/p/.build/debug/CashierPackageTests.xctest/Contents/MacOS/CashierPackageTests")
        let folders = Child.searchFolders(bundles: [executable], argument0: "/usr/lib/swift/pm/swiftpm-testing-helper")
        #expect(folders.first?.path == "/p/.build/debug")
    }

    @Test func onLinuxTheTestBinarysFolderIsSearched() {
        let folders = Child.searchFolders(
            bundles: [URL(fileURLWithPath: "/p/.build/debug")],
            argument0: "/p/.build/x86_64-unknown-linux-gnu/debug/CashierPackageTests.xctest")
        #expect(folders.first?.path == "/p/.build/x86_64-unknown-linux-gnu/debug")
    }

    @Test func theStressExecutableIsFoundFromThisRun() throws {
        let executable = try Child.executable()
        #expect(executable.lastPathComponent == "CashierStress")
        #expect(FileManager.default.isExecutableFile(atPath: executable.path))
    }
}
