// Drives the web console in a real Chromium (Debian's, through playwright-core) against a running
// Quiver: sign-in, an index created, text upserted and queried, the statistics charts read, a message
// that fails into the dead letter queue and its retry, and a schedule created and paused. Each step
// asserts on what the page shows, and screenshots are saved under SCREENSHOTS.
//
// Environment: QUIVER_URL, QUIVER_EMAIL, QUIVER_API_KEY, FAILING_URL (a receiver answering 500),
// SCREENSHOTS (a folder), CHROMIUM (default /usr/bin/chromium).
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { chromium } from "playwright-core";

const base = process.env.QUIVER_URL.replace(/\/$/, "");
const shots = process.env.SCREENSHOTS;
mkdirSync(shots, { recursive: true });

let browser;
let page;

before(async () => {
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync"],
  });
  page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  page.setDefaultTimeout(15000);
});

after(async () => {
  await browser?.close();
});

async function shot(name) {
  await page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
}

test("a wrong API key is refused with the API's message, the right one signs in", async () => {
  const started = Date.now();
  await page.goto(`${base}/console`);
  await page.getByRole("heading", { name: "Sign in to Quiver" }).waitFor();
  const loadMillis = Date.now() - started;
  console.log(`console page loaded (sign-in shown) in ${loadMillis} ms`);
  await page.getByLabel("Email").fill(process.env.QUIVER_EMAIL);
  await page.getByLabel("API key").fill("not-the-key");
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("alert").filter({ hasText: "401: Unauthorized: no account has that email and API key" }).waitFor();
  await page.getByLabel("API key").fill(process.env.QUIVER_API_KEY);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { name: "Vector indexes" }).waitFor();
  const cookies = await page.context().cookies();
  const session = cookies.find((c) => c.name === "quiver_console");
  assert.ok(session, "a session cookie is set");
  assert.equal(session.httpOnly, true);
  assert.equal(session.sameSite, "Strict");
  assert.equal(await page.evaluate(() => document.cookie), "", "the page's script cannot read the session");
  assert.equal(await page.evaluate(() => localStorage.length + sessionStorage.length), 0, "nothing in web storage");
  await page.reload();
  await page.getByRole("heading", { name: "Vector indexes" }).waitFor();
});

