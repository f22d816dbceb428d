// Drives a running Quiver with the official @upstash/qstash client. Started by crates/quiver/tests/it/sdk.rs
// with QSTASH_URL, QSTASH_TOKEN, QSTASH_CURRENT_SIGNING_KEY and QSTASH_NEXT_SIGNING_KEY set.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { Client, Receiver } from "@upstash/qstash";

const client = new Client({ baseUrl: process.env.QSTASH_URL, token: process.env.QSTASH_TOKEN });
const verifier = new Receiver({
  currentSigningKey: process.env.QSTASH_CURRENT_SIGNING_KEY,
  nextSigningKey: process.env.QSTASH_NEXT_SIGNING_KEY,
});

/** A local HTTP endpoint that records requests; paths starting /fail answer 500. */
const received = [];
const server = http.createServer((request, response) => {
  const chunks = [];
  request.on("data", (chunk) => chunks.push(chunk));
  request.on("end", () => {
    received.push({ path: request.url, method: request.method, headers: request.headers, body: Buffer.concat(chunks).toString() });
    response.statusCode = request.url.startsWith("/fail") ? 500 : 200;
    response.end(request.url.startsWith("/fail") ? "failed on purpose" : "ok");
  });
});
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
const base = `http://127.0.0.1:${server.address().port}`;
// Retries of the /fail deliveries may still be on their way: dropping the open connections lets the
// process end at once instead of waiting for them.
after(() => {
  server.close();
  server.closeAllConnections();
});

