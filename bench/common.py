"""What the bench scripts share: the development queue token, authorized requests, the release binary,
publishing many batches at once, and a server's PostgreSQL schema of its own."""

import http.client
import json
import os
import subprocess
import threading
import time

# `quiver serve --dev`'s queue token (README: "--dev uses fixed, public credentials").
TOKEN = "eyJVc2VySUQiOiJkZWZhdWx0VXNlciIsIlBhc3N3b3JkIjoiZGVmYXVsdFBhc3N3b3JkIn0="


def request(connection, method, path, body=None, headers=None):
    """Sends an authorized request; returns the JSON answer (None when empty), raises on a non-2xx."""
    all_headers = {"Authorization": "Bearer " + TOKEN, "Content-Type": "application/json"}
    all_headers.update(headers or {})
    connection.request(method, path, body=body, headers=all_headers)
    response = connection.getresponse()
    data = response.read()
    if response.status >= 300:
        raise RuntimeError(f"{method} {path}: {response.status} {data[:200]!r}")
    return json.loads(data) if data else None


def release_binary(given):
    """`given`, or the release build of `quiver`, built first."""
    if given is not None:
        return given
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    subprocess.run(["cargo", "build", "--release", "-p", "quiver"], cwd=root, check=True)
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(root, "target"))
    return os.path.join(target, "release", "quiver")


def publish_batches(port, messages, batches, connections=4):
    """POSTs `batches` copies of the batch `messages` (a list of batch entries) to /v2/batch on `port`,
    over `connections` connections at once."""
    body = json.dumps(messages)
    remaining = [batches]
    lock = threading.Lock()

    def run():
        connection = http.client.HTTPConnection("127.0.0.1", port)
        while True:
            with lock:
                if remaining[0] == 0:
                    return
                remaining[0] -= 1
            request(connection, "POST", "/v2/batch", body)

    threads = [threading.Thread(target=run) for _ in range(connections)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def wait_ready(port, path="/readyz", seconds=30):
    """Waits until a server on `port` answers `path` with 200."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            connection.request("GET", path)
            if connection.getresponse().status == 200:
                return
        except OSError:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"nothing answered 200 at 127.0.0.1:{port}{path}")


def postgres_environment(store, directory):
    """(the environment of a server that keeps its data in a PostgreSQL schema of its own in `store`,
    named after its data directory `directory`; the schema's name), or (a copy of this environment, None)
    when `store` is None (the embedded SQLite)."""
    environment = dict(os.environ)
    if not store:
        return environment, None
    schema = "bench_" + os.path.basename(directory).replace("-", "_").lower()
    environment["QUIVER__STORAGE__URL"] = store
    environment["QUIVER__STORAGE__SCHEMA"] = schema
    return environment, schema


def drop_schema(store, schema):
    """Drops `schema` and everything in it, quietly: the cascade's NOTICE lists every table, in the
    middle of the figures."""
    subprocess.run(["psql", store, "-q", "-c",
                    f"SET client_min_messages = warning; DROP SCHEMA IF EXISTS {schema} CASCADE"],
                   check=True, stdout=subprocess.DEVNULL)
