#!/usr/bin/env python3
"""What a queue's users feel: messages in *and* out per second, with an external load generator (wrk)
and an external sink (nginx answering 200), both from Debian's packages (installed when missing).

Each round runs, alternating, on this machine:
  baseline    wrk -> nginx, the same request shape (POST, small JSON body), no Quiver
  publish     wrk -> Quiver, `Svc-Delay: 7d` (nothing is delivered during the load)
  sustained   wrk -> Quiver, immediate delivery to nginx. The figure is messages acknowledged divided by
              the time from the first publish until the last of them reached nginx (read from nginx's
              access log), so publishes that pile up undelivered earn nothing
  drain       a backlog of --backlog messages, published with one `Svc-Not-Before`, delivered to nginx,
              with Quiver's CPU per delivered message (writer thread, the rest)
  latency     an open-loop publisher at --rate msg/s for --latency-seconds; nginx logs its arrival time
              next to the send time the message carries (a forwarded header), both in whole milliseconds,
              so each latency is within a millisecond of the true one
Every phase starts a fresh `quiver serve --dev` on a new data directory. For publish and sustained it
prints the process CPU per message: Quiver's queue writer thread, the rest of Quiver (the server), and
the rest (wrk and nginx); and how long a publish waited for its answer (wrk's p50 and p99): each of the
connections publishes again only once answered, so the rate is the connections over that time.

Usage: bench/queue_throughput.py [--binary target/release/quiver] [--rounds 5] [--seconds 5]
                                 [--connections 32,256] [--backlog 50000] [--scratch DIR]
With --preload N, every publish, sustained and drain phase first waits for N delayed messages (7 days)
already in the queue, to show that costs stay flat as the backlog grows.
With --store postgres://USER@HOST:PORT/DB, every phase's Quiver keeps its data in a schema of its own in
that database (dropped after the phase), and the CPU split adds PostgreSQL's processes ("database").
--store takes a comma-separated list, where `sqlite` names the embedded store: each round then runs the
phases once per store, in turn, and each figure is named with its store. With a PostgreSQL store, the
phase `pgbench` runs `pgbench` against that database at each connection count (one single-row `INSERT`
per transaction, as many clients as connections), the rate the PostgreSQL issue's goal compares
sustained publish-and-deliver with.
"""

import argparse
import http.client
import math
import os
import re
import resource
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from common import TOKEN, drop_schema, postgres_environment, publish_batches, release_binary, request

QUIVER_PORT = 18190
SINK_PORT = 18191
BODY = '{"hello":"world","n":12345}'
TICKS = os.sysconf("SC_CLK_TCK")

NGINX_CONF = """
worker_processes 2;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    client_body_buffer_size 64k;
    log_format arrival '$msec $http_x_sent $uri';
    server {{
        listen 127.0.0.1:{port} backlog=4096;
        keepalive_requests 1000000;
        location /baseline {{ return 200 "ok"; }}
        location = /status {{ stub_status; }}
        location /hook {{
            access_log {dir}/arrivals.log arrival buffer=256k flush=50ms;
            return 200 "ok";
        }}
    }}
}}
"""

WRK_SCRIPT = """
wrk.method = "POST"
wrk.path = "{path}"
wrk.body = '{body}'
wrk.headers["Content-Type"] = "application/json"
{headers}
"""


def ensure_tools():
    missing = [p for p, exe in (("wrk", "wrk"), ("nginx-light", "nginx")) if not shutil.which(exe)
               and not os.path.exists("/usr/sbin/" + exe)]
    if missing:
        print(f"installing {' '.join(missing)} from Debian's packages", file=sys.stderr)
        prefix = [] if os.geteuid() == 0 else ["sudo"]
        subprocess.run(prefix + ["apt-get", "install", "-y", *missing], check=True,
                       stdout=subprocess.DEVNULL)


