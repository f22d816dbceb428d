#!/usr/bin/env python3
"""Reading the events log and the dead letter queue when they are large: 10,000,000 events and 100,000
dead letters by default.

Starts `quiver serve --dev` on a scratch directory and publishes messages (in batches of 100) to a closed
local port with `Svc-Retries: 0`, so each fails at once, leaving four real events (CREATED, ACTIVE, ERROR,
FAILED, kept in two rows) and a dead letter. It stops the server and copies those rows inside `queue.db` (new seqs, message
ids and dead-letter ids; everything else byte for byte) until the log holds --events events and the DLQ
--dead-letters dead letters, starts the server again, and times reads through the API, each five times:
the newest page of the log, the log filtered by one message id and by state, and the newest page of the
DLQ, filtered and not.

With --delivered N, N more messages are delivered to a local receiver first (three events each, in
one row), so that the log is mostly deliveries and the failures (--failed, 2,500 by default) are rare, as
in a healthy queue; the state filters then look for states the log seldom holds.

With --waiting N, N messages delayed by seven days are published after the copying, so the newest N
events of the log are CREATED events of waiting messages, as when a backlog of scheduled work builds
up: a log whose newest rows carry no other event.

With --cancelled N, N messages delayed by seven days are published after the copying and then cancelled
(`DELETE /v2/messages`), before the --waiting ones: the newest events are then N cancels, as after a
user cancels a backlog, and carry no attempt.

With --store postgres://USER@HOST:PORT/DB, Quiver keeps its data in a schema of its own in that database
(dropped at the end), and the rows are copied there.

Usage: bench/log_scale.py [--binary target/release/quiver] [--events 10000000] [--dead-letters 100000]
                          [--failed 2500] [--delivered 0] [--cancelled 0] [--waiting 0]
                          [--store URL] [--scratch DIR]
"""

import argparse
import http.client
import http.server
import os
import secrets
import shutil
import sqlite3
import statistics
import subprocess
import tempfile
import threading
import time

from common import publish_batches, release_binary, request

PORT = 18192
RECEIVER_PORT = 18193
# Columns a row of events has besides those of every build: the events it also stands for (migration 11).
CARRIED = ("active_at", "created_seq", "created_at")