/** Polls `check` until it returns a value (deliveries are asynchronous); fails after ~10 s. */
async function eventually(check) {
  for (let i = 0; i < 200; i++) {
    const value = await check();
    if (value) return value;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error("condition not met in time");
}

test("publishJSON delivers a signed message that the SDK's Receiver verifies", async () => {
  const { messageId } = await client.publishJSON({
    url: `${base}/hook`,
    body: { hello: "world" },
    headers: { "X-Custom": "forwarded" },
  });
  assert.match(messageId, /^msg_/);
  const delivery = await eventually(() => received.find((r) => r.headers["upstash-message-id"] === messageId));
  assert.equal(delivery.body, JSON.stringify({ hello: "world" }));
  assert.equal(delivery.headers["x-custom"], "forwarded");
  assert.equal(delivery.headers["content-type"], "application/json");
  const valid = await verifier.verify({ signature: delivery.headers["upstash-signature"], body: delivery.body, url: `${base}/hook` });
  assert.equal(valid, true);
  await assert.rejects(verifier.verify({ signature: delivery.headers["upstash-signature"], body: "tampered", url: `${base}/hook` }));
});

test("url groups: add endpoints, get, list, publish fans out, remove endpoints, delete", async () => {
  await client.urlGroups.addEndpoints({ name: "sdk-group", endpoints: [{ name: "first", url: `${base}/g1` }, { url: `${base}/g2` }] });
  const group = await client.urlGroups.get("sdk-group");
  assert.equal(group.name, "sdk-group");
  assert.deepEqual(group.endpoints.map((e) => e.url), [`${base}/g1`, `${base}/g2`]);
  const all = await client.urlGroups.list();
  assert.ok(all.some((g) => g.name === "sdk-group"));

  const responses = await client.publishJSON({ urlGroup: "sdk-group", body: { n: 1 } });
  assert.equal(responses.length, 2);
  await eventually(() => received.some((r) => r.path === "/g1") && received.some((r) => r.path === "/g2"));

  await client.urlGroups.removeEndpoints({ name: "sdk-group", endpoints: [{ name: "first" }] });
  assert.deepEqual((await client.urlGroups.get("sdk-group")).endpoints.map((e) => e.url), [`${base}/g2`]);
  await client.urlGroups.delete("sdk-group");
  await assert.rejects(client.urlGroups.get("sdk-group"));
});

test("messages: a delayed message can be read and cancelled", async () => {
  const { messageId } = await client.publish({ url: `${base}/later`, body: "later", delay: 3600, retries: 2 });
  const message = await client.messages.get(messageId);
  assert.equal(message.messageId, messageId);
  assert.equal(message.url, `${base}/later`);
  assert.equal(message.maxRetries, 2);
  assert.ok(message.notBefore >= message.createdAt + 3_600_000);
  const cancelled = await client.messages.cancel(messageId);
  assert.equal(cancelled.cancelled, 1);
  await assert.rejects(client.messages.get(messageId));
});

test("a message whose retries run out lands in the DLQ, which lists, retries and deletes", async () => {
  const { messageId } = await client.publish({ url: `${base}/fail/dlq`, body: "doomed", retries: 0 });
  const dead = await eventually(async () => {
    const { messages } = await client.dlq.listMessages();
    return messages.find((m) => m.messageId === messageId);
  });
  assert.equal(dead.responseStatus, 500);
  assert.equal(dead.responseBody, "failed on purpose");
  const retried = await client.dlq.retry([dead.dlqId]);
  assert.equal(retried.responses.length, 1);
  const again = await eventually(async () => {
    const { messages } = await client.dlq.listMessages();
    return messages.find((m) => m.messageId === retried.responses[0].messageId);
  });
  const deleted = await client.dlq.delete({ dlqIds: [again.dlqId] });
  assert.equal(deleted.deleted, 1);
});

test("batchJSON publishes every item", async () => {
  const results = await client.batchJSON([
    { url: `${base}/batch/1`, body: { i: 1 } },
    { url: `${base}/batch/2`, body: { i: 2 } },
  ]);
  assert.equal(results.length, 2);
  assert.ok(results.every((r) => r.messageId.startsWith("msg_")));
  await eventually(() => received.filter((r) => r.path.startsWith("/batch/")).length === 2);
});

test("logs list a message's states", async () => {
  const { messageId } = await client.publishJSON({ url: `${base}/logged`, body: {} });
  const logs = await eventually(async () => {
    const { logs } = await client.logs({ filter: { messageId } });
    return logs.some((l) => l.state === "DELIVERED") && logs;
  });
  assert.deepEqual(new Set(logs.map((l) => l.state)), new Set(["CREATED", "ACTIVE", "DELIVERED"]));
});

test("callbacks arrive with the destination's response", async () => {
  await client.publishJSON({ url: `${base}/with-callback`, body: { job: 1 }, callback: `${base}/callback` });
  const callback = await eventually(() => received.find((r) => r.path === "/callback"));
  const body = JSON.parse(callback.body);
  assert.equal(body.status, 200);
  assert.equal(Buffer.from(body.body, "base64").toString(), "ok");
});

test("queues: upsert, enqueue, get, list, pause, resume, delete", async () => {
  const queue = client.queue({ queueName: "sdk-queue" });
  await queue.upsert({ parallelism: 1 });
  const { messageId } = await queue.enqueueJSON({ url: `${base}/queued`, body: { n: 1 } });
  assert.match(messageId, /^msg_/);
  await eventually(() => received.find((r) => r.path === "/queued"));
  const info = await queue.get();
  assert.equal(info.name, "sdk-queue");
  assert.equal(info.parallelism, 1);
  assert.equal(info.paused, false);
  await queue.pause();
  assert.equal((await queue.get()).paused, true);
  await queue.resume();
  const all = await client.queue().list();
  assert.ok(all.some((q) => q.name === "sdk-queue"));
  await queue.delete();
  await assert.rejects(queue.get());
});

test("schedules: create, get, list, pause, resume, delete", async () => {
  const { scheduleId } = await client.schedules.create({
    destination: `${base}/scheduled`,
    cron: "*/5 * * * *",
    body: "tick",
    retries: 2,
    headers: { "X-Custom": "yes" },
  });
  const schedule = await client.schedules.get(scheduleId);
  assert.equal(schedule.scheduleId, scheduleId);
  assert.equal(schedule.cron, "*/5 * * * *");
  assert.equal(schedule.destination, `${base}/scheduled`);
  assert.equal(schedule.retries, 2);
  assert.equal(schedule.isPaused, false);
  assert.ok(schedule.nextScheduleTime > Date.now() - 60_000);
  assert.ok((await client.schedules.list()).some((s) => s.scheduleId === scheduleId));
  await client.schedules.pause({ schedule: scheduleId });
  assert.equal((await client.schedules.get(scheduleId)).isPaused, true);
  await client.schedules.resume({ schedule: scheduleId });
  await client.schedules.delete(scheduleId);
  await assert.rejects(client.schedules.get(scheduleId));
});