def thread_cpu(pid):
    """CPU seconds per thread name of process `pid`."""
    totals = {}
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        return totals
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                stat = f.read()
        except FileNotFoundError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        totals[name] = totals.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / TICKS
    return totals


def process_cpu(pid):
    return sum(thread_cpu(pid).values())


class Sink:
    """nginx on SINK_PORT: answers 200, logs each delivery's arrival on /hook/<phase>."""

    def __init__(self, scratch):
        self.dir = tempfile.mkdtemp(dir=scratch, prefix="nginx-")
        with open(f"{self.dir}/nginx.conf", "w") as f:
            f.write(NGINX_CONF.format(dir=self.dir, port=SINK_PORT))
        nginx = shutil.which("nginx") or "/usr/sbin/nginx"
        subprocess.run([nginx, "-c", f"{self.dir}/nginx.conf", "-p", self.dir], check=True)
        wait_port(SINK_PORT)
        with open(f"{self.dir}/nginx.pid") as f:
            self.master = int(f.read())
        self.log = f"{self.dir}/arrivals.log"

    def workers(self):
        out = subprocess.run(["pgrep", "-P", str(self.master)], capture_output=True, text=True).stdout
        return [int(p) for p in out.split()]

    def cpu(self):
        return sum(process_cpu(p) for p in self.workers())

    def arrivals(self, phase):
        """(arrival time, sent time or None) of every delivery to /hook/<phase> logged so far."""
        out = []
        suffix = f"/hook/{phase}"
        try:
            with open(self.log) as f:
                for line in f:
                    parts = line.split()
                    if len(parts) == 3 and parts[2] == suffix:
                        sent = None if parts[1] == "-" else float(parts[1])
                        out.append((float(parts[0]), sent))
        except FileNotFoundError:
            pass
        return out

    def count(self, phase):
        # A cheap count: grep is faster than parsing in Python for large logs.
        try:
            out = subprocess.run(["grep", "-c", f" /hook/{phase}$", self.log], capture_output=True,
                                 text=True).stdout
            return int(out.strip() or 0)
        except ValueError:
            return 0

    def accepted(self):
        """Connections nginx has accepted so far."""
        c = http.client.HTTPConnection("127.0.0.1", SINK_PORT)
        c.request("GET", "/status")
        text = c.getresponse().read().decode()
        c.close()
        return int(text.splitlines()[2].split()[0])

    def stop(self):
        subprocess.run(["kill", str(self.master)])
        shutil.rmtree(self.dir, ignore_errors=True)


def wait_port(port, path=None, deadline_s=60):
    deadline = time.time() + deadline_s
    while True:
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            if path:
                c.request("GET", path, headers={"Authorization": "Bearer " + TOKEN})
                if c.getresponse().status < 500:
                    return
            else:
                c.connect()
                return
        except OSError:
            pass
        if time.time() > deadline:
            raise RuntimeError(f"nothing answers on port {port}")
        time.sleep(0.05)


def database_cpu():
    """CPU seconds of every PostgreSQL process (the server and its backends) on this machine."""
    total = 0.0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
        except (FileNotFoundError, ProcessLookupError):
            continue
        if stat[stat.index("(") + 1:stat.rindex(")")].startswith("postgres"):
            fields = stat[stat.rindex(")") + 2:].split()
            total += (int(fields[11]) + int(fields[12])) / TICKS
    return total


