// Drives a running Quiver with the official @upstash/search client. Started by crates/quiver/tests/it/sdk.rs
// with UPSTASH_SEARCH_REST_URL and UPSTASH_SEARCH_REST_TOKEN (a search index's) set.
import { test, beforeEach } from "node:test";
import assert from "node:assert/strict";
import { Search } from "@upstash/search";
import { Index } from "@upstash/vector";

const client = Search.fromEnv();
const books = client.index("books");
const vectorClient = new Index({
  url: process.env.UPSTASH_SEARCH_REST_URL,
  token: process.env.UPSTASH_SEARCH_REST_TOKEN,
});

async function indexed(index) {
  for (let tries = 0; tries < 100; tries++) {
    const info = await index.info();
    if (info.pendingDocumentCount === 0) return info;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error("documents stayed pending");
}

beforeEach(async () => {
  await books.reset();
  await books.upsert([
    { id: "id1", content: { text: "test-data-1" }, metadata: { key: "value1" } },
    { id: "id2", content: { text: "test-data-2" }, metadata: { key: "value2" } },
    { id: "different-id3", content: { text: "different-test-data-3" }, metadata: { key: "value3" } },
  ]);
  await indexed(books);
});

test("documents are fetched, ranged and deleted with their content and metadata", async () => {
  assert.deepEqual(await books.fetch({ ids: ["id1", "id2", "missing"] }), [
    { id: "id1", content: { text: "test-data-1" }, metadata: { key: "value1" } },
    { id: "id2", content: { text: "test-data-2" }, metadata: { key: "value2" } },
    null,
  ]);
  const first = await books.range({ cursor: "0", limit: 1, prefix: "id" });
  assert.deepEqual(first.documents, [{ id: "id1", content: { text: "test-data-1" }, metadata: { key: "value1" } }]);
  const rest = await books.range({ cursor: first.nextCursor, limit: 5, prefix: "id" });
  assert.deepEqual(rest.documents, [{ id: "id2", content: { text: "test-data-2" }, metadata: { key: "value2" } }]);

  assert.deepEqual(await books.delete({ ids: ["id1"] }), { deleted: 1 });
  assert.deepEqual(await books.fetch({ ids: ["id1"] }), [null]);
  await books.reset();
  assert.deepEqual(await books.fetch({ ids: ["id2"] }), [null]);
});

test("search ranks by meaning and words, and filters on content fields", async () => {
  const results = await books.search({ query: "test-data-1", limit: 2, filter: "text GLOB 'test*'" });
  assert.deepEqual(
    results.map(({ id, content, metadata }) => ({ id, content, metadata })),
    [
      { id: "id1", content: { text: "test-data-1" }, metadata: { key: "value1" } },
      { id: "id2", content: { text: "test-data-2" }, metadata: { key: "value2" } },
    ],
  );
  assert.ok(results[0].score > results[1].score);

  const structured = await books.search({
    query: "test-data",
    limit: 2,
    filter: { AND: [{ text: { glob: "test-data-1" } }] },
  });
  assert.deepEqual(structured.map((d) => d.id), ["id1"]);

  const byMetadata = await books.search({
    query: "test-data",
    limit: 3,
    filter: { OR: [{ "@metadata.key": { equals: "value2" } }, { "@metadata.key": { equals: "value3" } }] },
  });
  assert.deepEqual(byMetadata.map((d) => d.id).sort(), ["different-id3", "id2"]);

  const wordsOnly = await books.search({ query: "different", limit: 3, semanticWeight: 0 });
  assert.deepEqual(wordsOnly.map((d) => d.id), ["different-id3"]);

  await assert.rejects(books.search({ query: "x", reranking: true }), /reranking/);
});

test("info counts documents per index, and an index is deleted with its documents", async () => {
  const movies = client.index("movies");
  await movies.upsert({ id: "m1", content: { title: "Dune", year: 1984 } });
  await indexed(movies);
  assert.deepEqual(await movies.info(), { documentCount: 1, pendingDocumentCount: 0 });
  const info = await client.info();
  assert.equal(info.indexes.books.documentCount, 3);
  assert.equal(info.indexes.movies.documentCount, 1);
  assert.equal(info.documentCount, 4);
  assert.equal(typeof info.diskSize, "number");
  assert.ok((await client.listIndexes()).includes("movies"));

  await movies.deleteIndex();
  assert.ok(!(await client.listIndexes()).includes("movies"));
  assert.deepEqual(await movies.info(), { documentCount: 0, pendingDocumentCount: 0 });
});

test("a search index refuses vector operations and malformed documents by name", async () => {
  await assert.rejects(vectorClient.query({ data: "test", topK: 1 }), /not available on a search index/);
  await assert.rejects(books.upsert({ id: "x", content: 42 }), /content: must be a JSON object or a string/);
  await assert.rejects(books.upsert({ id: "x", data: "t", content: { a: "b" } }), /data: is not a field of a document/);
  await vectorClient.reset({ all: true });
  assert.deepEqual(await books.fetch({ ids: ["id1"] }), [null]);
});
