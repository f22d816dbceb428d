// Times console pages in Debian's Chromium (playwright-core from console-tests/), as a user with the
// browser already open sees them: each page type has its own tab, and each run navigates it from
// about:blank with the browser's cache off, so every file is fetched and every API call made afresh.
// The time runs from the navigation until the page shows what it is for.
// Prints one JSON line per page: {"page", "runs", "median_ms", "p90_ms", "wall_median_ms", "wall_p90_ms"}.
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

// A tab whose cache is off, in `context`.
async function uncachedTab(context) {
  const page = await context.newPage();
  const cdp = await context.newCDPSession(page);
  await cdp.send("Network.enable");
  await cdp.send("Network.setCacheDisabled", { cacheDisabled: true });
  return page;
}

// Navigates `page` from about:blank to `url` and waits until `shown` (a predicate run in the page on
// every change to its document) holds. Two times in milliseconds: the page's own (from the start of the
// navigation, on the page's clock, so the test driver's round trips are not in it), and the wall-clock
// time the driver saw.
async function time(page, url, shown) {
  await page.goto("about:blank");
  const started = performance.now();
  await page.goto(url, { waitUntil: "commit" });
  const inPage = await page.evaluate(`new Promise((resolve) => {
    const shown = ${shown};
    if (shown()) { resolve(performance.now()); return; }
    new MutationObserver((_, observer) => {
      if (shown()) { observer.disconnect(); resolve(performance.now()); }
    }).observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
  })`);
  return [inPage, performance.now() - started];
}

const signInTab = await uncachedTab(await browser.newContext({ viewport: { width: 1280, height: 800 } }));
const indexTab = await uncachedTab(await signedInContext());
const eventsTab = await uncachedTab(await signedInContext());

const pages = {
  "sign-in form": () => time(signInTab, `${base}/console`,
    () => document.querySelector('form[aria-label="Sign in"] button')),
  "index page, counters and 11 charts": () => time(indexTab, `${base}/console#/indexes/${process.env.INDEX_ID}`,
    () => document.querySelectorAll(".chart polyline").length >= 11 && document.querySelector("[data-counter] .value")),
  "events log, first page": () => time(eventsTab, `${base}/console#/queue/events`,
    () => document.querySelector("table tbody tr")),
  // What the browser and driver take for any page: a one-line JSON answer of the same server.
  "baseline: /healthz": () => time(signInTab, `${base}/healthz`, () => document.body && document.body.textContent.length > 0),
};

// Warm each tab once, then alternate the pages run by run.
for (const measure of Object.values(pages)) await measure();
const samples = Object.fromEntries(Object.keys(pages).map((name) => [name, { page: [], wall: [] }]));
for (let run = 0; run < runs; run++) {
  for (const [name, measure] of Object.entries(pages)) {
    const [inPage, wall] = await measure();
    samples[name].page.push(inPage);
    samples[name].wall.push(wall);
  }
}
await browser.close();
const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  return +sorted[Math.floor(sorted.length / 2)].toFixed(1);
};
const p90 = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  return +sorted[Math.min(sorted.length - 1, Math.floor(0.9 * sorted.length))].toFixed(1);
};
for (const [name, { page, wall }] of Object.entries(samples)) {
  console.log(JSON.stringify({ page: name, runs: page.length, median_ms: median(page), p90_ms: p90(page),
    wall_median_ms: median(wall), wall_p90_ms: p90(wall) }));
}