class Quiver:
    store = None

    def __init__(self, binary, scratch):
        self.dir = tempfile.mkdtemp(dir=scratch, prefix="quiver-")
        environment, self.schema = postgres_environment(Quiver.store, self.dir)
        self.process = subprocess.Popen(
            [binary, "serve", "--dev", "--bind", f"127.0.0.1:{QUIVER_PORT}", "--data-dir", self.dir],
            stdout=subprocess.DEVNULL, stderr=open(f"{self.dir}/server.log", "w"), env=environment)
        wait_port(QUIVER_PORT, "/v2/keys")

    def cpu(self):
        """(queue writer thread, everything else) CPU seconds."""
        threads = thread_cpu(self.process.pid)
        writer = sum(v for k, v in threads.items() if k.startswith("quiver-writer-q"))
        return writer, sum(threads.values()) - writer

    def metric(self, name):
        """A metric's value from `/metrics` (summed over its labels), or None where the build has none."""
        connection = http.client.HTTPConnection("127.0.0.1", QUIVER_PORT, timeout=10)
        connection.request("GET", "/metrics")
        text = connection.getresponse().read().decode()
        connection.close()
        values = [float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                  if line.startswith(name + " ") or line.startswith(name + "{")]
        return sum(values) if values else None

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.dir, ignore_errors=True)
        if self.schema:
            drop_schema(Quiver.store, self.schema)


def wrk(url, path, headers, connections, seconds, scratch):
    script = tempfile.NamedTemporaryFile("w", suffix=".lua", dir=scratch, delete=False)
    lines = "\n".join(f'wrk.headers["{k}"] = "{v}"' for k, v in headers.items())
    script.write(WRK_SCRIPT.format(path=path, body=BODY, headers=lines))
    script.close()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.time()
    out = subprocess.run(
        ["wrk", "-t2", f"-c{connections}", f"-d{seconds}s", "--latency", "-s", script.name, url],
        capture_output=True, text=True, check=True).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    os.unlink(script.name)
    total = int(re.search(r"(\d+) requests in", out).group(1))
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    bad = int(bad.group(1)) if bad else 0
    if bad:
        raise RuntimeError(f"{bad} of {total} answers were not 2xx:\n{out}")
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return {"ok": total, "rate": rate, "started": started, "wrk_cpu": cpu,
            "answer_p50_ms": wrk_percentile(out, 50), "answer_p99_ms": wrk_percentile(out, 99)}


def wrk_percentile(out, percent):
    """A percentile of the answers' latency from wrk's `--latency` distribution, in milliseconds."""
    found = re.search(rf"^\s+{percent}%\s+([\d.]+)(us|ms|s)\s*$", out, re.MULTILINE)
    if not found:
        return None
    scale = {"us": 0.001, "ms": 1.0, "s": 1000.0}[found.group(2)]
    return float(found.group(1)) * scale


def publish_url(path):
    return f"/v2/publish/http://127.0.0.1:{SINK_PORT}/hook/{path}"


def wait_arrivals(sink, phase, expected, quiet_s=2.0, deadline_s=600):
    """Waits until `expected` deliveries reached the sink and none came for `quiet_s`."""
    deadline = time.time() + deadline_s
    last_count, last_change = -1, time.time()
    while time.time() < deadline:
        count = sink.count(phase)
        if count != last_count:
            last_count, last_change = count, time.time()
        elif count >= expected and time.time() - last_change > quiet_s:
            return count
        time.sleep(0.1)
    raise RuntimeError(f"{phase}: only {last_count} of {expected} deliveries arrived")


def preload(n):
    """Publishes n messages delayed by 7 days, in batches of 100 on four connections."""
    if n > 0:
        entry = {"destination": f"http://127.0.0.1:{SINK_PORT}/hook/never", "body": BODY,
                 "headers": {"Svc-Delay": "7d"}}
        publish_batches(QUIVER_PORT, [entry] * 100, math.ceil(n / 100))