def serve(binary, directory, store=None):
    command = [binary, "serve", "--dev", "--bind", f"127.0.0.1:{PORT}", "--data-dir", directory]
    environment = dict(os.environ)
    if store is not None:
        command += ["--store", store.url]
        environment["QUIVER__STORAGE__SCHEMA"] = store.schema
    server = subprocess.Popen(command, env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while True:
        try:
            connection = http.client.HTTPConnection("127.0.0.1", PORT)
            request(connection, "GET", "/v2/keys")
            return server, connection
        except (OSError, RuntimeError):
            if time.time() > deadline:
                raise
            time.sleep(0.1)


def stop(server):
    server.terminate()
    server.wait(60)


def carries(db):
    """Whether the events rows of `db` may stand for more events than their own (migration 11)."""
    return "active_at" in {row[1] for row in db.execute("PRAGMA table_info(events)")}


def count(directory, table):
    """Rows of `table`; for `events`, the events they stand for (a row may stand for an ACTIVE and a
    CREATED event besides its own)."""
    db = sqlite3.connect(f"file:{directory}/queue.db?mode=ro", uri=True)
    try:
        what = "COUNT(*)"
        if table == "events" and carries(db):
            what = "COUNT(*) + COUNT(active_at) + COUNT(created_seq)"
        return db.execute(f"SELECT {what} FROM {table}").fetchone()[0]
    finally:
        db.close()


class Receiver(http.server.BaseHTTPRequestHandler):
    """Answers every delivery with 200."""

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def grow(directory, events, dead_letters):
    """Copies the seeded rows until the tables hold `events` and `dead_letters` rows."""
    db = sqlite3.connect(f"{directory}/queue.db")
    db.execute("PRAGMA journal_mode = WAL")
    carried = carries(db)
    seed_events = db.execute(
        """SELECT COUNT(*) + COUNT(active_at) + COUNT(created_seq), MAX(seq),
               MAX(time) - MIN(COALESCE(created_at, time)) + 1 FROM events""" if carried else
        "SELECT COUNT(*), MAX(seq), MAX(time) - MIN(time) + 1 FROM events").fetchone()
    n, top, span = seed_events
    extra_columns = ", active_at, created_seq, created_at" if carried else ""
    extra_values = ", active_at + ?1 * ?3, created_seq + ?1 * ?2, created_at + ?1 * ?3" if carried else ""
    copies = events // n - 1
    started = time.time()
    for k in range(1, copies + 1):
        db.execute(
            f"""INSERT INTO events (account_id, seq, message_id, time, state, url, topic_name, queue_name,
                   schedule_id, labels, spec, detail{extra_columns})
               SELECT account_id, seq + ?1 * ?2, message_id || printf('x%07d', ?1), time + ?1 * ?3, state, url,
                   topic_name, queue_name, schedule_id, labels, spec, detail{extra_values}
               FROM events WHERE seq <= ?2""",
            (k, top, span))
        if k % 50 == 0:
            db.commit()
            print(f"  events: {(k + 1) * n:,} ({time.time() - started:.0f} s)", flush=True)
    db.commit()
    seed_dead = db.execute("SELECT COUNT(*), MAX(seq) FROM dead_letters").fetchone()
    n_dead, top_dead = seed_dead
    for k in range(1, dead_letters // n_dead):
        db.execute(
            """INSERT INTO dead_letters (dlq_id, account_id, message_id, url, topic_name, queue_name,
                   schedule_id, labels, response_status, failed_at, retried, not_before, created_at, spec,
                   body, response_headers, response_body, failure_callback)
               SELECT dlq_id || printf('x%05d', ?1), account_id, message_id || printf('x%07d', ?1), url,
                   topic_name, queue_name, schedule_id, labels, response_status, failed_at + ?1, retried,
                   not_before, created_at, spec, body, response_headers, response_body, failure_callback
               FROM dead_letters WHERE seq <= ?2""",
            (k, top_dead))
    db.commit()
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()


class Postgres:
    """A schema of its own in a PostgreSQL database: its counts, and its rows copied."""

    def __init__(self, url):
        self.url = url
        self.schema = f"bench_log_{secrets.token_hex(4)}"

    def sql(self, *statements):
        """Runs `statements` in the schema, each in a transaction of its own; returns what they print."""
        command = ["psql", self.url, "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", "-c", f"SET search_path = {self.schema}"]
        for statement in statements:
            command += ["-c", statement]
        return subprocess.run(command, check=True, capture_output=True, text=True).stdout.strip()

    def count(self, table):
        what = "COUNT(*) + COUNT(active_at) + COUNT(created_at)" if table == "events" else "COUNT(*)"
        return int(self.sql(f"SELECT {what} FROM {table}") or 0)

    def oldest_message_id(self):
        return self.sql("SELECT message_id FROM events ORDER BY seq LIMIT 1")

    def grow(self, events, dead_letters):
        """Copies the seeded rows, in order and with new seqs, until the tables hold `events` events and
        `dead_letters` rows."""
        n, top, span = map(int, self.sql(
            """SELECT COUNT(*) + COUNT(active_at) + COUNT(created_at), MAX(seq),
                   MAX(time) - MIN(COALESCE(created_at, time)) + 1 FROM events""").split("|"))
        copies, step, started = events // n - 1, 50, time.time()
        for first in range(1, copies + 1, step):
            last = min(copies, first + step - 1)
            self.sql(f"""INSERT INTO events (account_id, message_id, time, state, url, host, path, topic_name,
                             queue_name, schedule_id, labels, spec, detail, active_at, created_at)
                         SELECT account_id, message_id || 'x' || LPAD(k::TEXT, 7, '0'), time + k * {span}, state,
                             url, host, path, topic_name, queue_name, schedule_id, labels, spec, detail,
                             active_at + k * {span}, created_at + k * {span}
                         FROM events, GENERATE_SERIES({first}, {last}) k WHERE seq <= {top} ORDER BY k, seq""")
            print(f"  events: {(last + 1) * n:,} ({time.time() - started:.0f} s)", flush=True)
        n_dead, top_dead = map(int, self.sql("SELECT COUNT(*), MAX(seq) FROM dead_letters").split("|"))
        self.sql(f"""INSERT INTO dead_letters (dlq_id, account_id, message_id, url, topic_name, queue_name,
                         schedule_id, labels, response_status, failed_at, retried, not_before, created_at, spec,
                         body, response_headers, response_body, failure_callback)
                     SELECT dlq_id || 'x' || LPAD(k::TEXT, 5, '0'), account_id,
                         message_id || 'x' || LPAD(k::TEXT, 7, '0'), url, topic_name, queue_name, schedule_id,
                         labels, response_status, failed_at + k, retried, not_before, created_at, spec, body,
                         response_headers, response_body, failure_callback
                     FROM dead_letters, GENERATE_SERIES(1, {dead_letters // n_dead - 1}) k WHERE seq <= {top_dead}
                     ORDER BY k, seq""")
        self.sql("VACUUM ANALYZE events", "VACUUM ANALYZE dead_letters")

    def size(self):
        return int(self.sql(f"""SELECT SUM(pg_total_relation_size(c.oid)) FROM pg_class c
                                JOIN pg_namespace s ON s.oid = c.relnamespace
                                WHERE s.nspname = '{self.schema}' AND c.relkind = 'r'"""))

    def drop(self):
        subprocess.run(["psql", self.url, "-q", "-c", f"SET client_min_messages = warning; "
                        f"DROP SCHEMA IF EXISTS {self.schema} CASCADE"], check=True)


def timed(connection, path, runs=5):
    times = []
    body = None
    for _ in range(runs):
        started = time.perf_counter()
        body = request(connection, "GET", path)
        times.append((time.perf_counter() - started) * 1000)
    return times, body


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", default=None)
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--dead-letters", type=int, default=100_000)
    parser.add_argument("--failed", type=int, default=2_500)
    parser.add_argument("--delivered", type=int, default=0)
    parser.add_argument("--cancelled", type=int, default=0)
    parser.add_argument("--waiting", type=int, default=0)
    parser.add_argument("--store", default=None, help="a postgres:// URL; default: SQLite in the scratch directory")
    parser.add_argument("--scratch", default=None)
    args = parser.parse_args()
    args.binary = release_binary(args.binary)
    directory = tempfile.mkdtemp(dir=args.scratch or tempfile.gettempdir())
    store = Postgres(args.store) if args.store else None
    counted = store.count if store else lambda table: count(directory, table)
    try:
        server, connection = serve(args.binary, directory, store)
        receiver = http.server.ThreadingHTTPServer(("127.0.0.1", RECEIVER_PORT), Receiver)
        threading.Thread(target=receiver.serve_forever, daemon=True).start()
        delivered = {"destination": f"http://127.0.0.1:{RECEIVER_PORT}/x", "body": "x"}
        for done in range(0, args.delivered, 100):
            publish_batches(PORT, [delivered] * min(100, args.delivered - done), 1, connections=1)
        failing = {"destination": "http://127.0.0.1:9/x", "body": "x", "headers": {"Svc-Retries": "0"}}
        for done in range(0, args.failed, 100):
            publish_batches(PORT, [failing] * min(100, args.failed - done), 1, connections=1)
        wanted = 3 * args.delivered + 4 * args.failed
        deadline = time.time() + 300
        while counted("events") < wanted or counted("dead_letters") < args.failed:
            assert time.time() < deadline, "the seed messages were not all delivered or failed in time"
            time.sleep(0.2)
        stop(server)
        receiver.shutdown()
        print(f"seeded {wanted:,} events and {args.failed:,} dead letters; copying", flush=True)
        if store:
            store.grow(args.events, args.dead_letters)
        else:
            grow(directory, args.events, args.dead_letters)
        server, connection = serve(args.binary, directory, store)
        waiting = {"destination": f"http://127.0.0.1:{RECEIVER_PORT}/x", "body": "x",
                   "headers": {"Svc-Delay": "7d"}}
        publish_batches(PORT, [waiting] * 100, args.cancelled // 100)
        if args.cancelled:
            cancelled = request(connection, "DELETE", "/v2/messages")
            print(f"  cancelled: {cancelled}", flush=True)
        for done in range(0, args.waiting, 10_000):
            publish_batches(PORT, [waiting] * 100, min(10_000, args.waiting - done) // 100)
            if (done + 10_000) % 100_000 == 0:
                print(f"  waiting: {done + 10_000:,}", flush=True)
        events, dead = counted("events") + args.waiting * (store is None), counted("dead_letters")
        size = store.size() if store else os.path.getsize(f"{directory}/queue.db")
        print(f"{events:,} events, {dead:,} dead letters, {'tables' if store else 'queue.db'} {size / 1e9:.2f} GB",
              flush=True)
        newest, page = timed(connection, "/v2/events")
        some_id = page["events"][len(page["events"]) // 2]["messageId"]
        oldest_id = store.oldest_message_id() if store else sqlite3.connect(
            f"file:{directory}/queue.db?mode=ro", uri=True).execute(
            "SELECT message_id FROM events ORDER BY seq LIMIT 1").fetchone()[0]
        rows = [
            ("events: newest page", newest),
            ("events: second page (cursor)", timed(connection, f"/v2/events?cursor={page['cursor']}")[0]),
            ("events: one message id (newest)", timed(connection, f"/v2/events?messageId={some_id}")[0]),
            ("events: one message id (oldest)", timed(connection, f"/v2/events?messageId={oldest_id}")[0]),
            ("events: state=FAILED", timed(connection, "/v2/events?state=FAILED")[0]),
            ("events: state=CANCELED (none unless --cancelled)", timed(connection, "/v2/events?state=CANCELED")[0]),
            ("events: state=ACTIVE", timed(connection, "/v2/events?state=ACTIVE")[0]),
            ("events: state=CREATED", timed(connection, "/v2/events?state=CREATED")[0]),
            ("dlq: newest page", timed(connection, "/v2/dlq")[0]),
            ("dlq: url filter", timed(connection, "/v2/dlq?url=http://127.0.0.1:9/x")[0]),
        ]
        stop(server)
        print(f"\n{events:,} events, {dead:,} dead letters; five reads each (ms):")
        print("| read | median | lowest | highest |\n|---|---:|---:|---:|")
        for name, times in rows:
            print(f"| {name} | {statistics.median(times):.1f} | {min(times):.1f} | {max(times):.1f} |")
    finally:
        shutil.rmtree(directory, ignore_errors=True)
        if store:
            store.drop()


if __name__ == "__main__":
    main()
