#!/usr/bin/env python3
"""Fails when a Darwin branch of Sources/ uses a C-level name that .ci/darwin-calls.c does not.

A Darwin branch is the code under `#if canImport(Darwin)`, `#if os(iOS)` (or macOS, tvOS,
watchOS, visionOS), `canImport(UIKit)`/`canImport(AppKit)`, and the `#else` of a negated
one (`#if !canImport(Darwin)`). In those lines a C-level name is:
  - a constant in capitals (F_FULLFSYNC, O_NOFOLLOW, UTIME_OMIT);
  - a snake_case name (st_atimespec, f_bavail, os_unfair_lock_lock);
  - an all-lowercase call not reached through a dot (fsync(, statfs(, rename( in Darwin.rename().
Swift and Foundation names are camelCase and are left to the Apple platforms article and
.ci/darwin-swift.sh; the few lowercase Swift names a Darwin branch calls are listed below.
Usage: python3 .ci/darwin-drift.py   (exit 1 and the missing names on drift)
"""
import glob, re, sys

SWIFT_NAMES = {"init", "relieve", "max", "min", "abs", "guard", "return", "if", "else", "let", "var",
               "try", "throw", "catch", "do", "in", "func", "import", "private", "static", "defer",
               "extension", "case", "switch", "default", "self", "true", "false", "nil", "weak",
               "stop", "start", "source", "url", "values", "event", "block", "body", "reason", "base",
               "directory", "caches", "path", "error", "access", "modification", "bytes", "overflow", "fs",
               "fd", "lock", "key", "data", "seconds"}
DARWIN = re.compile(r'#(?:if|elseif)\s+(!?)\s*.*?(canImport\(Darwin\)|os\((?:iOS|macOS|tvOS|watchOS|visionOS)\)|canImport\(UIKit\)|canImport\(AppKit\))')

def darwin_lines():
    for path in sorted(glob.glob("Sources/**/*.swift", recursive=True)):
        stack = []  # per #if: [is this branch Darwin, was the #if a negated Darwin test]
        for number, line in enumerate(open(path, encoding="utf-8"), 1):
            text = line.strip()
            match = DARWIN.match(text)
            if text.startswith("#if"):
                stack.append([bool(match) and not match.group(1), bool(match) and bool(match.group(1))])
            elif text.startswith("#elseif"):
                stack[-1][0] = bool(match) and not match.group(1)
            elif text.startswith("#else"):
                stack[-1][0] = stack[-1][1]
            elif text.startswith("#endif"):
                stack.pop()
            elif any(frame[0] for frame in stack) and not text.startswith("//") and not text.startswith("import "):
                code = re.sub(r'"[^"]*"', '""', text.split("//")[0])
                yield path, number, code

def c_names(code):
    names = set(re.findall(r'\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b', code))
    names |= set(re.findall(r'\b[a-z][a-z0-9]*_[a-z0-9_]+\b', code))
    names |= {m for m in re.findall(r'(?<![.\w])(?<!func )([a-z][a-z0-9]*)\s*\(', code) if m not in SWIFT_NAMES}
    names |= {m for m in re.findall(r'\bDarwin\.([a-z][a-z0-9_]*)\b', code)}
    return names

checked = open(".ci/darwin-calls.c", encoding="utf-8").read()
missing = {}
seen = set()
for path, number, code in darwin_lines():
    for name in c_names(code):
        seen.add(name)
        if not re.search(r'\b' + re.escape(name) + r'\b', checked):
            missing.setdefault(name, []).append(f"{path}:{number}")
print(f"darwin-drift: {len(seen)} C-level names in Darwin branches: {', '.join(sorted(seen))}")
if missing:
    for name, places in sorted(missing.items()):
        print(f"darwin-drift: '{name}' ({', '.join(places)}) is not in .ci/darwin-calls.c: add it there, with the types the Swift code assumes")
    sys.exit(1)
print("darwin-drift: every one is in .ci/darwin-calls.c")
