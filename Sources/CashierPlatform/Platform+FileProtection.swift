import Foundation

extension Platform {
    /// Gives `path` (an open, still empty temporary file, or a newly made folder)
    /// complete data protection, so it is protected before its first byte is written.
    ///
    /// iOS, tvOS, watchOS and visionOS: `FileManager.setAttributes(_:ofItemAtPath:)` with
    /// `FileAttributeKey.protectionKey` = `FileProtectionType.complete` (Foundation;
    /// `FileProtectionType` is available from iOS 4, tvOS 9, watchOS 2). A folder's class
    /// is inherited by the files later created in it. macOS: nothing is done. Data
    /// protection classes apply there only to some apps on Apple silicon, and setting one
    /// elsewhere fails; a macOS cache relies on its owner-only permissions and FileVault.
    /// Linux: nothing to do (owner-only permissions are the protection).
    ///
    /// - Returns: `nil`, or the `errno` that stands for the failure (`EPERM` when refused, else `EIO`).
    package static func protectCompletely(_ path: String) -> Int32? {
        #if os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)
        do {
            try FileManager.default.setAttributes([.protectionKey: FileProtectionType.complete], ofItemAtPath: path)
        } catch {
            return (error as NSError).code == NSFileWriteNoPermissionError ? EPERM : EIO
        }
        #endif
        return nil
    }

    /// Marks a newly made folder as excluded from iCloud and device backups (re-creatable data
    /// in backed-up storage is an App Review problem).
    ///
    /// Apple platforms: `URLResourceValues.isExcludedFromBackup` (Foundation; iOS 5.1,
    /// macOS 10.8, tvOS 9, watchOS 2), set on the folder, which covers what it holds.
    /// Best effort: a folder that cannot be marked still works as a cache. Linux: nothing.
    package static func excludeFromBackup(_ path: String) {
        #if canImport(Darwin)
        var url = URL(fileURLWithPath: path, isDirectory: true)
        var values = URLResourceValues()
        values.isExcludedFromBackup = true
        try? url.setResourceValues(values)
        #endif
    }
}
