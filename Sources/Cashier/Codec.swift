/// How a value is encoded in its entry file.
///
/// `Data` values are stored as their raw bytes whatever the codec, so a 1 MiB
/// blob takes about 1 MiB on disk.
public enum Codec: Sendable, Hashable {
    /// `JSONEncoder` / `JSONDecoder`: the default, and the faster one to decode on Linux.
    case json
    /// Binary property list (`PropertyListEncoder` with `.binary` output).
    case propertyList
}
