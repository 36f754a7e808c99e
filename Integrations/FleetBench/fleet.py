#!/usr/bin/env python3
"""The measuring harness of the fleet figures (issue 37): starts FleetServer instances, sends
them requests, checks every answer, and prints the figures. Standard library only.

  fleet.py rolling  --binary B --postgres URL [--work DIR]   the rolling deploy (CI runs it)
  fleet.py origin   --binary B --postgres URL                 (a) origin fetches, 3 instances vs 1
  fleet.py propagation --binary B --postgres URL              (b) write on one, seen by the others
  fleet.py throughput --binary B --postgres URL [--seconds N] [--rounds R]
                                                              (c) wrk, with the shared tier vs without, interleaved
  fleet.py outage   --binary B --postgres URL --stop CMD --start CMD [--seconds N]
                                                              (d) PostgreSQL killed and restarted
  fleet.py shutdown --binary B --postgres URL [--seconds N]   (f) an instance stopped after a burst of writes

A right answer is the item asked for, in the instance's schema, with the fields that follow
from its version (ItemV1's label, ItemV2's title and tags) and, once writes have settled, the
version the origin holds. Anything else is a wrong value.
"""
import argparse
import bisect
import http.client
import itertools
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """One FleetServer process: its own folder, the shared origin folder, maybe PostgreSQL."""

    def __init__(self, binary, work, schema, origin, postgres=None, table="fleet_entries", name=None):
        self.port = free_port()
        self.schema = schema
        self.name = name or f"s{schema}:{self.port}"
        folder = os.path.join(work, f"cache-{self.port}")
        args = [binary, "--port", str(self.port), "--schema", str(schema), "--folder", folder,
                "--origin", origin]
        if postgres:
            args += ["--postgres", postgres, "--table", table]
        self.log = open(os.path.join(work, f"server-{self.port}.log"), "w")
        self.process = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 60
        while True:
            try:
                self.stats()
                return
            except OSError:
                if self.process.poll() is not None or time.time() > deadline:
                    raise RuntimeError(f"{self.name} did not start (see {self.log.name})")
                time.sleep(0.1)

    def stats(self):
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            connection.request("GET", "/stats")
            return json.loads(connection.getresponse().read())
        finally:
            connection.close()

    def alive(self):
        return self.process.poll() is None

    def stop(self):
        """Stops it as a deploy does (SIGTERM); answers whether it had been running until then."""
        was_alive = self.alive()
        self.process.terminate()
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()
        return was_alive


class Client:
    """Keep-alive connections to the instances, one per port, for one thread."""

    def __init__(self):
        self.connections = {}

    def call(self, server, method, id, body=None):
        for attempt in range(2):
            connection = self.connections.get(server.port)
            if connection is None:
                connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
                self.connections[server.port] = connection
            try:
                connection.request(method, f"/items/{id}", body=body)
                response = connection.getresponse()
                data = response.read()
                if response.status != 200:
                    raise RuntimeError(f"{method} {id} on {server.name}: HTTP {response.status} {data[:200]!r}")
                return json.loads(data)
            except (http.client.HTTPException, OSError):
                # A connection the server closed while idle is opened again once; then it is an error.
                connection.close()
                self.connections.pop(server.port, None)
                if attempt == 1:
                    raise

    def get(self, server, id):
        return self.call(server, "GET", id)

    def put(self, server, id, version):
        return self.call(server, "PUT", id, str(version))


def wrongness(answer, server, id):
    """Why `answer` is not a right item `id` for `server`'s schema, or None."""
    if answer.get("schema") != server.schema:
        return f"schema {answer.get('schema')} from a schema-{server.schema} instance"
    item = answer.get("item") or {}
    if item.get("id") != id:
        return f"item {item.get('id')} for {id}"
    version = item.get("version")
    if server.schema == 1:
        if set(item) != {"id", "version", "label"} or item["label"] != f"item-{id}-v{version}":
            return f"inconsistent schema-1 item {item}"
    elif set(item) != {"id", "version", "title", "tags"} or item["title"] != f"Item {id}, version {version}" \
            or item["tags"] != [f"v{version}"]:
        return f"inconsistent schema-2 item {item}"
    return None


class Tally:
    def __init__(self):
        self.lock = threading.Lock()
        self.requests = 0
        self.errors = []
        self.wrong = []

    def error(self, text):
        with self.lock:
            self.errors.append(text)

    def wrong_value(self, text):
        with self.lock:
            self.wrong.append(text)


