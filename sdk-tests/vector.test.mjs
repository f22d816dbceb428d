// Drives a running Quiver with the official @upstash/vector client. Started by crates/quiver/tests/it/sdk.rs
// with VECTOR_URL, VECTOR_TOKEN (a 3-dimension COSINE index) and VECTOR_READ_ONLY_TOKEN set.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Index } from "@upstash/vector";

const index = new Index({ url: process.env.VECTOR_URL, token: process.env.VECTOR_TOKEN });
const readOnly = new Index({ url: process.env.VECTOR_URL, token: process.env.VECTOR_READ_ONLY_TOKEN });

test("upsert, query with metadata and vectors, fetch, range, update, delete, info", async () => {
  await index.reset({ all: true });
  assert.equal(
    await index.upsert([
      { id: "a", vector: [0.1, 0.2, 0.3], metadata: { genre: "sci-fi", year: 1999 }, data: "first" },
      { id: "b", vector: [0.3, 0.2, 0.1], metadata: { genre: "drama", year: 2005 } },
      { id: 3, vector: [0.9, 0.1, 0.0] },
    ]),
    "Success",
  );
  const hits = await index.query({ vector: [0.1, 0.2, 0.3], topK: 2, includeMetadata: true, includeVectors: true, includeData: true });
  assert.equal(hits.length, 2);
  assert.equal(hits[0].id, "a");
  assert.equal(hits[0].score, 1);
  assert.deepEqual(hits[0].vector, [0.1, 0.2, 0.3]);
  assert.deepEqual(hits[0].metadata, { genre: "sci-fi", year: 1999 });
  assert.equal(hits[0].data, "first");

  const filtered = await index.query({ vector: [0.1, 0.2, 0.3], topK: 5, filter: "year > 2000 AND genre = 'drama'" });
  assert.deepEqual(filtered.map((h) => h.id), ["b"]);

  const fetched = await index.fetch(["a", "missing", "3"], { includeMetadata: true });
  assert.equal(fetched[0].id, "a");
  assert.equal(fetched[1], null);
  assert.equal(fetched[2].id, "3");
  const byPrefix = await index.fetch({ prefix: "a" });
  assert.deepEqual(byPrefix.map((v) => v.id), ["a"]);

  const page = await index.range({ cursor: 0, limit: 2, includeVectors: true });
  assert.deepEqual(page.vectors.map((v) => v.id), ["a", "b"]);
  const rest = await index.range({ cursor: page.nextCursor, limit: 2 });
  assert.deepEqual(rest.vectors.map((v) => v.id), ["3"]);
  assert.equal(rest.nextCursor, "");

  assert.deepEqual(await index.update({ id: "b", metadata: { year: 2006 }, metadataUpdateMode: "PATCH" }), { updated: 1 });
  const updated = await index.fetch(["b"], { includeMetadata: true });
  assert.deepEqual(updated[0].metadata, { genre: "drama", year: 2006 });

  const many = await index.queryMany([
    { vector: [0.1, 0.2, 0.3], topK: 1 },
    { vector: [0.9, 0.1, 0.0], topK: 1 },
  ]);
  assert.equal(many.length, 2);
  assert.equal(many[1][0].id, "3");

  assert.deepEqual(await index.delete(["3"]), { deleted: 1 });
  assert.deepEqual(await index.delete({ filter: "genre = 'drama'" }), { deleted: 1 });
  const info = await index.info();
  assert.equal(info.vectorCount, 1);
  assert.equal(info.dimension, 3);
  assert.equal(info.similarityFunction, "COSINE");
});

test("namespaces: write, list, query inside, delete", async () => {
  const ns = index.namespace("sdk-ns");
  await ns.upsert({ id: "n1", vector: [1, 0, 0] });
  assert.ok((await index.listNamespaces()).includes("sdk-ns"));
  const hits = await ns.query({ vector: [1, 0, 0], topK: 1 });
  assert.equal(hits[0].id, "n1");
  assert.equal(await index.deleteNamespace("sdk-ns"), "Success");
  assert.ok(!(await index.listNamespaces()).includes("sdk-ns"));
});

test("resumable query fetches further results and stops", async () => {
  await index.upsert([1, 2, 3, 4].map((i) => ({ id: `r${i}`, vector: [i, 1, 0] })));
  const { result, fetchNext, stop } = await index.resumableQuery({ vector: [1, 1, 0], topK: 2 });
  assert.equal(result.length, 2);
  const next = await fetchNext(2);
  assert.equal(next.length, 2);
  assert.equal(await stop(), "Success");
});

test("the read-only token reads but cannot write, and errors carry the server's message", async () => {
  await readOnly.query({ vector: [1, 0, 0], topK: 1 });
  await assert.rejects(readOnly.upsert({ id: "x", vector: [1, 0, 0] }), /Forbidden/);
  await assert.rejects(index.upsert({ id: "x", vector: [1, 0] }), /Invalid vector dimension: 2, expected: 3/);
});
