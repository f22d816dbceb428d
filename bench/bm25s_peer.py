"""The bm25s peer of `quiver-bench sparse`: BM25 (Lucene variant, k1=1.2, b=0.75) over the same corpus
and queries, one thread. Reads token ids (one document or query per line), writes each query's top 10
as `document:score` pairs to OUT (one line each) and prints {"qps", "index_seconds", "backend"} as JSON.
It uses numba when it is installed, as bm25s does by default.

    python bm25s_peer.py CORPUS QUERIES OUT PASSES
"""

import json
import sys
import time

import bm25s
import numpy as np


def numba_installed():
    try:
        import numba  # noqa: F401
    except ImportError:
        return False
    return True


def read(path):
    with open(path) as lines:
        return [line.split() for line in lines]


def main():
    corpus_path, queries_path, out_path, passes = sys.argv[1:5]
    corpus = read(corpus_path)
    queries = read(queries_path)
    started = time.perf_counter()
    backend = "numba" if numba_installed() else "numpy"
    retriever = bm25s.BM25(k1=1.2, b=0.75, method="lucene", backend=backend)
    retriever.index(corpus, show_progress=False)
    index_seconds = time.perf_counter() - started
    best = 0.0
    for _ in range(int(passes)):
        started = time.perf_counter()
        documents, scores = retriever.retrieve(
            queries, k=10, n_threads=1, show_progress=False, return_as="tuple"
        )
        best = max(best, len(queries) / (time.perf_counter() - started))
    with open(out_path, "w") as out:
        for row, row_scores in zip(np.asarray(documents), np.asarray(scores)):
            out.write(" ".join(f"{int(d)}:{float(s)!r}" for d, s in zip(row, row_scores)) + "\n")
    print(json.dumps({"qps": best, "index_seconds": index_seconds, "backend": backend}))


main()