class Versions:
    """The version each item has at the origin, as this harness wrote it (every PUT is its)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.latest = {}
        self.counter = itertools.count(1)
        self.puts = {}

    def next(self, id):
        with self.lock:
            version = next(self.counter)
            self.puts[id] = self.puts.get(id, 0) + 1
            return version

    def written(self, id, version):
        with self.lock:
            self.latest[id] = max(self.latest.get(id, 0), version)


def zipf_sampler(count, exponent=1.0, seed=1):
    weights = [1 / (rank + 1) ** exponent for rank in range(count)]
    cumulative = list(itertools.accumulate(weights))
    ids = list(range(count))
    random.Random(seed).shuffle(ids)
    generator = random.Random(seed + 1)
    return lambda: ids[bisect.bisect_left(cumulative, generator.random() * cumulative[-1])]


def run_mix(servers, ids, seconds=None, requests=None, put_share=0.1, threads=4, tally=None, versions=None,
            seed=7, sample=None):
    """Reads (and a share of writes) over `ids` spread over `servers`, checking each answer; for
    a number of requests or of seconds. Writes go to the origin through an instance; a read on
    the instance that took a write of the item must not answer an older version (read your writes)."""
    tally = tally or Tally()
    versions = versions or Versions()
    deadline = time.time() + seconds if seconds else None
    counter = itertools.count()
    own_writes = {}  # (port, id) -> version written through that instance
    own_lock = threading.Lock()

    def worker(index):
        client = Client()
        generator = random.Random(seed * 100 + index)
        # Each thread owns its items: no two requests of one item run at once, so an answer is
        # judged against writes that ended before it began (a read racing a write of its own
        # item is the race every cache-aside has, outside what this checks).
        mine = ids[index::threads] or ids
        choose = sample or (lambda: generator.choice(mine))
        while True:
            number = next(counter)
            if requests is not None and number >= requests:
                return
            if deadline is not None and time.time() >= deadline:
                return
            server = servers[number % len(servers)]
            id = choose()
            try:
                if generator.random() < put_share:
                    version = versions.next(id)
                    answer = client.put(server, id, version)
                    versions.written(id, version)
                    with own_lock:
                        own_writes[(server.port, id)] = max(own_writes.get((server.port, id), 0), version)
                else:
                    with own_lock:
                        floor = own_writes.get((server.port, id), 0)
                    answer = client.get(server, id)
                    version = answer.get("item", {}).get("version", -1)
                    if version < floor:
                        tally.wrong_value(f"{server.name} answered v{version} of {id} after a write of v{floor} there")
                problem = wrongness(answer, server, id)
                if problem:
                    tally.wrong_value(f"{server.name}: {problem}")
            except Exception as error:  # noqa: BLE001 - every failure of a call is a client error
                tally.error(f"{server.name}: {error}")
            with tally.lock:
                tally.requests += 1

    workers = [threading.Thread(target=worker, args=(index,)) for index in range(threads)]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join()
    return tally, versions


def converge(servers, versions, tally, ids, seconds=5.0):
    """Every instance answers every item at the origin's version within `seconds` (the change
    stream's delivery); what still differs then is a wrong value."""
    client = Client()
    deadline = time.time() + seconds
    pending = [(server, id) for server in servers for id in ids]
    while pending:
        left = []
        for server, id in pending:
            answer = client.get(server, id)
            problem = wrongness(answer, server, id)
            if problem:
                tally.wrong_value(f"{server.name}: {problem}")
            elif answer["item"]["version"] != versions.latest.get(id, 0):
                left.append((server, id))
        pending = left
        if not pending or time.time() > deadline:
            break
        time.sleep(0.05)
    for server, id in pending:
        tally.wrong_value(f"{server.name} still answers an old version of {id} after {seconds} s")


def stores_beyond_allowed(servers_stats, versions, ids):
    """Slots written more often than once per version per change of the item (a PUT)."""
    stores = {}
    for stats in servers_stats:
        for slot, count in stats["sharedStores"].items():
            stores[slot] = stores.get(slot, 0) + count
    excess = {}
    for slot, count in stores.items():
        name = slot.split(" ")[0]
        id = int(name.split("-")[1])
        allowed = 1 + versions.puts.get(id, 0)
        if count > allowed:
            excess[slot] = (count, allowed)
    return stores, excess


def bad_discards(stats):
    return {reason: count for reason, count in stats["discards"].items() if count}