test("an index with a model is created, text upserted and queried, and its statistics drawn", async () => {
  await page.getByText("No vector index yet").waitFor();
  const create = page.getByRole("form", { name: "Create a vector index" });
  await create.getByLabel("Name", { exact: true }).fill("console-docs");
  await create.getByLabel("Dense embedding model").selectOption("ALL_MINILM_L6_V2");
  await create.getByRole("button", { name: "Create index" }).click();
  await page.getByRole("heading", { name: "console-docs" }).waitFor();
  await page.getByText("DENSE · 384 dimensions · COSINE · ALL_MINILM_L6_V2").waitFor();

  await page.getByRole("tab", { name: "Data browser" }).click();
  const upsert = page.getByRole("form", { name: "Upsert" });
  const docs = [["cats", "Cats purr and chase mice around the house."], ["rust", "Rust is a systems programming language."], ["tea", "Green tea is brewed from the leaves of a shrub."]];
  for (const [id, text] of docs) {
    await upsert.getByLabel("ID").fill(id);
    await upsert.getByLabel("Text (embedded by the index's model)").fill(text);
    await upsert.getByLabel("Metadata (JSON object)").fill(JSON.stringify({ topic: id }));
    await upsert.getByRole("button", { name: "Upsert" }).click();
    // Each upsert embeds its content with the real model; with the whole suite running on two cores
    // that once took longer than the default 15 s.
    await page.getByText(`Upserted ${id}.`).waitFor({ timeout: 60000 });
  }
  await upsert.getByLabel("ID").fill("bad");
  await upsert.getByLabel("Text (embedded by the index's model)").fill("x");
  await upsert.getByLabel("Metadata (JSON object)").fill("{not json");
  await upsert.getByRole("button", { name: "Upsert" }).click();
  await page.getByRole("alert").filter({ hasText: "Metadata is not valid JSON" }).waitFor();

  const query = page.getByRole("form", { name: "Query" });
  await query.getByLabel("Text", { exact: true }).fill("which language is good for systems code?");
  await query.getByLabel("Top K").fill("2");
  await query.getByRole("button", { name: "Query" }).click();
  await page.getByText("2 results").waitFor();
  const firstRow = page.locator("table tbody tr").first();
  assert.equal(await firstRow.locator("td").first().textContent(), "rust", "the nearest text comes first");

  await query.getByLabel("Filter").fill("topic = 'tea'");
  await query.getByRole("button", { name: "Query" }).click();
  await page.getByText("1 results").waitFor();
  assert.equal(await page.locator("table tbody tr").first().locator("td").first().textContent(), "tea");

  await query.getByLabel("Filter").fill("topic = ");
  await query.getByRole("button", { name: "Query" }).click();
  await page.getByRole("alert").filter({ hasText: /^400: / }).waitFor();
  await shot("index-data-browser");

  await page.getByRole("tab", { name: "Statistics" }).click();
  const vectors = page.locator('[data-counter="Vectors"] .value');
  await vectors.waitFor();
  assert.match(await vectors.textContent(), /^3 of /, "three vectors, against the plan's limit");
  for (const series of ["query_throughput", "query_latency_99", "vector_count", "data_size", "daily_bandwidths"]) {
    const chart = page.locator(`[data-series="${series}"]`);
    assert.equal(await chart.getAttribute("data-points"), "60", `${series} has the 60 points of a 1h period`);
    assert.equal(await chart.locator("polyline").count(), 1);
  }
  await page.getByLabel("Period").selectOption("30d");
  await page.getByRole("heading", { name: "Over the last 30d" }).waitFor();
  assert.equal(await page.locator('[data-series="vector_count"]').getAttribute("data-points"), "240");
  await page.getByLabel("Period").selectOption("1h");
  await page.getByRole("heading", { name: "Over the last 1h" }).waitFor();
  await shot("index");
});

test("a message that fails lands in the dead letter queue, shows in the events log, and is retried", async () => {
  await page.getByRole("link", { name: "Publish" }).click();
  const form = page.getByRole("form", { name: "Publish a message" });
  await form.getByLabel("Destination URL").fill(process.env.FAILING_URL);
  await form.getByLabel("Retries").fill("0");
  await form.getByLabel("Body").fill('{"order": 42}');
  await form.getByRole("button", { name: "Publish" }).click();
  const published = await page.getByText(/^Published: /).textContent();
  const messageId = published.replace("Published: ", "");

  await page.getByRole("link", { name: "Follow it in the events log" }).click();
  await page.getByRole("heading", { name: "Events log" }).waitFor();
  // Live updates poll the log: the failure shows without a reload.
  await page.locator("table").getByText("FAILED").waitFor({ timeout: 20000 });
  assert.ok(await page.locator("table").getByText(messageId).count() >= 1);
  await shot("events");

  await page.getByRole("link", { name: "Dead letters" }).click();
  await page.getByRole("heading", { name: "Dead letters" }).waitFor();
  const row = page.locator("tr", { hasText: messageId }).filter({ hasText: "HTTP 500" });
  await row.waitFor();
  await row.getByRole("button", { name: "Inspect" }).click();
  await page.locator("pre", { hasText: '{"order": 42}' }).waitFor();
  await row.getByRole("button", { name: "Retry" }).click();
  await page.getByText(/^Retried as /).waitFor();
  await row.waitFor({ state: "detached" });
});

