"""run.sh's figures (a) to (d); fleet.py's commands call these. Standard library only."""
import os
import random
import re
import shutil
import statistics
import subprocess
import tempfile
import threading
import time

from fleet import Client, Server, Tally, Versions, converge, run_mix, wrongness, zipf_sampler

HERE = os.path.dirname(os.path.abspath(__file__))


def fleet(args, work, count, shared=True, schema=1):
    origin = os.path.join(work, "origin")
    table = f"fleet_load_{random.randrange(1 << 30)}"
    return [Server(args.binary, work, schema, origin, args.postgres if shared else None, table)
            for _ in range(count)]


def stop(servers):
    crashed = [server.name for server in servers if not server.stop()]
    if crashed:
        print(f"  crashed before the end: {crashed}")


def origin(args):
    """(a) The same request stream (seeded: Zipf over 1000 items, 10% writes) through three
    instances sharing the tier, then through one instance alone: origin fetches of each."""
    fetches = {}
    for label, count, shared in (("three", 3, True), ("one", 1, False)):
        work = tempfile.mkdtemp(prefix="fleet-origin-")
        servers = fleet(args, work, count, shared)
        tally, _ = run_mix(servers, list(range(1000)), requests=args.requests, put_share=0.1, threads=6,
                           sample=zipf_sampler(1000, seed=11))
        fetches[label] = sum(server.stats()["originFetches"] for server in servers)
        stop(servers)
        shutil.rmtree(work, ignore_errors=True)
        print(f"  {label} instance(s): {tally.requests} requests, {fetches[label]} origin fetches, "
              f"{len(tally.errors)} errors, {len(tally.wrong)} wrong")
    print(f"(a) origin fetches, 3 instances / 1 instance: {fetches['three'] / max(fetches['one'], 1):.3f}x "
          f"(goal <= 1.1x)")
    return 0


def propagation(args):
    """(b) A write on one instance (rotating), then the two others polled until they answer it:
    time from the write's answer to each one's first answer of the new version."""
    work = tempfile.mkdtemp(prefix="fleet-propagation-")
    servers = fleet(args, work, 3)
    ids = list(range(args.ids))
    warm = Client()
    for server in servers:
        for id in ids:
            warm.get(server, id)
    versions, tally, delays = Versions(), Tally(), []
    clients = [Client() for _ in servers]

    def poll(reader, client, id, version, since):
        while True:
            answer = client.get(reader, id)
            problem = wrongness(answer, reader, id)
            if problem:
                tally.wrong_value(problem)
            if answer["item"]["version"] >= version:
                delays.append((time.perf_counter() - since) * 1000)
                return
            if time.perf_counter() - since > 10:
                tally.wrong_value(f"{reader.name} still answers an old version of {id} after 10 s")
                return

    for round, id in enumerate(ids):
        writer = servers[round % 3]
        version = versions.next(id)
        clients[round % 3].put(writer, id, version)
        since = time.perf_counter()
        readers = [threading.Thread(target=poll, args=(server, clients[index], id, version, since))
                   for index, server in enumerate(servers) if server is not writer]
        for reader in readers:
            reader.start()
        for reader in readers:
            reader.join()
    stop(servers)
    shutil.rmtree(work, ignore_errors=True)
    delays.sort()
    p99 = delays[min(len(delays) - 1, int(len(delays) * 0.99))]
    print(f"(b) propagation over {len(delays)} reads after {len(ids)} writes: p50 {statistics.median(delays):.1f} ms, "
          f"p99 {p99:.1f} ms, max {delays[-1]:.1f} ms (goal p99 <= 50 ms); wrong values {len(tally.wrong)}")
    return 0


def wrk(ports, seconds, connections=24):
    environment = dict(os.environ, FLEET_PORTS=",".join(str(port) for port in ports), FLEET_IDS="1000")
    output = subprocess.run(
        ["wrk", "-t", str(len(ports)), "-c", str(connections), "-d", f"{seconds}s", "--latency", "-s",
         os.path.join(HERE, "fleet.lua"), f"http://127.0.0.1:{ports[0]}"],
        env=environment, capture_output=True, text=True, check=True).stdout
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1))
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    sockets = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", output)
    errors = (int(non2xx.group(1)) if non2xx else 0) + (sum(map(int, sockets.groups())) if sockets else 0)
    p99 = re.search(r"99%\s+(\S+)", output)
    return rate, errors, p99.group(1) if p99 else "?"


def load_average():
    with open("/proc/loadavg") as file:
        return float(file.read().split()[0])


def cpu_seconds(pids):
    """User and system CPU time of the processes `pids` (those still there), in seconds."""
    total = 0.0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as file:
                fields = file.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def postgres_pids(url):
    """The processes of the PostgreSQL server listening on `url`'s port on this machine: its
    postmaster (found by `-p PORT` on its command line) and its children; empty when not found."""
    port = re.search(r":(\d+)/", url)
    processes = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as file:
                command = file.read().split(b"\0")
            with open(f"/proc/{entry}/stat") as file:
                parent = int(file.read().rsplit(")", 1)[1].split()[1])
        except OSError:
            continue
        processes[int(entry)] = (command, parent)
    masters = {pid for pid, (command, _) in processes.items()
               if port and os.path.basename(command[0]) == b"postgres" and b"-p" in command
               and command[command.index(b"-p") + 1:command.index(b"-p") + 2] == [port.group(1).encode()]}
    return masters | {pid for pid, (_, parent) in processes.items() if parent in masters}