# MARK: - Rolling deploy

def rolling(args):
    work = args.work or tempfile.mkdtemp(prefix="fleet-rolling-")
    os.makedirs(work, exist_ok=True)
    origin = os.path.join(work, "origin")
    table = f"fleet_rolling_{random.randrange(1 << 30)}"
    ids = list(range(args.ids))
    tally, versions = Tally(), Versions()
    start = lambda schema: Server(args.binary, work, schema, origin, args.postgres, table)  # noqa: E731
    stopped, stats = [], []
    fetches = {}

    def retire(server):
        stats.append(server.stats())
        fetches[server.name] = stats[-1]["originFetches"]
        if not server.stop():
            tally.error(f"{server.name} had exited before it was stopped (a crash)")
        stopped.append(server)

    began = time.time()
    # The old fleet: two schema-1 instances; the first warms the tier, one read of each item.
    old_a = start(1)
    run_mix([old_a], ids, requests=len(ids), put_share=0, threads=1, tally=tally, versions=versions,
            sample=iter(ids).__next__)
    old_b = start(1)
    run_mix([old_a, old_b], ids, requests=args.requests, tally=tally, versions=versions)
    # Step one of the deploy: one old instance replaced by a new one (schema 2, migrating schema 1).
    retire(old_b)
    new_a = start(2)
    run_mix([new_a], ids, requests=len(ids), put_share=0, threads=1, tally=tally, versions=versions,
            sample=iter(ids).__next__)
    run_mix([old_a, new_a], ids, requests=args.requests, tally=tally, versions=versions)
    converge([old_a, new_a], versions, tally, ids)
    # Step two: the last old instance replaced.
    retire(old_a)
    new_b = start(2)
    run_mix([new_a, new_b], ids, requests=args.requests, tally=tally, versions=versions)
    converge([new_a, new_b], versions, tally, ids)
    retire(new_a)
    retire(new_b)
    stores, excess = stores_beyond_allowed(stats, versions, ids)
    discards = {}
    for entry in stats:
        for reason, count in bad_discards(entry).items():
            discards[reason] = discards.get(reason, 0) + count
    seconds = time.time() - began
    print(f"rolling deploy: {tally.requests} requests over {len(ids)} items, schema 1 and 2 instances at once, "
          f"{sum(versions.puts.values())} writes, {seconds:.1f} s")
    print(f"  wrong values: {len(tally.wrong)}   client errors or crashes: {len(tally.errors)}   "
          f"decode failures (discards): {sum(discards.values())} {discards or ''}")
    print(f"  shared-tier stores: {sum(stores.values())} in {len(stores)} slots; "
          f"slots written more than once per version per change: {len(excess)}")
    print("  origin fetches per instance: " + ", ".join(f"{name} {count}" for name, count in fetches.items()))
    for line in (tally.wrong + tally.errors)[:10]:
        print("   ", line)
    for slot, (count, allowed) in list(excess.items())[:10]:
        print(f"    {slot}: {count} stores, {allowed} allowed")
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    # What gates: crashes, client errors, decode failures, write loops, and with --strict (CI's)
    # wrong values. Without it they are printed only: for a tier that keeps the last change to
    # arrive rather than the newest (README, "Figures").
    if tally.wrong and not args.strict:
        print("  (wrong values do not fail this run without --strict)")
    failed = tally.errors or excess or discards or (tally.wrong and args.strict)
    return 1 if failed else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["rolling", "origin", "propagation", "throughput", "outage", "shutdown"])
    parser.add_argument("--binary", required=True)
    parser.add_argument("--postgres", required=True)
    parser.add_argument("--work")
    parser.add_argument("--ids", type=int, default=200)
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--stop")
    parser.add_argument("--start")
    parser.add_argument("--seconds", type=float, default=12)
    parser.add_argument("--rounds", type=int, default=4, help="throughput: interleaved rounds (of seconds/rounds each)")
    parser.add_argument("--strict", action="store_true", help="rolling: wrong values fail the run too")
    args = parser.parse_args()
    import fleet_load  # the load figures, run.sh's; kept apart from what CI runs
    commands = {"rolling": rolling, "origin": fleet_load.origin, "propagation": fleet_load.propagation,
                "throughput": fleet_load.throughput, "outage": fleet_load.outage, "shutdown": fleet_load.shutdown}
    sys.exit(commands[args.command](args))


if __name__ == "__main__":
    main()
