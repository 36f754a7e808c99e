#!/usr/bin/env bash
# The Darwin side, checked by machine without a Mac:
#   1. .ci/darwin-calls.c, every Darwin-only libc name the sources use with the types they
#      assume, compiled against Apple's own macOS headers (../shared/tools/darwin-headers.sh
#      installs Zig's toolchain from PyPI into a private virtual environment on first use);
#   2. the drift check: no Darwin branch uses a C-level name darwin-calls.c leaves out;
#   3. the C target CCashierPlatform (shim.c), which SwiftPM builds on every platform.
set -euo pipefail
cd "$(dirname "$0")/.."
tool=../shared/tools/darwin-headers.sh
echo "== darwin: drift check (Darwin branches of Sources/ against .ci/darwin-calls.c)"
python3 .ci/darwin-drift.py
echo "== darwin: .ci/darwin-calls.c against Apple's macOS headers"
if [ ! -f "$tool" ]; then
    echo "darwin: $tool not found (it ships in shared/ beside the repository)" >&2
    exit 1
fi
bash "$tool" .ci/darwin-calls.c
echo "== darwin: the C shim (Sources/CCashierPlatform) against Apple's macOS headers"
bash "$tool" Sources/CCashierPlatform/shim.c
echo "== darwin: passed"
