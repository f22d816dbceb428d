#!/usr/bin/env python3
"""Time of reading the events log (`GET /v2/events`) when the log is large.

Starts `quiver serve --dev` on a scratch directory and publishes 20,000 messages (in batches of 100)
to a closed local port with `Svc-Retries: 0`, so each fails at once and leaves four events (CREATED,
ACTIVE, ERROR, FAILED): 80,000 in all. It then times five reads of the newest page of 100 events
(most of them borrow their spec from their message's CREATED event), and five reads filtered by one
message id. With `--pending N`, it then publishes N messages delayed by a day, whose CREATED events are
read from their message rows until they are delivered, and times the same reads again (the newest page
is then all pending messages) plus a read filtered by a pending message's id.

Usage: bench/events_listing.py PATH/TO/quiver [--scratch DIR] [--pending N]
"""

import argparse
import http.client
import json
import os
import shutil
import sqlite3
import subprocess
import tempfile
import time

TOKEN = "eyJVc2VySUQiOiJkZWZhdWx0VXNlciIsIlBhc3N3b3JkIjoiZGVmYXVsdFBhc3N3b3JkIn0="
PORT = 18183
MESSAGES = 20_000
EVENTS = 4 * MESSAGES


def request(connection, method, path, body=None):
    headers = {"Authorization": "Bearer " + TOKEN, "Content-Type": "application/json"}
    connection.request(method, path, body=body, headers=headers)
    response = connection.getresponse()
    data = response.read()
    assert response.status < 300, (response.status, data)
    return json.loads(data) if data else None


def timed(connection, path, runs=5):
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        body = request(connection, "GET", path)
        times.append((time.perf_counter() - started) * 1000)
    return times, body


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("--scratch", default=None)
    parser.add_argument("--pending", type=int, default=0)
    args = parser.parse_args()
    directory = tempfile.mkdtemp(dir=args.scratch or tempfile.gettempdir())
    server = subprocess.Popen(
        [args.binary, "serve", "--dev", "--bind", f"127.0.0.1:{PORT}", "--data-dir", directory],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.time() + 30
        while True:
            try:
                connection = http.client.HTTPConnection("127.0.0.1", PORT)
                request(connection, "GET", "/v2/keys")
                break
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(0.1)
        batch = json.dumps(
            [{"destination": "http://127.0.0.1:9/x", "body": "x", "headers": {"Svc-Retries": "0"}}] * 100
        )
        for _ in range(MESSAGES // 100):
            request(connection, "POST", "/v2/batch", batch)
        log = sqlite3.connect(f"file:{directory}/queue.db?mode=ro", uri=True)
        deadline = time.time() + 300
        while log.execute("SELECT COUNT(*) FROM events").fetchone()[0] < EVENTS:
            assert time.time() < deadline, "the messages did not all fail in time"
            time.sleep(0.5)
        newest, page = timed(connection, "/v2/events?count=100")
        message_id = page["events"][0]["messageId"]
        filtered, _ = timed(connection, f"/v2/events?messageId={message_id}")
        name = os.path.basename(args.binary)
        print(f"{name}: {EVENTS} events in the log")
        print(f"{name}: GET /v2/events?count=100: " + ", ".join(f"{t:.1f}" for t in newest) + " ms")
        print(f"{name}: GET /v2/events?messageId=...: " + ", ".join(f"{t:.1f}" for t in filtered) + " ms")
        if args.pending:
            delayed = json.dumps(
                [{"destination": "http://127.0.0.1:9/x", "body": "x", "headers": {"Svc-Delay": "1d"}}] * 100
            )
            for _ in range(args.pending // 100):
                request(connection, "POST", "/v2/batch", delayed)
            newest, page = timed(connection, "/v2/events?count=100")
            assert all(e["state"] == "CREATED" for e in page["events"]), "the newest page is the pending messages"
            pending_id = page["events"][0]["messageId"]
            filtered, _ = timed(connection, f"/v2/events?messageId={pending_id}")
            finished, _ = timed(connection, f"/v2/events?messageId={message_id}")
            print(f"{name}: and {args.pending} pending messages")
            print(f"{name}: GET /v2/events?count=100: " + ", ".join(f"{t:.1f}" for t in newest) + " ms")
            print(f"{name}: GET /v2/events?messageId=(pending): " + ", ".join(f"{t:.1f}" for t in filtered) + " ms")
            print(f"{name}: GET /v2/events?messageId=(finished): " + ", ".join(f"{t:.1f}" for t in finished) + " ms")
    finally:
        server.kill()
        server.wait()
        shutil.rmtree(directory)


if __name__ == "__main__":
    main()
