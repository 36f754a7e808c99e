import CashierInternals
import Foundation

extension DiskTier {
    /// The spelling of `key` its file name is hashed from: its Unicode canonical composition (NFC).
    ///
    /// Swift compares strings by canonical equivalence (`"caf\u{E9}" == "cafe\u{301}"`), and so do
    /// the memory tier, the key locks, fetch sharing and observers, which key dictionaries by the
    /// `String` itself. File names are hashed from bytes, so they are made from one spelling per
    /// key: equivalent spellings have one NFC form. An ASCII key is its own NFC form and is hashed
    /// as it is, so the file names of ASCII keys never changed (the common case costs one pass over
    /// the bytes, eight at a time).
    ///
    /// Entries written before this rule under a spelling that is not NFC (a decomposed `é`, as
    /// HFS+ file names spell it) live in files no read looks for any more: they are orphans, and
    /// garbage collection removes them (their file name is not the one their stored key hashes to).
    static func canonicalSpelling(of key: String) -> String {
        let isASCII =
            key.utf8.withContiguousStorageIfAvailable { UnsafeRawBufferPointer($0).isASCII }
            ?? key.utf8.allSatisfy { $0 < 0x80 }
        return isASCII ? key : key.precomposedStringWithCanonicalMapping
    }

    /// Whether `fileName` is where an entry stored for `key` belongs.
    ///
    /// False for a file named from another spelling of `key` by a version before
    /// ``canonicalSpelling(of:)`` (or copied in under another name): no read finds it.
    static func isHome(_ fileName: String, of key: String) -> Bool {
        fileName == self.fileName(for: key)
    }
}
