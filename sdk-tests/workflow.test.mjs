// Runs workflows written with the official @upstash/workflow SDK, served by a small local Node app,
// against a running Quiver. Started by crates/quiver/tests/it/sdk.rs with QSTASH_URL, QSTASH_TOKEN,
// QSTASH_CURRENT_SIGNING_KEY and QSTASH_NEXT_SIGNING_KEY set.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { serve, Client } from "@upstash/workflow";
import { serveMany, createWorkflow } from "@upstash/workflow/cloudflare";

const finished = [];
const sleeping = [];

const { handler: threeSteps } = serve(async (context) => {
  const input = context.requestPayload;
  const first = await context.run("first", async () => input.n + 1);
  const second = await context.run("second", async () => first * 10);
  await context.run("record", async () => {
    finished.push({ runId: context.workflowRunId, input, first, second });
  });
});

const { handler: sleepy } = serve(async (context) => {
  await context.run("before", async () => {
    sleeping.push(context.workflowRunId);
  });
  await context.sleep("nap", 3600);
  await context.run("after", async () => {
    finished.push({ runId: context.workflowRunId, woke: true });
  });
});

const waited = [];

const { handler: waiting } = serve(async (context) => {
  const eventId = `order-${context.workflowRunId}`;
  await context.run("register", async () => {
    waited.push({ runId: context.workflowRunId, registered: true });
  });
  const { eventData, timeout } = await context.waitForEvent("wait for payment", eventId, { timeout: "1h" });
  await context.run("record", async () => {
    finished.push({ runId: context.workflowRunId, eventData, timeout });
  });
});

const { handler: calling } = serve(async (context) => {
  const answer = await context.call("ask the api", {
    url: `${base}/api`,
    method: "POST",
    body: { question: "total" },
    headers: { "x-asked-by": "workflow" },
  });
  await context.run("record", async () => {
    finished.push({ runId: context.workflowRunId, status: answer.status, body: answer.body });
  });
});

const apiCalls = [];

const hooks = [];
const { handler: hooked } = serve(async (context) => {
  const webhook = await context.createWebhook("make a webhook");
  await context.run("share it", async () => {
    hooks.push({ runId: context.workflowRunId, url: webhook.webhookUrl });
  });
  const { request, timeout } = await context.waitForWebhook("wait for the call", webhook, "1h");
  const text = request ? await request.text() : undefined;
  await context.run("record", async () => {
    finished.push({ runId: context.workflowRunId, method: request?.method, text, timeout });
  });
});

// context.invoke needs workflows served together (serveMany), so the invoker can name the invoked one.
const child = createWorkflow(async (context) => {
  const n = context.requestPayload.n;
  return await context.run("double", async () => n * 2);
});
const parent = createWorkflow(async (context) => {
  const { body, isFailed, isCanceled } = await context.invoke("ask the child", {
    workflow: child,
    body: { n: context.requestPayload.n },
  });
  await context.run("record", async () => {
    finished.push({ runId: context.workflowRunId, invoked: body, isFailed, isCanceled });
  });
});
const { fetch: many } = serveMany({ parent, child });

const server = http.createServer(async (request, response) => {
  const chunks = [];
  for await (const chunk of request) chunks.push(chunk);
  if (request.url.startsWith("/api")) {
    apiCalls.push({
      method: request.method,
      askedBy: request.headers["x-asked-by"],
      body: Buffer.concat(chunks).toString(),
    });
    response.writeHead(201, { "content-type": "application/json" });
    response.end(JSON.stringify({ total: 42 }));
    return;
  }
  const url = `${base}${request.url}`;
  const fetchRequest = new Request(url, {
    method: request.method,
    headers: request.headers,
    body: ["GET", "HEAD"].includes(request.method) ? undefined : Buffer.concat(chunks),
  });
  if (request.url.startsWith("/many/")) {
    const answer = await many({ request: fetchRequest, env: process.env });
    response.writeHead(answer.status, Object.fromEntries(answer.headers));
    response.end(Buffer.from(await answer.arrayBuffer()));
    return;
  }
  const handler = request.url.startsWith("/hooked")
    ? hooked
    : request.url.startsWith("/sleepy")
    ? sleepy
    : request.url.startsWith("/waiting")
      ? waiting
      : request.url.startsWith("/calling")
        ? calling
        : threeSteps;
  try {
    const answer = await handler(fetchRequest);
    response.writeHead(answer.status, Object.fromEntries(answer.headers));
    response.end(Buffer.from(await answer.arrayBuffer()));
  } catch (error) {
    console.error("workflow handler failed", error);
    response.writeHead(500);
    response.end(String(error));
  }
});
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
const base = `http://127.0.0.1:${server.address().port}`;
// Every test waits for its run to settle, so no delivery is due when the app stops; closing the idle
// keep-alive connections lets the process end at once.
after(() => {
  server.close();
  server.closeAllConnections();
});

const client = new Client({ baseUrl: process.env.QSTASH_URL, token: process.env.QSTASH_TOKEN });