test("a schedule is created with its next firings shown, then paused and resumed", async () => {
  await page.getByRole("link", { name: "Schedules" }).click();
  const form = page.getByRole("form", { name: "Create a schedule" });
  await form.getByLabel("Cron (UTC; CRON_TZ=Zone first for another)").fill("not a cron");
  await page.getByRole("alert").filter({ hasText: "400: cron expression" }).waitFor();
  await form.getByLabel("Cron (UTC; CRON_TZ=Zone first for another)").fill("0 9 * * 1");
  await page.locator(".firings").filter({ hasText: "09:00:00 UTC" }).waitFor();
  assert.equal((await page.locator(".firings").textContent()).split(" · ").length, 5);
  await form.getByLabel("Destination URL").fill(process.env.FAILING_URL);
  await form.getByRole("button", { name: "Create schedule" }).click();
  const row = page.locator("tr", { hasText: "0 9 * * 1" });
  await row.getByText("active").waitFor();
  await row.getByRole("button", { name: "Pause" }).click();
  await row.getByText("paused").waitFor();
  await shot("schedules");
  await row.getByRole("button", { name: "Resume" }).click();
  await row.getByText("active").waitFor();
});

test("a search index is created, its documents upserted, searched, listed and deleted, and the index deleted", async () => {
  await page.getByRole("link", { name: "Indexes" }).click();
  await page.getByText("No search index yet.").waitFor();
  const form = page.getByRole("form", { name: "Create a search index" });
  await form.getByLabel("Name").fill("console-search");
  await form.getByRole("button", { name: "Create search index" }).click();
  await page.getByRole("link", { name: "console-search" }).click();
  await page.getByRole("heading", { name: "console-search" }).waitFor();

  // Documents go to a named index (the client's `index(name)`), created by the first upsert.
  await page.getByLabel("Or a new one").fill("books");
  await page.getByRole("button", { name: "Use" }).click();
  const upsert = page.getByRole("form", { name: "Upsert a document" });
  const docs = [
    ["cat", { title: "Cats", body: "A cat is sleeping on the warm windowsill." }, { shelf: 1 }],
    ["rates", { title: "Banks", body: "The central bank raised interest rates again." }, { shelf: 2 }],
    ["soup", "Tomato soup is best served with grilled cheese.", null],
  ];
  for (const [id, content, metadata] of docs) {
    await upsert.getByLabel("ID").fill(id);
    await upsert.getByLabel("Content (JSON object, or text)").fill(typeof content === "string" ? content : JSON.stringify(content));
    await upsert.getByLabel("Metadata (JSON object)").fill(metadata ? JSON.stringify(metadata) : "");
    await upsert.getByRole("button", { name: "Upsert" }).click();
    // Each upsert embeds its content with the real model; with the whole suite running on two cores
    // that once took longer than the default 15 s.
    await page.getByText(`Upserted ${id}.`).waitFor({ timeout: 60000 });
  }

  const search = page.getByRole("form", { name: "Search" });
  await search.getByLabel("Query").fill("my kitten naps in the sun");
  await search.getByLabel("Top K").fill("2");
  await search.getByRole("button", { name: "Search" }).click();
  await page.getByText("2 results").waitFor();
  const first = page.locator("table tbody tr").first();
  assert.equal(await first.locator("td").first().textContent(), "cat", "the nearest document comes first");
  assert.match(await first.locator("td").nth(2).textContent(), /windowsill/, "its content is shown");
  await search.getByLabel("Filter").fill("@metadata.shelf = 2");
  await search.getByRole("button", { name: "Search" }).click();
  await page.getByText("1 results").waitFor();
  assert.equal(await page.locator("table tbody tr").first().locator("td").first().textContent(), "rates");
  await search.getByLabel("Filter").fill("shelf = ");
  await search.getByRole("button", { name: "Search" }).click();
  await page.getByRole("alert").filter({ hasText: /^400: / }).waitFor();
  await shot("search-index-documents");

  await page.getByRole("button", { name: "Range" }).click();
  await page.locator("table tbody tr").nth(2).waitFor();
  assert.deepEqual(await page.locator("table tbody tr td:first-child").allTextContents(), ["cat", "rates", "soup"]);
  await page.getByLabel("IDs").fill("soup");
  page.once("dialog", (dialog) => dialog.accept());
  await page.getByRole("button", { name: "Delete", exact: true }).click();
  await page.getByText("Deleted 1.").waitFor();

  await page.getByRole("tab", { name: "Statistics" }).click();
  const documents = page.locator('[data-counter="Documents"] .value');
  await documents.waitFor();
  assert.match(await documents.textContent(), /^2 of /, "two documents left, against the plan's limit");

  await page.getByRole("link", { name: "Indexes" }).click();
  const row = page.locator("tr", { hasText: "console-search" });
  await row.waitFor();
  page.once("dialog", (dialog) => dialog.accept("console-search"));
  await row.getByRole("button", { name: "Delete" }).click();
  await page.getByText("No search index yet.").waitFor();
});

