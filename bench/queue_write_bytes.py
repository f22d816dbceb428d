#!/usr/bin/env python3
"""Bytes the queue writes to disk per published message, and the WAL pages each commit touches.

Starts `quiver serve --dev` on a scratch directory, publishes delayed messages (so nothing is delivered
while it measures) and reads the server's `write_bytes` from /proc before and after:

  * one message per request, one request at a time: every publish is a commit of its own;
  * batches of 64 messages per request (`/v2/batch`): one commit per 64 messages.

It then reads the frames in `queue.db-wal` of a fresh run of single publishes and names the B-tree each
frame's page belongs to (SQLite's `dbstat`), so the figures show which tables and indexes cost pages.

Usage: bench/queue_write_bytes.py PATH/TO/quiver [--scratch DIR]
"""

import argparse
import collections
import http.client
import json
import os
import shutil
import sqlite3
import struct
import subprocess
import tempfile
import time

TOKEN = "eyJVc2VySUQiOiJkZWZhdWx0VXNlciIsIlBhc3N3b3JkIjoiZGVmYXVsdFBhc3N3b3JkIn0="
PORT = 18181
DESTINATION = "http://127.0.0.1:9/bench"
BODY = '{"event":"bench","n":1}'


class Server:
    def __init__(self, binary, directory):
        self.directory = directory
        self.process = subprocess.Popen(
            [binary, "serve", "--dev", "--bind", f"127.0.0.1:{PORT}", "--data-dir", directory],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.time() + 30
        while True:
            try:
                self.connection = http.client.HTTPConnection("127.0.0.1", PORT)
                self.connection.request("GET", "/v2/keys", headers={"Authorization": "Bearer " + TOKEN})
                self.connection.getresponse().read()
                break
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(0.1)

    def written(self):
        with open(f"/proc/{self.process.pid}/io") as io:
            fields = dict(line.split(": ") for line in io.read().splitlines() if line)
        return int(fields["write_bytes"])

    def publish(self):
        self.connection.request(
            "POST",
            f"/v2/publish/{DESTINATION}",
            body=BODY,
            headers={"Authorization": "Bearer " + TOKEN, "Svc-Delay": "7d"},
        )
        response = self.connection.getresponse()
        response.read()
        assert response.status < 300, response.status

    def batch(self, size):
        messages = [{"destination": DESTINATION, "body": BODY, "headers": {"Svc-Delay": "7d"}}] * size
        self.connection.request(
            "POST",
            "/v2/batch",
            body=json.dumps(messages),
            headers={"Authorization": "Bearer " + TOKEN, "Content-Type": "application/json"},
        )
        response = self.connection.getresponse()
        response.read()
        assert response.status < 300, response.status

    def stop(self):
        self.process.kill()
        self.process.wait()


def bytes_per_message(binary, scratch, size, requests):
    directory = tempfile.mkdtemp(dir=scratch)
    server = Server(binary, directory)
    send = server.publish if size == 1 else (lambda: server.batch(size))
    for _ in range(20):
        send()
    before = server.written()
    for _ in range(requests):
        send()
    after = server.written()
    server.stop()
    shutil.rmtree(directory)
    return (after - before) / (size * requests)


def frames_per_commit(binary, scratch, commits):
    directory = tempfile.mkdtemp(dir=scratch)
    server = Server(binary, directory)
    for _ in range(commits):
        server.publish()
    copy = tempfile.mkdtemp(dir=scratch)
    for name in ("queue.db", "queue.db-wal"):
        shutil.copy(os.path.join(directory, name), os.path.join(copy, name))
    server.stop()
    with open(os.path.join(copy, "queue.db-wal"), "rb") as wal:
        data = wal.read()
    page_size = struct.unpack(">I", data[8:12])[0]
    transactions, current, offset = [], [], 32
    while offset + 24 + page_size <= len(data):
        page, commit_size = struct.unpack(">II", data[offset : offset + 8])
        current.append(page)
        if commit_size:
            transactions.append(current)
            current = []
        offset += 24 + page_size
    owners = dict(sqlite3.connect(os.path.join(copy, "queue.db")).execute("SELECT pageno, name FROM dbstat"))
    shutil.rmtree(copy)
    shutil.rmtree(directory)
    last = transactions[-commits // 2 :]
    counts = collections.Counter(owners.get(page, "?") for transaction in last for page in transaction)
    return page_size, sum(map(len, last)) / len(last), {k: v / len(last) for k, v in counts.most_common()}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("--scratch", default=None)
    args = parser.parse_args()
    scratch = args.scratch or tempfile.gettempdir()
    name = os.path.basename(args.binary)
    single = bytes_per_message(args.binary, scratch, 1, 500)
    batched = bytes_per_message(args.binary, scratch, 64, 100)
    page_size, frames, owners = frames_per_commit(args.binary, scratch, 400)
    print(f"{name}: bytes written per message: {single:.0f} B one per commit, {batched:.0f} B 64 per commit")
    print(f"{name}: WAL frames per single-publish commit: {frames:.2f} ({page_size} B pages)")
    for owner, count in owners.items():
        print(f"    {owner}: {count:.2f}")


if __name__ == "__main__":
    main()
