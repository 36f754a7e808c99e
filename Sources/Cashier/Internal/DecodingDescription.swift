/// What a decoder (or a migration) complained about, in words: which field, what was expected.
///
/// The message of the ``CacheError/Kind/decodingFailed`` failure that follows an
/// `.undecodable` or `.migrationFailed` discard. `DecodingError`'s own description
/// is a dump of its cases; this one reads as a sentence:
/// `expected Int at "address.zip", found a string instead`.
enum DecodingDescription {
    static func describe(_ error: any Error) -> String {
        guard let error = error as? DecodingError else { return String(describing: error) }
        switch error {
        case .typeMismatch(let type, let context):
            return "expected \(type) at \(place(context.codingPath))" + detail(context)
        case .valueNotFound(let type, let context):
            return "expected \(type) at \(place(context.codingPath)), found null or nothing" + detail(context)
        case .keyNotFound(let key, let context):
            return "missing field \(path(context.codingPath + [key]).debugDescription)" + detail(context)
        case .dataCorrupted(let context):
            return "unreadable data at \(place(context.codingPath))" + detail(context)
        @unknown default:
            return String(describing: error)
        }
    }

    /// A coding path as a dotted path with indices in brackets: `items[2].name`.
    static func path(_ codingPath: [any CodingKey]) -> String {
        var text = ""
        for key in codingPath {
            if let index = key.intValue, key.stringValue.hasPrefix("Index ") || key.stringValue == String(index) {
                text += "[\(index)]"
            } else {
                text += (text.isEmpty ? "" : ".") + key.stringValue
            }
        }
        return text
    }

    private static func place(_ codingPath: [any CodingKey]) -> String {
        codingPath.isEmpty ? "the top level" : path(codingPath).debugDescription
    }

    /// The decoder's own explanation and underlying error, when it gave them.
    private static func detail(_ context: DecodingError.Context) -> String {
        var text = context.debugDescription.isEmpty ? "" : ": \(context.debugDescription)"
        if let underlying = context.underlyingError { text += " (\(underlying))" }
        return text
    }
}
