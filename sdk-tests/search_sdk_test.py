"""Drives a running Quiver with the official upstash-search client (PyPI).

Started by crates/quiver/tests/it/sdk.rs with UPSTASH_SEARCH_REST_URL and UPSTASH_SEARCH_REST_TOKEN (a
search index's) set. The client sends `inputEnrichment: true` and `reranking: false` on every search.
"""

import os
import sys
import time

from upstash_search import Search
from upstash_search.errors import UpstashError


def check(condition, message):
    if not condition:
        print(f"FAILED: {message}", file=sys.stderr)
        sys.exit(1)


def main():
    client = Search(
        url=os.environ["UPSTASH_SEARCH_REST_URL"],
        token=os.environ["UPSTASH_SEARCH_REST_TOKEN"],
    )
    index = client.index("py-movies")
    index.reset()
    index.upsert(documents=[
        {"id": "dune", "content": {"title": "Dune", "plot": "A desert planet and its giant sand worms"}, "metadata": {"year": 1965}},
        ("solaris", {"title": "Solaris", "plot": "A sentient ocean on a distant planet"}, {"year": 1961}),
        {"id": "heat", "content": {"title": "Heat", "plot": "A bank robbery in Los Angeles"}},
    ])
    for _ in range(100):
        if client.info().indexes["py-movies"].pending_document_count == 0:
            break
        time.sleep(0.1)
    info = client.info()
    check(info.indexes["py-movies"].document_count == 3, f"three documents: {info}")
    check("py-movies" in client.list_indexes(), "the index is listed")

    hits = index.search(query="sand worms on a desert world", limit=2)
    check(hits[0].id == "dune" and hits[0].content["title"] == "Dune", f"search by meaning: {hits}")
    check(hits[0].metadata == {"year": 1965}, f"metadata comes back: {hits}")
    hits = index.search(query="planet", limit=3, filter="@metadata.year < 1965")
    check([h.id for h in hits] == ["solaris"], f"filter on metadata: {hits}")
    hits = index.search(query="robbery", limit=3, semantic_weight=0.0)
    check([h.id for h in hits] == ["heat"], f"words only: {hits}")

    fetched = index.fetch(ids=["heat", "missing"])
    check(fetched[0].content == {"title": "Heat", "plot": "A bank robbery in Los Angeles"}, f"fetch: {fetched}")
    check(fetched[0].metadata is None and fetched[1] is None, f"fetch without metadata, and missing: {fetched}")
    page = index.range(cursor="", limit=2)
    rest = index.range(cursor=page.next_cursor, limit=5)
    check(sorted(d.id for d in page.documents + rest.documents) == ["dune", "heat", "solaris"], "range pages")
    check(index.delete(filter="title = 'Heat'") == 1, "delete by content filter")

    try:
        index.search(query="planet", reranking=True)
        check(False, "reranking is refused")
    except UpstashError as error:
        check("reranking" in str(error), f"the refusal names reranking: {error}")

    numbers = client.index("py-numbers")
    numbers.upsert(documents=[("id-0", {"data": 0}), ("id-1", {"data": 1}, {"key": 1}), ("i-d-2", {"data": 2}, {"key": 2})])
    hits = numbers.search("data 1", limit=1)
    check([(h.id, h.content, h.metadata) for h in hits] == [("id-1", {"data": 1}, {"key": 1})], f"numbers: {hits}")
    hits = numbers.search("data 1", limit=1, filter="data = 2")
    check([h.id for h in hits] == ["i-d-2"], f"numbers, filtered: {hits}")
    check([d.id for d in numbers.fetch(prefix="i-")] == ["i-d-2"], "fetch by prefix")
    numbers.upsert(documents=[("text", "a plain string as content")])
    check(numbers.fetch(ids=["text"])[0].content == "a plain string as content", "string content")
    check(numbers.delete(prefix="i-d") == 1, "delete by prefix")
    client.delete_index("py-numbers")

    client.delete_index("py-movies")
    check("py-movies" not in client.list_indexes(), "the index is deleted")
    print("upstash-search: all checks passed")


if __name__ == "__main__":
    main()
