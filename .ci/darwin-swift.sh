#!/usr/bin/env bash
# Type-checks, in Swift 6 mode on Linux, the Darwin branches of the two files whose Apple-only
# calls are Swift API (Dispatch's memory-pressure source, ProcessInfo's expiring activity), which
# the C header check cannot see. The branches are compiled as if on Darwin against
# .ci/darwin-swift/Shim.swift: Apple's declarations as its documentation spells them. It catches
# a misspelled call, a wrong argument label, an overload resolved to the wrong type (the source's
# `data` is a UInt too) and a Sendable mistake; it cannot catch a shim that differs from the SDK.
set -euo pipefail
cd "$(dirname "$0")/.."
work="$(mktemp -d "${TMPDIR:-/tmp}/cashier-darwin-swift.XXXXXX")"
trap 'rm -rf "$work"' EXIT

sed 's/^\( *\)#if canImport(Darwin)$/\1#if true/' Sources/CashierPlatform/MemoryPressureSource.swift > "$work/MemoryPressure.swift"
sed 's/^\( *\)#if os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)$/\1#if true/' \
    Sources/CashierPlatform/BackgroundActivity.swift > "$work/BackgroundActivity.swift"
for file in MemoryPressureSource:MemoryPressure BackgroundActivity:BackgroundActivity; do
    if cmp -s "$work/${file#*:}.swift" "Sources/CashierPlatform/${file%%:*}.swift"; then
        echo "darwin-swift: no Darwin branch found to enable in $file.swift" >&2
        exit 1
    fi
done
swiftc -typecheck -swift-version 6 -package-name darwin_swift -warnings-as-errors \
    .ci/darwin-swift/Shim.swift "$work/MemoryPressure.swift" "$work/BackgroundActivity.swift"
echo "== darwin-swift: the Darwin branches type-check against Apple's documented declarations"
