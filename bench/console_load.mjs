// Times console pages in Debian's Chromium (playwright-core from console-tests/): each run opens a new
// browser context (empty cache, no cookie), so every file is fetched and every API call made afresh.
// Prints one JSON line per page: {"page", "runs", "median_ms", "p90_ms", "min_ms"}.
//
// Environment: QUIVER_URL, INDEX_ID, RUNS, CHROMIUM.
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";

const here = dirname(fileURLToPath(import.meta.url));
const { chromium } = createRequire(join(here, "..", "console-tests", "package.json"))("playwright-core");

const base = process.env.QUIVER_URL;
const runs = Number(process.env.RUNS || 15);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync"],
});

async function signedInContext() {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const answer = await context.request.post(`${base}/console/api/session`, {
    data: { email: "dev@quiver.local", api_key: "quiver-dev-api-key" },
  });
  if (!answer.ok()) throw new Error(`sign-in: ${answer.status()}`);
  return context;
}

// Milliseconds from navigation start until `ready` resolves on a fresh page of `context`.
async function time(context, url, ready) {
  const page = await context.newPage();
  const started = performance.now();
  await page.goto(url, { waitUntil: "commit" });
  await ready(page);
  const elapsed = performance.now() - started;
  await page.close();
  return elapsed;
}

const pages = {
  "sign-in form": async () => {
    const context = await browser.newContext();
    const ms = await time(context, `${base}/console`, (p) => p.getByRole("button", { name: "Sign in" }).waitFor());
    await context.close();
    return ms;
  },
  "index page, counters and 11 charts": async () => {
    const context = await signedInContext();
    const ms = await time(context, `${base}/console#/indexes/${process.env.INDEX_ID}`,
      (p) => p.locator(".chart polyline").nth(10).waitFor());
    await context.close();
    return ms;
  },
  "events log, first page": async () => {
    const context = await signedInContext();
    const ms = await time(context, `${base}/console#/queue/events`, (p) => p.locator("table tbody tr").first().waitFor());
    await context.close();
    return ms;
  },
};

// Warm the browser itself once, then alternate the pages run by run.
await pages["sign-in form"]();
const samples = Object.fromEntries(Object.keys(pages).map((name) => [name, []]));
for (let run = 0; run < runs; run++) {
  for (const [name, measure] of Object.entries(pages)) samples[name].push(await measure());
}
await browser.close();
for (const [name, values] of Object.entries(samples)) {
  values.sort((a, b) => a - b);
  const at = (q) => values[Math.min(values.length - 1, Math.floor(q * values.length))];
  console.log(JSON.stringify({ page: name, runs: values.length, median_ms: +at(0.5).toFixed(1), p90_ms: +at(0.9).toFixed(1), min_ms: +values[0].toFixed(1) }));
}
