#!/usr/bin/env bash
# Builds the DocC documentation of the Cashier library and fails when
#   - the catalog or a doc comment has a warning (a broken symbol link, a bad
#     topic group, an unknown directive...), or
#   - a public symbol declared in Sources/Cashier has no doc comment, or
#   - a doc comment of an internal symbol has a warning: a second pass builds the
#     documentation again from an internal-level symbol graph (thrown away after),
#     so links in comments that only maintainers read are checked too.
# The output folder is a DocC archive transformed for static hosting: any static
# web server can serve it.
#
# Usage, from anywhere:  bash .ci/docs.sh
# Needs only the Swift toolchain (swift and docc); set DOCC to use another docc.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"

scratch="$root/.build-docs"
symbol_graphs="$scratch/symbol-graphs"
site="$scratch/site"
diagnostics="$scratch/docc-diagnostics.json"
# The internal pass builds in a scratch folder of its own: its compiler flags differ,
# and sharing one would rebuild the module for each pass on every run.
internal_scratch="$root/.build-docs-internal"
internal_symbol_graphs="$internal_scratch/symbol-graphs"
internal_site="$internal_scratch/site"
internal_diagnostics="$internal_scratch/docc-diagnostics.json"

docc="${DOCC:-}"
if [ -z "$docc" ]; then
    if command -v docc >/dev/null 2>&1; then
        docc="$(command -v docc)"
    elif [ -x "$(dirname "$(command -v swift)")/docc" ]; then
        docc="$(dirname "$(command -v swift)")/docc"
    elif command -v xcrun >/dev/null 2>&1; then
        docc="$(xcrun --find docc)"
    else
        echo "docs: docc not found (it ships with the Swift toolchain; set DOCC=/path/to/docc)" >&2
        exit 1
    fi
fi

# Writes the Cashier module's symbol graph at access level $3 into $2, building in scratch path $1.
symbol_graph() {
    local build="$1" graphs="$2" level="$3"
    # The compiler writes the symbol graph when it emits the module, which an
    # up-to-date build skips: remove the built module so it is emitted afresh
    # (a second or so; nothing is recompiled that does not need it).
    rm -rf "$graphs"
    mkdir -p "$graphs"
    find "$build" -maxdepth 4 -name Cashier.swiftmodule -not -path '*/checkouts/*' -exec rm -rf {} + 2>/dev/null || true
    swift build --target Cashier --scratch-path "$build" \
        -Xswiftc -emit-symbol-graph \
        -Xswiftc -emit-symbol-graph-dir -Xswiftc "$graphs" \
        -Xswiftc -symbol-graph-minimum-access-level -Xswiftc "$level"
    if [ ! -f "$graphs/Cashier.symbols.json" ]; then
        echo "docs: no symbol graph was written to $graphs" >&2
        exit 1
    fi
    # The modules under Cashier (CashierPlatform, CashierEntryFormat, ...) are built with the
    # same flags and write graphs too: keep Cashier's own (and its extensions of other modules).
    find "$graphs" -name '*.symbols.json' ! -name 'Cashier.symbols.json' ! -name 'Cashier@*.symbols.json' -delete
}

echo "== docs: symbol graph of the Cashier module (public)"
symbol_graph "$scratch" "$symbol_graphs" public

echo "== docs: every public symbol has a doc comment"
# A symbol counts when it is declared in Cashier's own sources (it has a source
# location and is not a default implementation synthesized from a protocol such
# as Equatable's !=). Written in Swift so the check needs nothing but the toolchain.
checker="$scratch/check-doc-comments.swift"
cat > "$checker" <<'SWIFT'
import Foundation

struct Graph: Decodable { var symbols: [Symbol] }
struct Symbol: Decodable {
    struct Identifier: Decodable { var precise: String }
    struct Kind: Decodable { var displayName: String }
    struct Location: Decodable {
        struct Position: Decodable { var line: Int }
        var uri: String
        var position: Position
    }
    struct DocComment: Decodable {
        struct Line: Decodable { var text: String }
        var module: String?
        var lines: [Line]
    }
    var identifier: Identifier
    var kind: Kind
    var pathComponents: [String]
    var accessLevel: String
    var location: Location?
    var docComment: DocComment?
}

var missing: [String] = []
var counted = 0
for path in CommandLine.arguments.dropFirst() {
    let graph = try JSONDecoder().decode(Graph.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
    for symbol in graph.symbols where ["public", "open"].contains(symbol.accessLevel) {
        guard let location = symbol.location, !symbol.identifier.precise.contains("::SYNTHESIZED::") else { continue }
        counted += 1
        let summary = symbol.docComment?.lines.first { !$0.text.trimmingCharacters(in: .whitespaces).isEmpty }
        if summary == nil || (symbol.docComment?.module.map { $0 != "Cashier" } ?? false) {
            let file = location.uri.replacingOccurrences(of: "file://", with: "")
            missing.append("  \(symbol.pathComponents.joined(separator: ".")) (\(symbol.kind.displayName)) at \(file):\(location.position.line)")
        }
    }
}
if missing.isEmpty {
    print("docs: \(counted) public symbols, all documented")
} else {
    print("docs: \(missing.count) of \(counted) public symbols have no doc comment:")
    for line in missing.sorted() { print(line) }
    exit(1)
}
SWIFT
coverage_status=0
swift "$checker" "$symbol_graphs"/Cashier*.symbols.json || coverage_status=$?

# docc convert CATALOG-ARGUMENTS...: the catalog with the settings both passes share.
docc_convert() {
    "$docc" convert Sources/Cashier/Cashier.docc \
        --fallback-display-name Cashier \
        --fallback-bundle-identifier org.cashier.Cashier \
        --fallback-default-module-kind Framework \
        --warnings-as-errors "$@"
}

echo "== docs: docc convert"
rm -rf "$site" "$diagnostics"
docc_status=0
docc_convert --additional-symbol-graph-dir "$symbol_graphs" \
    --output-path "$site" \
    --transform-for-static-hosting \
    --experimental-documentation-coverage \
    --coverage-summary-level brief \
    --diagnostics-file "$diagnostics" || docc_status=$?

echo "== docs: symbol graph of the Cashier module (internal)"
symbol_graph "$internal_scratch" "$internal_symbol_graphs" internal

echo "== docs: docc convert at the internal level (links in internal doc comments)"
rm -rf "$internal_site" "$internal_diagnostics"
internal_status=0
docc_convert --additional-symbol-graph-dir "$internal_symbol_graphs" \
    --output-path "$internal_site" \
    --diagnostics-file "$internal_diagnostics" || internal_status=$?

if [ "$coverage_status" -ne 0 ] || [ "$docc_status" -ne 0 ] || [ "$internal_status" -ne 0 ]; then
    [ "$coverage_status" -ne 0 ] && echo "docs: FAILED: public symbols without doc comments (listed above)" >&2
    [ "$docc_status" -ne 0 ] && echo "docs: FAILED: docc reported warnings or errors (listed above; also in $diagnostics)" >&2
    [ "$internal_status" -ne 0 ] \
        && echo "docs: FAILED: docc reported warnings in internal doc comments (listed above; also in $internal_diagnostics)" >&2
    exit 1
fi

echo "== docs: passed"
echo "Static website: $site"
echo "  view it with any static web server, for example:"
echo "    python3 -m http.server --directory '$site' 8000"
echo "  then open http://localhost:8000/documentation/cashier/"
echo "Coverage details: $site/documentation-coverage.json (docc counts inherited members such as"
echo "  Equatable's != as lacking an abstract; the doc-comment check above is the one that gates)"
