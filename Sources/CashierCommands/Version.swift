/// The version of Cashier this tool was built from: `cashier-tool --version` prints it.
///
/// The one place the version is written in code. It must equal the newest released
/// `## [X.Y.Z]` heading of CHANGELOG.md, which a test checks; bump both when cutting a release.
enum Version {
    static let current = "0.1.0"
}
