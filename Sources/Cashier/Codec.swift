/// How a value is encoded in its entry file.
///
/// `Data` values are stored as their raw bytes whatever the codec, so a 1 MiB
/// blob takes about 1 MiB on disk.
public enum Codec: Sendable, Hashable {
    /// `JSONEncoder` with default settings: the default codec, and the faster to decode.
    ///
    /// Reads go through a built-in decoder made for what `JSONEncoder` writes, which
    /// takes about half the instructions of `JSONDecoder`. It hands any payload or
    /// type it is not sure of (a `Data`, `URL` or `Decimal` inside, a number in an
    /// unusual form, an error caught inside `init(from:)`) to `JSONDecoder` with
    /// default settings, so the values read are always those `JSONDecoder` would give.
    case json
    /// Binary property list (`PropertyListEncoder` with `.binary` output).
    case propertyList
}
