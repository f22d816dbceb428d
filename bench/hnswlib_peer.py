"""The hnswlib peer of `quiver-bench vector`: same vectors, same queries, same ground truth, same M and
efConstruction, one thread. Reads the raw little-endian f32 files the Rust side wrote and prints one JSON
object per line.

Install once: python3 -m venv /work/bench-venv && /work/bench-venv/bin/pip install hnswlib numpy
"""

import json
import sys
import time

import hnswlib
import numpy as np


def main():
    directory, dimension, m, ef_construction = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    efs = [int(ef) for ef in sys.argv[5].split(",")]
    base = np.fromfile(f"{directory}/base.f32", dtype="<f4").reshape(-1, dimension)
    queries = np.fromfile(f"{directory}/queries.f32", dtype="<f4").reshape(-1, dimension)
    truth = np.fromfile(f"{directory}/truth.u32", dtype="<u4").reshape(len(queries), -1)
    k = truth.shape[1]

    index = hnswlib.Index(space="ip", dim=dimension)
    index.init_index(max_elements=len(base), M=m, ef_construction=ef_construction, random_seed=1)
    index.set_num_threads(1)
    started = time.perf_counter()
    index.add_items(base, np.arange(len(base)), num_threads=1)
    build_seconds = time.perf_counter() - started
    print(json.dumps({"peer": "hnswlib", "build_per_second": len(base) / build_seconds}), flush=True)

    for ef in efs:
        index.set_ef(max(ef, k))
        # The best of three passes, as on the Rust side.
        seconds = float("inf")
        for _ in range(3):
            started = time.perf_counter()
            labels, _ = index.knn_query(queries, k=k, num_threads=1)
            seconds = min(seconds, time.perf_counter() - started)
        found = sum(len(set(labels[i]) & set(truth[i])) for i in range(len(queries)))
        print(json.dumps({"peer": "hnswlib", "ef": ef, "qps": len(queries) / seconds, "recall": found / truth.size}), flush=True)


if __name__ == "__main__":
    main()