def phase_publish(args, sink, connections, delay, tag):
    quiver = Quiver(args.binary, args.scratch)
    try:
        preload(args.preload)
        headers = {"Authorization": "Bearer " + TOKEN}
        if delay:
            headers["Svc-Delay"] = "7d"
        w0, s0 = quiver.cpu()
        n0 = sink.cpu()
        d0 = database_cpu()
        a0 = sink.accepted()
        result = wrk(f"http://127.0.0.1:{QUIVER_PORT}", publish_url(tag), headers, connections,
                     args.seconds, args.scratch)
        if not delay:
            delivered = wait_arrivals(sink, tag, result["ok"])
            arrivals = sink.arrivals(tag)
            last = max(t for t, _ in arrivals)
            during = sum(1 for t, _ in arrivals if t <= result["started"] + args.seconds)
            result["in_out"] = result["ok"] / (last - result["started"])
            result["delivered_during"] = during / args.seconds
            result["delivered"] = delivered
            # Deliveries that finished before their publish was written (logged with it, no row).
            folded = quiver.metric("quiver_deliveries_logged_with_publish_total")
            result["folded"] = None if folded is None else 100 * folded / max(delivered, 1)
            # Publishes answered once their message was delivered, before their write committed.
            early = quiver.metric("quiver_publishes_answered_when_delivered_total")
            result["answered_early"] = None if early is None else 100 * early / max(result["ok"], 1)
        w1, s1 = quiver.cpu()
        n1 = sink.cpu()
        d1 = database_cpu()
        result["sink_connections"] = sink.accepted() - a0 - 1
        messages = result["ok"]
        result["cpu_writer_us"] = (w1 - w0) / messages * 1e6
        result["cpu_server_us"] = (s1 - s0) / messages * 1e6
        result["cpu_rest_us"] = ((n1 - n0) + result["wrk_cpu"]) / messages * 1e6
        result["cpu_database_us"] = (d1 - d0) / messages * 1e6
        return result
    finally:
        quiver.stop()


