#!/usr/bin/env python3
"""Reference hit ratios for issue 26's traces, from libCacheSim (run as an outside tool).

libCacheSim is GPL-3.0: this script only calls its Python package (`pip install
libcachesim`); none of its code is in Cashier. From the repository root:

    python3 Benchmarks/Eviction/reference.py [> Benchmarks/Eviction/reference.tsv]

It has `CashierReplay generate` write every trace in libCacheSim's oracleGeneral
format (so both replay the same requests; Belady needs the next-request index that
format carries), replays each through libCacheSim's policies at the trace's cache
size (objects of size 1, so the size is a count) and prints a TSV of hit ratios.
"""
import os
import subprocess
import sys
import tempfile

import libcachesim as lcs

POLICIES = [
    ("LRU", lambda size: lcs.LRU(size)),
    ("ARC", lambda size: lcs.ARC(size)),
    ("SIEVE", lambda size: lcs.Sieve(size)),
    ("S3-FIFO", lambda size: lcs.S3FIFO(size)),
    ("W-TinyLFU", lambda size: lcs.WTinyLFU(size)),
    ("Belady", lambda size: lcs.Belady(size)),
]


def main():
    root = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
    with tempfile.TemporaryDirectory() as folder:
        listing = subprocess.run(
            ["swift", "run", "-c", "release", "--package-path", root, "CashierReplay", "generate", folder],
            check=True, capture_output=True, text=True).stdout
        print(f"# libcachesim {lcs.__version__}; hit ratio = 1 - miss ratio over all requests")
        print("\t".join(["trace", "capacity", "requests"] + [name for name, _ in POLICIES]))
        for line in listing.splitlines():
            name, capacity, requests = line.split("\t")
            path = os.path.join(folder, name + ".oracleGeneral")
            ratios = []
            for _, make in POLICIES:
                reader = lcs.TraceReader(path, lcs.TraceType.ORACLE_GENERAL_TRACE)
                miss_ratio, _ = make(int(capacity)).process_trace(reader)
                ratios.append(f"{1 - miss_ratio:.4f}")
            print("\t".join([name, capacity, requests] + ratios), flush=True)
            print(name, ratios, file=sys.stderr)


if __name__ == "__main__":
    main()
