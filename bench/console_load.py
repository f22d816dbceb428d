"""How fast the web console's pages load in a real browser, as a user opens them: a release
`quiver serve --dev` with an index that has data and usage, and a queue with events, then
`console_load.mjs` times each page in Debian's Chromium, a fresh browser context (empty cache) per run.
The goal (issue: web console) is under 300 ms per page.

    python3 bench/console_load.py [--binary PATH] [--runs N]

Needs `scripts/test`'s install of console-tests/ (playwright-core) and Debian's chromium.
"""

import argparse
import base64
import http.client
import json
import os
import socket
import subprocess
import tempfile

from common import release_binary, request, wait_ready

BASIC = "Basic " + base64.b64encode(b"dev@quiver.local:quiver-dev-api-key").decode()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary")
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    binary = release_binary(args.binary)
    port = free_port()
    with tempfile.TemporaryDirectory() as data_dir:
        server = subprocess.Popen(
            [binary, "serve", "--dev", "--data-dir", data_dir, "--bind", f"127.0.0.1:{port}"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait_ready(port)
            connection = http.client.HTTPConnection("127.0.0.1", port)
            index = request(connection, "POST", "/v2/vector/index", json.dumps({
                "name": "bench", "region": "us-east-1", "similarity_function": "COSINE", "dimension_count": 8,
            }), {"Authorization": BASIC})
            token = {"Authorization": "Bearer " + index["token"]}
            vectors = [{"id": str(i), "vector": [((i * 7 + j) % 11) / 11 + 0.01 for j in range(8)],
                        "metadata": {"n": i}} for i in range(1000)]
            request(connection, "POST", "/upsert", json.dumps(vectors), token)
            for i in range(50):
                request(connection, "POST", "/query", json.dumps({"vector": vectors[i]["vector"], "topK": 5}), token)
            for i in range(20):
                request(connection, "POST", f"/v2/publish/http://127.0.0.1:{port}/healthz",
                        json.dumps({"n": i}), {"Svc-Delay": "7d"})
            env = dict(os.environ, QUIVER_URL=f"http://127.0.0.1:{port}", INDEX_ID=index["id"], RUNS=str(args.runs))
            here = os.path.dirname(os.path.abspath(__file__))
            subprocess.run(["node", os.path.join(here, "console_load.mjs")], env=env, check=True)
        finally:
            server.terminate()
            server.wait()


if __name__ == "__main__":
    main()