test("waiting messages are listed by filter, shown, cancelled one by one and by filter", async () => {
  const later = `${process.env.FAILING_URL}/later`;
  await page.getByRole("link", { name: "Publish" }).click();
  const publish = page.getByRole("form", { name: "Publish a message" });
  const ids = [];
  for (let i = 0; i < 3; i++) {
    await publish.getByLabel("Destination URL").fill(later);
    await publish.getByLabel("Delay").fill("1h");
    await publish.getByLabel("Body").fill(`{"waiting": ${i}}`);
    await publish.getByRole("button", { name: "Publish" }).click();
    const published = page.getByText(/^Published: /);
    await published.filter({ hasNotText: ids.length ? ids[ids.length - 1] : "(none)" }).waitFor();
    ids.push((await published.textContent()).replace("Published: ", ""));
  }
  await page.getByRole("link", { name: "Waiting" }).click();
  await page.getByRole("heading", { name: "Waiting messages" }).waitFor();
  const filters = page.getByRole("form", { name: "Filter waiting messages" });
  await filters.getByLabel("URL", { exact: true }).fill(later);
  await filters.getByRole("button", { name: "Apply" }).click();
  await page.getByText("3 shown").waitFor();
  for (const id of ids) await page.locator("tr", { hasText: id }).waitFor();
  const first = page.locator("tr", { hasText: ids[0] });
  await first.getByRole("button", { name: "Show" }).click();
  await page.locator("pre", { hasText: '"body": "{\\"waiting\\": 0}"' }).waitFor();
  await shot("waiting");
  page.once("dialog", (dialog) => dialog.accept());
  await first.getByRole("button", { name: "Cancel" }).click();
  await page.getByText(`Cancelled ${ids[0]}.`).waitFor();
  await page.getByText("2 shown").waitFor();
  page.once("dialog", (dialog) => dialog.accept());
  await filters.getByRole("button", { name: "Cancel matching messages" }).click();
  await page.getByText("Cancelled 2.").waitFor();
  await page.getByText("No message is waiting.").waitFor();
});

test("URL groups get and lose endpoints, and are deleted", async () => {
  await page.getByRole("link", { name: "URL groups" }).click();
  await page.getByText("No URL group yet").waitFor();
  const form = page.getByRole("form", { name: "Add an endpoint" });
  for (const [url, name] of [[`${process.env.FAILING_URL}/one`, "one"], [`${process.env.FAILING_URL}/two`, ""]]) {
    await form.getByLabel("URL group").fill("console-group");
    await form.getByLabel("Endpoint URL").fill(url);
    await form.getByLabel("Endpoint name (optional)").fill(name);
    await form.getByRole("button", { name: "Add endpoint" }).click();
    await page.getByText(`Added ${url} to console-group.`).waitFor();
  }
  const row = page.locator("tr", { hasText: "console-group" });
  await row.getByText(`one: ${process.env.FAILING_URL}/one`).waitFor();
  await row.getByText(`${process.env.FAILING_URL}/two`).waitFor();
  await shot("url-groups");
  page.once("dialog", (dialog) => dialog.accept());
  await row.getByRole("button", { name: `Remove ${process.env.FAILING_URL}/one` }).click();
  await page.getByText(`Removed ${process.env.FAILING_URL}/one from console-group.`).waitFor();
  await row.getByText(`one: ${process.env.FAILING_URL}/one`).waitFor({ state: "detached" });
  assert.equal(await row.locator("li").count(), 1, "one endpoint is left");
  page.once("dialog", (dialog) => dialog.accept());
  await row.getByRole("button", { name: "Delete group" }).click();
  await page.getByText("No URL group yet").waitFor();
});