def phase_drain(args, sink, tag):
    quiver = Quiver(args.binary, args.scratch)
    try:
        preload(args.preload)
        # Far enough ahead for the whole backlog to be in before it falls due.
        due = math.ceil(time.time()) + 3 + math.ceil(args.backlog / 10_000)
        entry = {"destination": f"http://127.0.0.1:{SINK_PORT}/hook/{tag}", "body": BODY,
                 "headers": {"Svc-Not-Before": str(due)}}
        publish_batches(QUIVER_PORT, [entry] * 100, args.backlog // 100)
        if time.time() >= due:
            raise RuntimeError("the backlog was not all published before it fell due")
        expected = (args.backlog // 100) * 100
        # The CPU the delivery of the backlog costs, from just before it falls due.
        time.sleep(max(0.0, due - time.time() - 0.2))
        w0, s0 = quiver.cpu()
        d0 = database_cpu()
        wait_arrivals(sink, tag, expected)
        w1, s1 = quiver.cpu()
        d1 = database_cpu()
        arrivals = sink.arrivals(tag)
        last = max(t for t, _ in arrivals)
        first = min(t for t, _ in arrivals)
        return {"rate": expected / (last - due), "rate_from_first": expected / (last - first),
                "cpu_writer_us": (w1 - w0) / expected * 1e6, "cpu_server_us": (s1 - s0) / expected * 1e6,
                "cpu_database_us": (d1 - d0) / expected * 1e6}
    finally:
        quiver.stop()


def phase_latency(args, sink, tag):
    quiver = Quiver(args.binary, args.scratch)
    try:
        total = int(args.rate * args.latency_seconds)
        workers = 4
        started = time.time() + 0.2

        def run(k):
            c = http.client.HTTPConnection("127.0.0.1", QUIVER_PORT)
            for i in range(k, total, workers):
                at = started + i / args.rate
                pause = at - time.time()
                if pause > 0:
                    time.sleep(pause)
                # nginx logs arrivals in whole milliseconds: the send time is cut to
                # milliseconds too, so each latency is the true one rounded up or down to a millisecond.
                sent = math.floor(time.time() * 1000) / 1000
                request(c, "POST", publish_url(tag), BODY, {"Svc-Forward-X-Sent": f"{sent:.3f}"})

        threads = [threading.Thread(target=run, args=(k,)) for k in range(workers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wait_arrivals(sink, tag, total, quiet_s=1.0)
        latencies = sorted((t - s) * 1000 for t, s in sink.arrivals(tag) if s is not None)
        pick = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))]
        return {"p50": pick(0.50), "p99": pick(0.99), "max": latencies[-1],
                "achieved": total / (time.time() - started)}
    finally:
        quiver.stop()


def store_label(store):
    """A store's name in figures: `sqlite`, or the PostgreSQL URL's database."""
    return "sqlite" if store is None else "postgres " + store.rsplit("/", 1)[-1]


def phase_pgbench(store, connections, seconds, scratch):
    """`pgbench`'s single-row inserts per second into a table of a schema of its own in `store`, one
    transaction each, from `connections` clients; None when pgbench fails."""
    schema = f"bench_pgbench_{secrets.token_hex(4)}"
    script = os.path.join(scratch, f"{schema}.sql")
    psql = lambda sql: subprocess.run(["psql", store, "-q", "-c", sql], check=True, stdout=subprocess.DEVNULL)
    psql(f"CREATE SCHEMA {schema}; CREATE TABLE {schema}.single_rows (id BIGSERIAL PRIMARY KEY, body TEXT)")
    try:
        with open(script, "w") as f:
            f.write(f"INSERT INTO {schema}.single_rows (body) VALUES ('x');\n")
        ran = subprocess.run(["pgbench", "-n", "-j", "2", "-c", str(connections), "-T", str(seconds), "-f", script,
                              store], capture_output=True, text=True)
        if ran.returncode != 0:
            # Most often more clients than the server's `max_connections`: the run goes on without it.
            print(f"  pgbench with {connections} clients failed: {ran.stderr.strip()[-300:]}", flush=True)
            return None
        return float(re.search(r"tps = ([\d.]+)", ran.stdout).group(1))
    finally:
        if os.path.exists(script):
            os.unlink(script)
        drop_schema(store, schema)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", default=None)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--connections", default="32,256")
    parser.add_argument("--backlog", type=int, default=50_000)
    parser.add_argument("--rate", type=int, default=1000)
    parser.add_argument("--latency-seconds", type=int, default=5)
    parser.add_argument("--preload", type=int, default=0)
    parser.add_argument("--phases", default="baseline,publish,sustained,drain,latency")
    parser.add_argument("--scratch", default=None)
    parser.add_argument("--store", default=None,
                        help="a postgres:// URL, or a comma-separated list of them and `sqlite`; default: sqlite")
    args = parser.parse_args()
    stores = [None if s == "sqlite" else s for s in (args.store or "sqlite").split(",")]
    known = {"baseline", "publish", "sustained", "drain", "latency", "pgbench"}
    unknown = set(args.phases.split(",")) - known
    if unknown:
        parser.error(f"unknown phases {', '.join(sorted(unknown))}; known: {', '.join(sorted(known))}")
    if "pgbench" in args.phases.split(",") and not any(stores):
        parser.error("the pgbench phase needs a postgres:// store (--store)")
    args.binary = release_binary(args.binary)
    args.scratch = args.scratch or tempfile.gettempdir()
    os.makedirs(args.scratch, exist_ok=True)
    ensure_tools()
    phases = args.phases.split(",")
    connections = [int(c) for c in args.connections.split(",")]
    sink = Sink(args.scratch)
    rows = {}

    def record(name, value):
        rows.setdefault(name, []).append(value)
        print(f"  {name}: {value:,.1f}", flush=True)

    def record_answers(named, kind, result, c):
        """How long a publish waited for its answer: with a fixed number of connections, each waiting
        for its answer before the next publish, the rate is the connections over this time."""
        for p in (50, 99):
            if result[f"answer_p{p}_ms"] is not None:
                record(named(f"{kind} answer p{p} ms, {c} connections"), result[f"answer_p{p}_ms"])

    def record_cpu(named, kind, result, c):
        """The CPU split of a publish or sustained phase, per message."""
        for part in ("writer", "server", "rest") + (("database",) if Quiver.store else ()):
            record(named(f"{kind} CPU us/msg {part}, {c}"), result[f"cpu_{part}_us"])

    try:
        for r in range(args.rounds):
            print(f"round {r + 1}", flush=True)
            for x, store in enumerate(stores):
                Quiver.store = store
                named = (lambda n, store=store: f"{n} [{store_label(store)}]") if len(stores) > 1 else (lambda n: n)
                for c in connections:
                    if "baseline" in phases:
                        base = wrk(f"http://127.0.0.1:{SINK_PORT}", "/baseline", {}, c, args.seconds, args.scratch)
                        record(named(f"baseline req/s, {c} connections"), base["rate"])
                    if "publish" in phases:
                        p = phase_publish(args, sink, c, True, f"p{r}c{c}x{x}")
                        record(named(f"publish (7d delay) msg/s, {c} connections"), p["rate"])
                        if "baseline" in phases:
                            record(named(f"publish / baseline %, {c} connections"), 100 * p["rate"] / base["rate"])
                        record_cpu(named, "publish", p, c)
                        record_answers(named, "publish", p, c)
                    if "sustained" in phases:
                        s = phase_publish(args, sink, c, False, f"s{r}c{c}x{x}")
                        record(named(f"sustained in-and-out msg/s, {c} connections"), s["in_out"])
                        record(named(f"sustained acknowledged msg/s, {c} connections"), s["rate"])
                        record(named(f"sustained delivered during load msg/s, {c} connections"), s["delivered_during"])
                        if "baseline" in phases:
                            record(named(f"in-and-out / baseline %, {c} connections"), 100 * s["in_out"] / base["rate"])
                        record_cpu(named, "sustained", s, c)
                        record_answers(named, "sustained", s, c)
                        record(named(f"sustained connections opened to the sink, {c}"), s["sink_connections"])
                        if s["folded"] is not None:
                            record(named(f"sustained deliveries logged with their publish %, {c}"), s["folded"])
                        if s["answered_early"] is not None:
                            record(named(f"sustained publishes answered once delivered %, {c}"), s["answered_early"])
                    if "pgbench" in phases and store:
                        tps = phase_pgbench(store, c, args.seconds, args.scratch)
                        if tps is not None:
                            record(named(f"pgbench single-row inserts/s, {c} clients"), tps)
                            if "sustained" in phases:
                                record(named(f"sustained in-and-out / pgbench %, {c} connections"),
                                       100 * s["in_out"] / tps)
                if "drain" in phases:
                    d = phase_drain(args, sink, f"d{r}x{x}")
                    record(named(f"drain of {args.backlog} msg/s (from due time)"), d["rate"])
                    record(named(f"drain of {args.backlog} msg/s (from first arrival)"), d["rate_from_first"])
                    record(named("drain CPU us/msg writer"), d["cpu_writer_us"])
                    record(named("drain CPU us/msg server"), d["cpu_server_us"])
                    if Quiver.store:
                        record(named("drain CPU us/msg database"), d["cpu_database_us"])
                if "latency" in phases:
                    lat = phase_latency(args, sink, f"l{r}x{x}")
                    record(named(f"latency at {args.rate} msg/s p50 ms"), lat["p50"])
                    record(named(f"latency at {args.rate} msg/s p99 ms"), lat["p99"])
                    record(named(f"latency at {args.rate} msg/s max ms"), lat["max"])
    finally:
        sink.stop()
    print(f"\nmedians of {args.rounds} rounds (binary {args.binary}, preload {args.preload}):")
    print("| figure | median | lowest | highest |\n|---|---:|---:|---:|")
    for name, values in rows.items():
        print(f"| {name} | {statistics.median(values):,.1f} | {min(values):,.1f} | {max(values):,.1f} |")


if __name__ == "__main__":
    main()