async function eventually(check) {
  for (let i = 0; i < 300; i++) {
    const value = await check();
    if (value) return value;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error("condition not met in time");
}

/** Waits until Quiver's run log shows the run in `state`: its last step has been answered. */
async function settles(workflowRunId, state) {
  await eventually(async () => {
    const { runs } = await client.logs({ workflowRunId });
    return runs.length === 1 && runs[0].workflowState === state;
  });
}

test("a three-step workflow runs to completion", async () => {
  const { workflowRunId } = await client.trigger({ url: `${base}/three-steps`, body: { n: 4 } });
  const done = await eventually(() => finished.find((f) => f.runId === workflowRunId));
  assert.deepEqual(done, { runId: workflowRunId, input: { n: 4 }, first: 5, second: 50 });
  await settles(workflowRunId, "RUN_SUCCESS");
});

test("a sleeping run is bulk-cancelled mid-way", async () => {
  const { workflowRunId } = await client.trigger({ url: `${base}/sleepy`, body: {} });
  await eventually(() => sleeping.includes(workflowRunId));
  const result = await eventually(async () => {
    const answer = await client.cancel({ ids: [workflowRunId] }).catch(() => client.cancel([workflowRunId]));
    return answer.cancelled === 1 && answer;
  });
  assert.equal(result.cancelled, 1);
  assert.ok(!finished.some((f) => f.runId === workflowRunId && f.woke));
  await settles(workflowRunId, "RUN_CANCELED");
});

test("a filtered bulk cancel takes only the runs its filter matches", async () => {
  const tagged = await client.trigger({ url: `${base}/sleepy`, body: {}, label: "cancel-me" });
  const kept = await client.trigger({ url: `${base}/sleepy`, body: {}, label: "keep-me" });
  await eventually(() => sleeping.includes(tagged.workflowRunId) && sleeping.includes(kept.workflowRunId));
  const byLabel = await eventually(async () => {
    const answer = await client.cancel({ filter: { label: "cancel-me" } });
    return answer.cancelled === 1 && answer;
  });
  assert.equal(byLabel.cancelled, 1);
  await settles(tagged.workflowRunId, "RUN_CANCELED");
  const { runs } = await client.logs({ workflowRunId: kept.workflowRunId });
  assert.equal(runs[0].workflowState, "RUN_STARTED", "a run the filter does not match keeps running");
  assert.deepEqual(runs[0].labels, ["keep-me"]);
  const none = await client.cancel({ filter: { workflowUrl: `${base}/no-such-workflow` } });
  assert.equal(none.cancelled, 0);
  const all = await eventually(async () => {
    const answer = await client.cancel({ all: true });
    return answer.cancelled >= 1 && answer;
  });
  assert.ok(all.cancelled >= 1);
  await settles(kept.workflowRunId, "RUN_CANCELED");
});

test("context.invoke runs another workflow and continues with its result", async () => {
  const { workflowRunId } = await client.trigger({ url: `${base}/many/parent`, body: { n: 21 } });
  const done = await eventually(() => finished.find((f) => f.runId === workflowRunId));
  assert.deepEqual(done, { runId: workflowRunId, invoked: 42, isFailed: false, isCanceled: false });
  await settles(workflowRunId, "RUN_SUCCESS");
});

test("a webhook URL from createWebhook hands a third party's call to waitForWebhook", async () => {
  const { workflowRunId } = await client.trigger({ url: `${base}/hooked`, body: {} });
  const hook = await eventually(() => hooks.find((h) => h.runId === workflowRunId));
  assert.ok(hook.url.startsWith(`${process.env.QSTASH_URL}/v2/workflows/hooks/`), hook.url);
  const called = await fetch(hook.url, { method: "POST", body: "payment done" });
  assert.equal(called.status, 200);
  const done = await eventually(() => finished.find((f) => f.runId === workflowRunId));
  assert.deepEqual(done, { runId: workflowRunId, method: "POST", text: "payment done", timeout: false });
  await settles(workflowRunId, "RUN_SUCCESS");
});

test("a run waiting for an event continues with the data notify sends", async () => {
  const { workflowRunId } = await client.trigger({ url: `${base}/waiting`, body: {} });
  const eventId = `order-${workflowRunId}`;
  const waiters = await eventually(async () => {
    const found = await client.getWaiters({ eventId });
    return found.length === 1 && found;
  });
  assert.equal(waiters[0].url, `${base}/waiting`);
  const notified = await client.notify({ eventId, eventData: { paid: true, amount: 42 } });
  assert.equal(notified.length, 1);
  assert.ok(notified[0].messageId);
  const done = await eventually(() => finished.find((f) => f.runId === workflowRunId));
  assert.deepEqual(done, { runId: workflowRunId, eventData: { paid: true, amount: 42 }, timeout: false });
  assert.deepEqual(await client.getWaiters({ eventId }), []);
  await settles(workflowRunId, "RUN_SUCCESS");
});

test("context.call reaches the API once and the run continues with its answer", async () => {
  const { workflowRunId } = await client.trigger({ url: `${base}/calling`, body: {} });
  const done = await eventually(() => finished.find((f) => f.runId === workflowRunId));
  assert.equal(done.status, 201);
  assert.deepEqual(done.body, { total: 42 });
  assert.deepEqual(apiCalls, [
    { method: "POST", askedBy: "workflow", body: JSON.stringify({ question: "total" }) },
  ]);
  await settles(workflowRunId, "RUN_SUCCESS");
});