def throughput(args):
    """(c) wrk's mix on three instances with the shared tier and on three without it, both
    fleets up at once and measured in turn: `--rounds` short rounds, alternating which goes
    first, so a change of the machine's load falls on both sides. The figure is the median of
    the rounds' ratios; each round also prints the load average, the servers' CPU per request,
    PostgreSQL's CPU per request and the calls to the shared tier per request."""
    works, fleets = {}, {}
    for label, shared in (("with", True), ("without", False)):
        works[label] = tempfile.mkdtemp(prefix="fleet-throughput-")
        fleets[label] = fleet(args, works[label], 3, shared)
    seconds = max(1, int(args.seconds / args.rounds))
    database = postgres_pids(args.postgres)
    for servers in fleets.values():
        wrk([server.port for server in servers], 3)  # warm-up
    ratios = []
    for round in range(args.rounds):
        rates = {}
        for label in (("with", "without") if round % 2 == 0 else ("without", "with")):
            servers = fleets[label]
            pids = [server.process.pid for server in servers]
            before = (cpu_seconds(pids), cpu_seconds(postgres_pids(args.postgres) or database), tier_calls(servers))
            load = load_average()
            rate, errors, p99 = wrk([server.port for server in servers], seconds)
            after = (cpu_seconds(pids), cpu_seconds(postgres_pids(args.postgres) or database), tier_calls(servers))
            requests = max(rate * seconds, 1)
            rates[label] = rate
            print(f"  round {round + 1}, {label} the shared tier: {rate:.0f} requests/s, p99 {p99}, {errors} errors; "
                  f"servers {1e6 * (after[0] - before[0]) / requests:.0f} µs CPU/request, PostgreSQL "
                  f"{1e6 * (after[1] - before[1]) / requests:.0f} µs/request, "
                  f"{(after[2] - before[2]) / requests:.2f} tier calls/request; load {load:.1f}")
        ratios.append(rates["with"] / rates["without"])
    for servers in fleets.values():
        stop(servers)
    for work in works.values():
        shutil.rmtree(work, ignore_errors=True)
    print(f"(c) throughput with the shared tier / without, median of {len(ratios)} interleaved rounds of {seconds} s: "
          f"{statistics.median(ratios):.2f}x (rounds {', '.join(f'{ratio:.2f}' for ratio in ratios)}; goal >= 0.8x)")
    return 0


def tier_calls(servers):
    """Reads and stores the instances asked of the shared tier so far (``CountingTier``)."""
    total = 0
    for server in servers:
        stats = server.stats()
        total += stats["sharedReads"] + sum(stats["sharedStores"].values())
    return total


def outage(args):
    """(d) wrk's mix and a checking client on three instances; PostgreSQL killed a third of the
    way in and started again at two thirds; then every instance must answer every checked item
    at its latest version."""
    work = tempfile.mkdtemp(prefix="fleet-outage-")
    servers = fleet(args, work, 3)
    ids = list(range(100_000, 100_000 + args.ids))
    tally, versions = Tally(), Versions()
    seconds = args.seconds
    results = {}
    load = threading.Thread(target=lambda: results.update(wrk=wrk([s.port for s in servers], int(seconds))))
    checker = threading.Thread(target=run_mix, args=(servers, ids),
                               kwargs=dict(seconds=seconds, put_share=0.2, threads=3, tally=tally, versions=versions))
    load.start()
    checker.start()
    time.sleep(seconds / 3)
    subprocess.run(["bash", "-c", args.stop], check=True)
    killed = time.time()
    time.sleep(seconds / 3)
    subprocess.run(["bash", "-c", args.start], check=True)
    print(f"  PostgreSQL down for {time.time() - killed:.1f} s")
    load.join()
    checker.join()
    converge(servers, versions, tally, ids, seconds=5)
    failures = sum(server.stats()["failures"] for server in servers)
    stop(servers)
    shutil.rmtree(work, ignore_errors=True)
    rate, wrk_errors, _ = results["wrk"]
    print(f"(d) PostgreSQL killed and restarted: client errors {len(tally.errors) + wrk_errors} "
          f"(checker {len(tally.errors)} of {tally.requests}, wrk {wrk_errors}), wrong values {len(tally.wrong)} "
          f"(goal 0/0); {failures} shared-tier failures reported as events; wrk {rate:.0f} requests/s")
    for line in (tally.wrong + tally.errors)[:10]:
        print("   ", line)
    return 0


def shutdown(args):
    """(f) An instance stopped as a deploy stops it (SIGTERM) right at the end of a burst of
    writes through it: the other instance must then answer each item at its latest version.
    A change the stopped instance had queued and never sent leaves the other serving the value
    it replaced."""
    work = tempfile.mkdtemp(prefix="fleet-shutdown-")
    writer, reader = fleet(args, work, 2)
    ids = list(range(200_000, 200_000 + args.ids))
    client = Client()
    for id in ids:
        client.get(reader, id)  # the reader holds every item, to be told of each change
    tally, versions = Tally(), Versions()
    # Writes only, through the writer, each thread on items of its own, with wrk's mix beside
    # on both instances so the writer's changes queue as they do under load.
    load = threading.Thread(target=lambda: wrk([writer.port, reader.port], int(args.seconds)))
    load.start()
    run_mix([writer], ids, seconds=args.seconds, put_share=1.0, threads=6, tally=tally, versions=versions)
    writer.stop()
    load.join()
    converge([reader], versions, tally, ids, seconds=5)
    stop([reader])
    shutil.rmtree(work, ignore_errors=True)
    print(f"(f) an instance stopped right after {tally.requests} writes through it: the other answered "
          f"{len(tally.wrong)} items at an older version 5 s later (goal 0); client errors {len(tally.errors)}")
    for line in (tally.wrong + tally.errors)[:5]:
        print("   ", line)
    return 0
