#!/usr/bin/env python3
"""Instructions Quiver executes per message, counted by `valgrind --tool=callgrind`: a figure that does not
move with the machine's load, so that changes to the queue's hot paths can be compared on a shared VM,
where the msg/s of `queue_throughput.py` scatter by 10 % or more between runs.

`quiver serve --dev` runs under callgrind with counting off. The script publishes --warmup messages, turns
counting on, publishes --messages more over --connections connections and waits until the sink (a
threaded Python server in this process, answering 200) has received every one, then turns counting off
and reads the total. Two kinds (--kinds):
  sustained   immediate delivery to the sink: publish, delivery and the outcome's record
  publish     `Svc-Delay: 7d`: publish alone
The figure printed is instructions per message, for the whole process (every thread, the queue writer's
SQLite work included; with --store postgres://..., PostgreSQL's own work is not counted, only the
server's side of it). Under valgrind threads run one at a time and far slower than natively, so
batching and the race between a delivery and its publish's commit differ from a native run: compare
builds with this script, not with `queue_throughput.py`'s rates.

Usage: bench/queue_instructions.py [--binary target/release/quiver] [--messages 3000] [--warmup 300]
                                   [--connections 8] [--kinds sustained,publish] [--scratch DIR] [--keep]
                                   [--store postgres://USER@HOST:PORT/DB]
"""

import argparse
import http.client
import http.server
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time

from common import drop_schema, postgres_environment, release_binary, request, wait_ready

PORT = 18290
SINK_PORT = 18291


class Sink(http.server.ThreadingHTTPServer):
    """Counts the deliveries it answers."""

    daemon_threads = True

    def __init__(self):
        self.received = 0
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", SINK_PORT), SinkHandler)


class SinkHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):  # noqa: N802 (the standard library's name)
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")
        with self.server.lock:
            self.server.received += 1

    def log_message(self, *args):
        pass


def publish(count, connections, delayed):
    """Publishes `count` messages to the sink over `connections` keep-alive connections."""
    remaining = [count]
    lock = threading.Lock()
    headers = {"Svc-Delay": "7d"} if delayed else {}

    def run():
        connection = http.client.HTTPConnection("127.0.0.1", PORT, timeout=600)
        while True:
            with lock:
                if remaining[0] == 0:
                    return
                remaining[0] -= 1
            request(connection, "POST", f"/v2/publish/http://127.0.0.1:{SINK_PORT}/hook",
                    '{"hello":"world","n":12345}', headers)

    threads = [threading.Thread(target=run) for _ in range(connections)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def wait_for(condition, seconds, what):
    deadline = time.time() + seconds
    while not condition():
        if time.time() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.1)


def callgrind(pid, action):
    subprocess.run(["callgrind_control", action, str(pid)], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)


def measure(binary, kind, messages, warmup, connections, scratch, keep, store):
    directory = tempfile.mkdtemp(dir=scratch, prefix="quiver-cg-")
    out = os.path.join(directory, "callgrind.out")
    environment, schema = postgres_environment(store, directory)
    sink = Sink()
    threading.Thread(target=sink.serve_forever, daemon=True).start()
    server = subprocess.Popen(
        ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}",
         binary, "serve", "--dev", "--bind", f"127.0.0.1:{PORT}", "--data-dir", directory],
        stdout=subprocess.DEVNULL, stderr=open(os.path.join(directory, "server.log"), "w"),
        env=environment)
    try:
        # Under valgrind the server starts tens of times slower than natively.
        wait_ready(PORT, seconds=300)
        delayed = kind == "publish"
        publish(warmup, connections, delayed)
        if not delayed:
            wait_for(lambda: sink.received >= warmup, 300, "the warm-up's deliveries")
        callgrind(server.pid, "--instr=on")
        before = sink.received
        publish(messages, connections, delayed)
        if not delayed:
            wait_for(lambda: sink.received >= before + messages, 600, "the deliveries")
        callgrind(server.pid, "--instr=off")
        callgrind(server.pid, "--dump")
    finally:
        server.terminate()
        server.wait()
        sink.shutdown()
        sink.server_close()
        if schema:
            drop_schema(store, schema)
    total = 0
    for name in os.listdir(directory):
        if name.startswith("callgrind.out"):
            with open(os.path.join(directory, name)) as dump:
                for line in dump:
                    # A dump's header carries a summary of 0 when counting was switched on and off by
                    # request; the totals at its end are the count.
                    found = re.match(r"totals: (\d+)", line)
                    if found:
                        total += int(found.group(1))
    if keep:
        print(f"  {kind}: callgrind's dumps kept in {directory}", flush=True)
    else:
        shutil.rmtree(directory, ignore_errors=True)
    return total / messages


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary")
    parser.add_argument("--messages", type=int, default=3000)
    parser.add_argument("--warmup", type=int, default=300)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--kinds", default="sustained,publish")
    parser.add_argument("--scratch", default=None)
    parser.add_argument("--keep", action="store_true", help="keep callgrind's dumps (callgrind_annotate)")
    parser.add_argument("--store", default=None, help="a postgres:// URL: the server keeps its data there")
    args = parser.parse_args()
    binary = release_binary(args.binary)
    for kind in args.kinds.split(","):
        per = measure(binary, kind, args.messages, args.warmup, args.connections, args.scratch, args.keep,
                      args.store)
        print(f"  {kind} instructions/msg: {per:,.0f}", flush=True)


if __name__ == "__main__":
    main()
