#!/usr/bin/env python3
"""Whether Quiver stays responsive for others while clients misbehave.

For each hostile load, a fresh `quiver serve --dev` is started; the script measures the latency of
well-behaved requests (publish, 7-day delay, one connection, sequential) first alone, then while:

  idle        N connections that send half a request line and then nothing
  slow-body   N connections that announce a 1 MiB body and send it at 10 bytes every 100 ms
  big-header  a client that sends requests with a 1 MiB header, one after another

It reports the p50 and p99 of the well-behaved requests, how many of them failed, what the hostile
clients were answered (a 431 for the oversized header is expected), and the server's open files.

Usage: bench/hostile_clients.py [--binary target/release/quiver] [--connections 5000] [--requests 500]
"""

import argparse
import http.client
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import TOKEN, release_binary, wait_ready  # noqa: E402

PORT = 18290


def well_behaved(requests):
    """Latencies (ms) of sequential publishes, and how many failed."""
    latencies, failed = [], 0
    connection = http.client.HTTPConnection("127.0.0.1", PORT, timeout=10)
    for _ in range(requests):
        started = time.perf_counter()
        try:
            connection.request("POST", "/v2/publish/https://example.com/x", body="{}", headers={
                "Authorization": "Bearer " + TOKEN, "Svc-Delay": "7d"})
            response = connection.getresponse()
            response.read()
            if response.status != 200:
                failed += 1
        except OSError:
            failed += 1
            connection = http.client.HTTPConnection("127.0.0.1", PORT, timeout=10)
        latencies.append((time.perf_counter() - started) * 1000)
    return latencies, failed


def idle(count, ready, stop):
    sockets = []
    for _ in range(count):
        s = socket.create_connection(("127.0.0.1", PORT))
        s.sendall(b"POST /v2/publish/https://example.com/x HTTP/1.1\r\nHost: x\r\n")
        sockets.append(s)
    ready.set()
    stop.wait()
    for s in sockets:
        s.close()
    return f"{count} idle connections held"


def slow_body(count, ready, stop):
    sockets = []
    for _ in range(count):
        s = socket.create_connection(("127.0.0.1", PORT))
        s.sendall(("POST /v2/publish/https://example.com/x HTTP/1.1\r\nHost: x\r\n"
                   f"Authorization: Bearer {TOKEN}\r\nContent-Length: 1048576\r\n\r\n").encode())
        sockets.append(s)
    ready.set()
    sent = 0
    while not stop.is_set():
        for s in sockets:
            try:
                s.sendall(b"x" * 10)
                sent += 10
            except OSError:
                pass
        time.sleep(0.1)
    for s in sockets:
        s.close()
    return f"{count} slow bodies, {sent} bytes dripped"


def big_header(_count, ready, stop):
    answers = {}
    header = "x" * (1 << 20)
    ready.set()
    while not stop.is_set():
        try:
            s = socket.create_connection(("127.0.0.1", PORT), timeout=10)
            s.sendall(f"GET /v2/topics HTTP/1.1\r\nHost: x\r\nX-Big: {header}\r\n\r\n".encode())
            line = s.recv(64).split(b"\r\n")[0].decode(errors="replace")
            answers[line] = answers.get(line, 0) + 1
            s.close()
        except OSError as error:
            answers[type(error).__name__] = answers.get(type(error).__name__, 0) + 1
    return f"oversized-header answers: {answers}"


def open_files(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary")
    parser.add_argument("--connections", type=int, default=5000)
    parser.add_argument("--requests", type=int, default=500)
    args = parser.parse_args()
    binary = release_binary(args.binary)
    print("| load | p50 ms | p99 ms | failed | hostile clients | server open files |")
    print("|---|---:|---:|---:|---|---:|")
    for name, hostile in [("none", None), ("idle", idle), ("slow-body", slow_body), ("big-header", big_header)]:
        data = tempfile.mkdtemp(prefix="quiver-hostile-")
        process = subprocess.Popen([binary, "serve", "--dev", "--bind", f"127.0.0.1:{PORT}", "--data-dir", data],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                   env={**os.environ, "RUST_LOG": "warn"})
        try:
            wait_ready(PORT, "/healthz")
            ready, stop = threading.Event(), threading.Event()
            outcome = {}
            thread = None
            if hostile is not None:
                connections = args.connections if hostile is not slow_body else min(args.connections, 1000)
                thread = threading.Thread(
                    target=lambda: outcome.setdefault("text", hostile(connections, ready, stop)))
                thread.start()
                ready.wait()
                time.sleep(0.5)
            files = open_files(process.pid)
            latencies, failed = well_behaved(args.requests)
            stop.set()
            if thread is not None:
                thread.join()
            latencies.sort()
            p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
            print(f"| {name} | {statistics.median(latencies):.2f} | {p99:.2f} | {failed} | "
                  f"{outcome.get('text', '-')} | {files} |", flush=True)
        finally:
            process.terminate()
            process.wait(30)
            shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
