#!/usr/bin/env python3
"""Joins README.md's and the DocC articles' Swift samples into one program, as a
reader pastes them: README's blocks first, then each article's, articles in the
order the catalog's landing page (Cashier.md) lists them under Topics.

Usage: join.py ROOT OUT_DIR
Writes OUT_DIR/main.swift (every compiled block, each after a #sourceLocation
line pointing at its file and line) and prints one line per block. Exit status
1 when a block marked `repeats` differs from the program so far, a marker is
not followed by a ```swift block, a marker is unknown, or an article with
samples is not listed in the catalog.

The marker on the last non-blank line before a ```swift fence decides:
    (none)                          compiled, in order
    <!-- sample: SwiftUI -->        compiled, in order; needs SwiftUI (on Linux,
                                    .ci/doc-samples/SwiftUI.swift stands in for it)
    <!-- sample: repeats -->        declarations shown again (an article restating
                                    README's keys and models): not compiled twice;
                                    every code line must appear in the blocks before
    <!-- sample: not compiled -->   another library's code (a migration guide's
                                    "Before"), or a manifest fragment: skipped
README's Installation manifest (<!-- readme-samples: Package.swift -->) is skipped
here; .ci/readme-samples.sh builds it.
"""
import os
import re
import sys

MARKERS = {
    "<!-- sample: SwiftUI -->": "swiftui",
    "<!-- sample: repeats -->": "repeats",
    "<!-- sample: not compiled -->": "skip",
    "<!-- readme-samples: Package.swift -->": "skip",
}
FENCE = re.compile(r"^[ \t]*```[ \t]*swift[ \t]*$")
CLOSE = re.compile(r"^[ \t]*```+[ \t]*$")
OTHER = re.compile(r"^[ \t]*```")


def blocks(path):
    """Yields (line of the first code line, status, text, marker line) per ```swift block."""
    lines = open(path, encoding="utf-8").read().split("\n")
    previous, marker_line, i = "", 0, 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if FENCE.match(line):
            status = MARKERS.get(previous, "compile")
            body, i = [], i + 1
            while i < len(lines) and not CLOSE.match(lines[i]):
                body.append(lines[i])
                i += 1
            yield (i - len(body) + 1, status, "\n".join(body), 0)
            previous, marker_line = "```", 0
        elif OTHER.match(line):
            if marker_line:
                yield (marker_line, "stray", "", marker_line)
            i += 1
            while i < len(lines) and not CLOSE.match(lines[i]):
                i += 1
            previous, marker_line = "```", 0
        elif stripped:
            if marker_line:
                yield (marker_line, "stray", "", marker_line)
            marker_line = i + 1 if stripped in MARKERS else 0
            if stripped.startswith("<!-- sample") and stripped not in MARKERS:
                yield (i + 1, "unknown", stripped, i + 1)
            previous = stripped
        i += 1
    if marker_line:
        yield (marker_line, "stray", "", marker_line)


def code_lines(text):
    """The lines that carry code: trailing comments and indentation dropped."""
    result = []
    for line in text.split("\n"):
        line = re.sub(r"(^|[ \t])//.*$", "", line).strip()
        if line:
            result.append(line)
    return result


def catalog_order(catalog):
    landing = os.path.join(catalog, "Cashier.md")
    listed = re.findall(r"<doc:([A-Za-z0-9_-]+)>", open(landing, encoding="utf-8").read())
    order = ["Cashier"]
    for name in listed:
        if name not in order:
            order.append(name)
    return order


def main():
    root, out = sys.argv[1], sys.argv[2]
    catalog = "Sources/Cashier/Cashier.docc"
    order = catalog_order(os.path.join(root, catalog))
    files = ["README.md"] + [f"{catalog}/{name}.md" for name in order]
    unlisted = sorted(
        f"{catalog}/{name}"
        for name in os.listdir(os.path.join(root, catalog))
        if name.endswith(".md") and name[:-3] not in order
    )

    program, seen, failures = [], set(), []
    counts = {"compile": 0, "swiftui": 0, "repeats": 0, "skip": 0}
    for relative in files + unlisted:
        path = os.path.join(root, relative)
        for line, status, text, _ in blocks(path):
            where = f"{relative}:{line}"
            if status == "stray":
                failures.append(f"{where}: a sample marker not followed by a ```swift block: remove it")
                continue
            if status == "unknown":
                failures.append(f"{where}: unknown marker {text}")
                continue
            if relative in unlisted and status != "skip":
                failures.append(f"{where}: {relative} has samples but Cashier.md's Topics do not list it")
                continue
            counts[status] += 1
            print(f"{status.upper():8} {where}")
            if status == "skip":
                continue
            if status == "repeats":
                missing = [code for code in code_lines(text) if code not in seen]
                for code in missing:
                    failures.append(f"{where}: repeats a line that no sample before it has: {code}")
                continue
            program.append(f'#sourceLocation(file: "{relative}", line: {line})\n{text}\n#sourceLocation()\n')
            seen.update(code_lines(text))

    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "main.swift"), "w", encoding="utf-8") as main_file:
        main_file.write("\n".join(program))
    print(
        f"{counts['compile']} blocks compiled as they are, {counts['swiftui']} with SwiftUI, "
        f"{counts['repeats']} repeating earlier ones, {counts['skip']} not compiled"
    )
    if failures:
        for failure in failures:
            print(f"FAIL {failure}", file=sys.stderr)
        sys.exit(1)


main()
