/// Why bytes are not a sound entry file.
package enum EntryFormatError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Shorter than a header.
    case truncated
    /// Does not start with the magic: not a Cashier entry.
    case notAnEntry
    /// Written by a format version this build does not read.
    case unsupportedVersion(Int)
    /// A header field holds an impossible value.
    case badField(String)
    /// The file is not as long as its header says.
    case lengthMismatch(expected: Int, actual: Int)
    /// The checksum over header and payload does not match.
    case checksumMismatch
    /// The prefix given was too short to hold the header: read this many bytes and try again.
    /// Thrown only once the declared lengths are checked, so this many bytes are in the file.
    case needMoreBytes(Int)
    /// Not a regular file (a folder, FIFO, socket or device in an entry's place).
    case notAFile
    /// The file, or the entry its header declares, is this many bytes: more than
    /// ``EntryHeader/maximumEntryLength``.
    case tooLarge(Int)

    package var description: String {
        switch self {
        case .truncated: "truncated: shorter than its header"
        case .notAnEntry: "not a Cashier entry (bad magic)"
        case .unsupportedVersion(let version): "unsupported format version \(version)"
        case .badField(let field): "bad header field: \(field)"
        case .lengthMismatch(let expected, let actual):
            "length mismatch: header says \(expected) bytes, file has \(actual)"
        case .checksumMismatch: "checksum mismatch"
        case .needMoreBytes(let count): "header needs \(count) bytes"
        case .notAFile: "not a regular file"
        case .tooLarge(let count):
            "too large: \(count) bytes, more than the \(EntryHeader.maximumEntryLength) an entry may hold"
        }
    }
}