test("a FIFO queue is created, changed, paused and deleted; flow-control keys show their state", async () => {
  await page.getByRole("link", { name: "Queues" }).click();
  await page.getByText("No FIFO queue yet.").waitFor();
  const form = page.getByRole("form", { name: "Create or change a FIFO queue" });
  await form.getByLabel("Queue name").fill("console-fifo");
  await form.getByLabel("Parallelism").fill("2");
  await form.getByRole("button", { name: "Save queue" }).click();
  const row = page.locator("tr", { hasText: "console-fifo" });
  await row.getByText("active").waitFor();
  assert.equal(await row.locator("td").nth(1).textContent(), "2");
  await row.getByRole("button", { name: "Pause" }).click();
  await row.getByText("paused").waitFor();
  await row.getByRole("button", { name: "Resume" }).click();
  await row.getByText("active").waitFor();
  await page.getByText(/^Deliveries in flight: /).waitFor();
  await page.getByText("No flow-control key yet").waitFor();
  page.once("dialog", (dialog) => dialog.accept());
  await row.getByRole("button", { name: "Delete" }).click();
  await page.getByText("No FIFO queue yet.").waitFor();
});

test("a running workflow run shows its steps and is cancelled", async () => {
  const runId = process.env.WORKFLOW_RUN_ID;
  await page.getByRole("link", { name: "Workflows" }).click();
  const row = page.locator("tr", { hasText: runId });
  await row.getByText("RUN_STARTED").waitFor();
  await row.getByRole("button", { name: "Steps" }).click();
  await page.getByRole("heading", { name: `Run ${runId}` }).waitFor();
  await page.locator("pre", { hasText: '{"order": 7}' }).waitFor();
  await shot("workflows");
  page.once("dialog", (dialog) => dialog.accept());
  await row.getByRole("button", { name: "Cancel run" }).click();
  await page.getByText(`Cancelled ${runId}.`).waitFor();
  await row.getByText("RUN_CANCELED").waitFor();
});

test("signing keys are shown and rotated: the next key becomes the current one", async () => {
  await page.getByRole("link", { name: "Keys" }).click();
  const next = page.locator(".secret", { hasText: /^next: / });
  await next.waitFor();
  const before = (await next.textContent()).replace("next: ", "");
  page.once("dialog", (dialog) => dialog.accept());
  await page.getByRole("button", { name: "Rotate signing keys" }).click();
  await page.locator(".secret", { hasText: `current: ${before}` }).waitFor();
  assert.notEqual((await next.textContent()).replace("next: ", ""), before, "a new next key is made");
});

test("the console is readable at phone width, and signing out ends the session", async () => {
  await page.setViewportSize({ width: 390, height: 844 });
  await page.getByRole("link", { name: "Indexes" }).click();
  await page.getByRole("link", { name: "console-docs" }).waitFor();
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 0, `no sideways scrolling at phone width (${overflow} px too wide)`);
  await shot("phone-indexes");
  assert.equal(await page.locator("thead").first().isVisible(), false, "rows are cards, not squeezed columns");
  await page.getByRole("link", { name: "Events" }).click();
  await page.locator("td[data-label=State]").first().waitFor();
  const eventsOverflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(eventsOverflow <= 0, `the events log fits a phone (${eventsOverflow} px too wide)`);
  await shot("phone-events");
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.getByRole("button", { name: "Sign out" }).click();
  await page.getByText("Signed out.").waitFor();
  await page.reload();
  await page.getByRole("heading", { name: "Sign in to Quiver" }).waitFor();
});
