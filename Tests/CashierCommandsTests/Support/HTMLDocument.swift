/// A strict reader of the HTML the report writes, for tests: it parses the page as a browser
/// tokenizes it (tags, quoted or bare attributes, raw-text `script` and `style`, character
/// references) and refuses anything looser than what the report promises: an end tag that
/// does not close the open element, an element left open, a `<` or `&` that is not markup
/// or a known reference, a comment, a control character. So a page it accepts is
/// well-formed, and its tree is what a browser builds from it.
struct HTMLDocument {
    final class Element {
        var name: String
        var attributes: [(name: String, value: String)]
        var children: [Node] = []
        weak var parent: Element?

        init(name: String, attributes: [(name: String, value: String)], parent: Element?) {
            self.name = name
            self.attributes = attributes
            self.parent = parent
        }

        func attribute(_ name: String) -> String? { attributes.first { $0.name == name }?.value }

        /// The text of the element and its descendants, references decoded.
        var text: String {
            children.map {
                switch $0 {
                case .text(let text): text
                case .element(let element): element.text
                }
            }.joined()
        }

        /// This element and every descendant, in document order.
        var all: [Element] {
            [self]
                + children.flatMap { node -> [Element] in
                    if case .element(let element) = node { return element.all }
                    return []
                }
        }

        func elements(_ name: String) -> [Element] { all.filter { $0.name == name } }
        func element(id: String) -> Element? { all.first { $0.attribute("id") == id } }
        var classes: Set<String> { Set((attribute("class") ?? "").split(separator: " ").map(String.init)) }
    }

    indirect enum Node {
        case text(String)
        case element(Element)
    }

    struct ParseError: Error, CustomStringConvertible {
        var description: String
    }

    static let voidElements: Set<String> = ["meta", "img", "input", "br", "link", "hr"]
    static let rawTextElements: Set<String> = ["script", "style"]

    let root: Element

    init(_ source: String) throws {
        let scalars = Array(source.unicodeScalars)
        var index = 0
        func fail(_ message: String) -> ParseError {
            let context = String(String.UnicodeScalarView(scalars[max(0, index - 40)..<min(scalars.count, index + 40)]))
            return ParseError(description: "\(message) at scalar \(index): …\(context)…")
        }
        func starts(with text: String, caseInsensitive: Bool = false) -> Bool {
            let wanted = Array(text.unicodeScalars)
            guard index + wanted.count <= scalars.count else { return false }
            for (offset, scalar) in wanted.enumerated() {
                let found = scalars[index + offset]
                if caseInsensitive
                    ? found.properties.lowercaseMapping != scalar.properties.lowercaseMapping : found != scalar
                {
                    return false
                }
            }
            return true
        }
        func isSpace(_ scalar: Unicode.Scalar) -> Bool { [" ", "\n", "\t", "\r", "\u{0C}"].contains(scalar) }
        func skipSpace() { while index < scalars.count, isSpace(scalars[index]) { index += 1 } }

        /// Text up to `stop`, with `&name;` and `&#N;` decoded; any other `&` is an error.
        func readText(until stop: (Unicode.Scalar) -> Bool) throws -> String {
            var text = String.UnicodeScalarView()
            while index < scalars.count, !stop(scalars[index]) {
                let scalar = scalars[index]
                if scalar.properties.generalCategory == .control, !isSpace(scalar) {
                    throw fail("control character U+\(String(scalar.value, radix: 16))")
                }
                if scalar == "&" {
                    guard let end = scalars[index...].prefix(12).firstIndex(of: ";") else { throw fail("bare &") }
                    let name = String(String.UnicodeScalarView(scalars[(index + 1)..<end]))
                    let named = ["amp": "&", "lt": "<", "gt": ">", "quot": "\"", "#39": "'"]
                    guard let decoded = named[name] else { throw fail("unknown reference &\(name);") }
                    text.append(contentsOf: decoded.unicodeScalars)
                    index = end + 1
                } else {
                    text.append(scalar)
                    index += 1
                }
            }
            return String(text)
        }

        skipSpace()
        guard starts(with: "<!DOCTYPE html>", caseInsensitive: true) else { throw fail("no <!DOCTYPE html>") }
        index += "<!DOCTYPE html>".unicodeScalars.count
        let document = Element(name: "#document", attributes: [], parent: nil)
        var current = document
        while index < scalars.count {
            if scalars[index] != "<" {
                let text = try readText { $0 == "<" }
                if !text.unicodeScalars.allSatisfy(isSpace) || current !== document {
                    current.children.append(.text(text))
                }
                continue
            }
            index += 1
            if starts(with: "!") { throw fail("a comment or declaration") }
            let closing = starts(with: "/")
            if closing { index += 1 }
            var name = ""
            while index < scalars.count, !isSpace(scalars[index]), scalars[index] != ">", scalars[index] != "/" {
                name.unicodeScalars.append(scalars[index])
                index += 1
            }
            guard let first = name.unicodeScalars.first, first.properties.isAlphabetic else {
                throw fail("a < that is not a tag")
            }
            name = name.lowercased()
            if closing {
                skipSpace()
                guard starts(with: ">") else { throw fail("malformed end tag") }
                index += 1
                guard current.name == name else { throw fail("</\(name)> closes <\(current.name)>") }
                current = current.parent!
                continue
            }
            var attributes: [(name: String, value: String)] = []
            var selfClosing = false
            while true {
                skipSpace()
                guard index < scalars.count else { throw fail("unterminated tag") }
                if starts(with: ">") {
                    index += 1
                    break
                }
                if starts(with: "/>") {
                    index += 2
                    selfClosing = true
                    break
                }
                var attribute = ""
                while index < scalars.count, !isSpace(scalars[index]), !"=>/".unicodeScalars.contains(scalars[index]) {
                    attribute.unicodeScalars.append(scalars[index])
                    index += 1
                }
                guard !attribute.isEmpty else { throw fail("malformed attribute") }
                var value = ""
                skipSpace()
                if starts(with: "=") {
                    index += 1
                    skipSpace()
                    guard index < scalars.count, scalars[index] == "\"" || scalars[index] == "'" else {
                        throw fail("an unquoted attribute value")
                    }
                    let quote = scalars[index]
                    index += 1
                    value = try readText { $0 == quote || $0 == "<" }
                    guard index < scalars.count, scalars[index] == quote else { throw fail("a < in an attribute") }
                    index += 1
                }
                let lowered = attribute.lowercased()
                guard !attributes.contains(where: { $0.name == lowered }) else { throw fail("duplicate \(lowered)") }
                attributes.append((lowered, value))
            }
            let element = Element(name: name, attributes: attributes, parent: current)
            current.children.append(.element(element))
            if Self.voidElements.contains(name) || selfClosing { continue }
            if Self.rawTextElements.contains(name) {
                let start = index
                while index < scalars.count, !starts(with: "</\(name)", caseInsensitive: true) { index += 1 }
                guard index < scalars.count else { throw fail("unterminated <\(name)>") }
                element.children.append(.text(String(String.UnicodeScalarView(scalars[start..<index]))))
                index += name.unicodeScalars.count + 2
                skipSpace()
                guard starts(with: ">") else { throw fail("malformed </\(name)>") }
                index += 1
                continue
            }
            current = element
        }
        guard current === document else { throw fail("<\(current.name)> never closed") }
        root = document
    }
}
