"""Drives a running Quiver with the official upstash-vector client (PyPI).

Started by crates/quiver/tests/it/sdk.rs with VECTOR_URL, VECTOR_TOKEN (a 3-dimension COSINE index),
SPARSE_TOKEN (a SPARSE index), HYBRID_TOKEN (a 2-dimension HYBRID index), TEXT_TOKEN (a dense index
with ALL_MINILM_L6_V2) and TEXT_HYBRID_TOKEN (a HYBRID index with ALL_MINILM_L6_V2 and BM25) set.
"""

import os
import sys

from upstash_vector import Index, Vector
from upstash_vector.types import Data
from upstash_vector.types import SparseVector, FusionAlgorithm, QueryMode, WeightingStrategy


def check(condition, message):
    if not condition:
        print(f"FAILED: {message}", file=sys.stderr)
        sys.exit(1)


def main():
    index = Index(url=os.environ["VECTOR_URL"], token=os.environ["VECTOR_TOKEN"])
    index.reset(all=True)
    index.upsert(vectors=[
        Vector(id="p1", vector=[0.1, 0.2, 0.3], metadata={"kind": "x"}, data="one"),
        ("p2", [0.3, 0.2, 0.1], {"kind": "y"}),
    ])
    hits = index.query(vector=[0.1, 0.2, 0.3], top_k=2, include_metadata=True, include_vectors=True, include_data=True)
    check(hits[0].id == "p1" and hits[0].score == 1, f"nearest is p1 with score 1: {hits}")
    check(hits[0].vector == [0.1, 0.2, 0.3], f"vectors round-trip exactly: {hits[0].vector}")
    check(hits[0].metadata == {"kind": "x"} and hits[0].data == "one", f"metadata and data: {hits[0]}")
    check(hits[1].data is None, "absent data reads as None")

    fetched = index.fetch(ids=["p2", "nope"], include_metadata=True)
    check(fetched[0].id == "p2" and fetched[1] is None, f"fetch keeps order with None for missing: {fetched}")
    page = index.range(cursor="", limit=1, include_vectors=True)
    check(len(page.vectors) == 1 and page.next_cursor != "", f"first range page: {page}")
    page = index.range(cursor=page.next_cursor, limit=5)
    check([v.id for v in page.vectors] == ["p2"] and page.next_cursor == "", f"last range page: {page}")

    check(index.update(id="p1", metadata={"kind": "z"}) is True, "update reports success")
    check(index.delete(ids=["p2"]).deleted == 1, "delete counts")
    info = index.info()
    check(info.vector_count == 1 and info.dimension == 3 and "" in info.namespaces, f"info: {info}")

    index.upsert(vectors=[("q1", [1.0, 0.0, 0.0])], namespace="py-ns")
    check("py-ns" in index.list_namespaces(), "namespace listed")
    index.delete_namespace("py-ns")

    batch = index.query_many(queries=[{"vector": [1.0, 0.0, 0.0], "top_k": 1}, {"vector": [0.1, 0.2, 0.3], "top_k": 1}])
    check(len(batch) == 2 and batch[1][0].id == "p1", f"query_many: {batch}")

    sparse = Index(url=os.environ["VECTOR_URL"], token=os.environ["SPARSE_TOKEN"])
    sparse.upsert(vectors=[
        Vector(id="s1", sparse_vector=SparseVector([1, 2], [0.1, 0.2])),
        Vector(id="s2", sparse_vector=SparseVector([2, 3], [0.3, 0.4])),
    ])
    hits = sparse.query(sparse_vector=SparseVector([2, 3], [1.0, 1.0]), top_k=5, weighting_strategy=WeightingStrategy.IDF)
    check([h.id for h in hits][0] == "s2", f"sparse query with IDF: {hits}")

    sparse.upsert(vectors=[
        Data(id="t1", data="Cats sleep most of the day.", metadata={"kind": "pets"}),
        Data(id="t2", data="Compilers translate programs.", metadata={"kind": "code"}),
    ])
    hits = sparse.query(data="sleepy cats", top_k=2, include_data=True)
    check(hits[0].id == "t1" and hits[0].data == "Cats sleep most of the day.", f"query by text (BM25): {hits}")

    hybrid = Index(url=os.environ["VECTOR_URL"], token=os.environ["HYBRID_TOKEN"])
    hybrid.upsert(vectors=[
        Vector(id="h1", vector=[1.0, 0.0], sparse_vector=SparseVector([1], [1.0])),
        Vector(id="h2", vector=[0.0, 1.0], sparse_vector=SparseVector([2], [1.0])),
    ])
    hits = hybrid.query(vector=[1.0, 0.0], sparse_vector=SparseVector([1], [1.0]), fusion_algorithm=FusionAlgorithm.DBSF)
    check(hits[0].id == "h1", f"hybrid query: {hits}")

    docs = [
        Data(id="cat", data="A cat is sleeping on the warm windowsill.", metadata={"topic": "pets"}),
        Data(id="rates", data="The central bank raised interest rates again.", metadata={"topic": "money"}),
        Data(id="soup", data="Tomato soup is best served with grilled cheese.", metadata={"topic": "food"}),
    ]
    text = Index(url=os.environ["VECTOR_URL"], token=os.environ["TEXT_TOKEN"])
    text.upsert(vectors=docs)
    hits = text.query(data="my kitten naps in the sun", top_k=2, include_metadata=True, include_data=True)
    check(hits[0].id == "cat" and hits[0].metadata == {"topic": "pets"}, f"dense query by text: {hits}")
    hits = text.query(data="lunch ideas", top_k=1, filter="topic = 'food'", include_vectors=True)
    check(hits[0].id == "soup" and len(hits[0].vector) == 384, f"dense text query with a filter: {hits}")

    text_hybrid = Index(url=os.environ["VECTOR_URL"], token=os.environ["TEXT_HYBRID_TOKEN"])
    text_hybrid.upsert(vectors=docs)
    hits = text_hybrid.query(data="interest rates", top_k=1)
    check(hits[0].id == "rates", f"hybrid query by text: {hits}")
    hits = text_hybrid.query(data="feline", top_k=1, query_mode=QueryMode.DENSE)
    check(hits[0].id == "cat", f"hybrid query by text, dense part only: {hits}")
    print("upstash-vector: all checks passed")


if __name__ == "__main__":
    main()
