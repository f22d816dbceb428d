// Quiver's web console: one page, plain JavaScript, no third-party code. Every action is a call to
// Quiver's own APIs through /console/api (the server puts in the session's credentials), and every error
// shown is the API's own message. Text from the server is only ever set as text, never as HTML.
"use strict";

const state = { csrf: null, email: null, options: null, timers: [] };

// ---------- small helpers ----------

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else if (key === "text") el.textContent = value;
    else if (value === true) el.setAttribute(key, "");
    else el.setAttribute(key, value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

function svg(tag, attrs) {
  const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [key, value] of Object.entries(attrs || {})) el.setAttribute(key, value);
  return el;
}

function toast(message) {
  const box = document.getElementById("toast");
  const line = h("div", { text: message });
  box.append(line);
  setTimeout(() => line.remove(), 4000);
}

function errorBox(error) {
  return h("div", { class: "error", role: "alert", text: String(error && error.message ? error.message : error) });
}

function when(millis) {
  if (!millis) return "";
  return new Date(Number(millis)).toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC");
}

function formatNumber(value) {
  if (typeof value !== "number") return String(value);
  if (Math.abs(value) >= 1e9) return (value / 1e9).toFixed(2) + " G";
  if (Math.abs(value) >= 1e6) return (value / 1e6).toFixed(2) + " M";
  if (Math.abs(value) >= 1e4) return (value / 1e3).toFixed(1) + " k";
  return Number.isInteger(value) ? String(value) : value.toFixed(2);
}

function json(value) {
  return JSON.stringify(value, null, 2);
}

class ApiError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

// Calls the console API. `path` is under /console/api. Throws the API's error message.
async function api(method, path, body, extraHeaders) {
  const headers = Object.assign({}, extraHeaders || {});
  if (state.csrf) headers["X-Quiver-Csrf"] = state.csrf;
  let payload;
  if (body !== undefined) {
    if (typeof body === "string") { payload = body; }
    else { payload = JSON.stringify(body); headers["Content-Type"] = "application/json"; }
  }
  const response = await fetch("/console/api" + path, { method, headers, body: payload, credentials: "same-origin" });
  const text = await response.text();
  let data = null;
  if (text) { try { data = JSON.parse(text); } catch (_) { data = text; } }
  if (!response.ok) {
    if (response.status === 401 && path !== "/session") { state.csrf = null; showSignIn("Your session has ended: sign in again."); }
    const message = data && typeof data === "object" && data.error ? data.error : (text || response.statusText);
    throw new ApiError(response.status, `${response.status}: ${message}`);
  }
  return data;
}

// Runs `work` with `button` disabled, showing errors in `target` (or a toast).
// A user's action shows that it is under way in `target`; a background reload keeps what is shown until
// it has something new.
async function busy(button, target, work) {
  if (button) button.disabled = true;
  if (target && button) target.replaceChildren(h("p", { class: "muted progress", role: "status", "aria-busy": "true", text: "Working…" }));
  try { return await work(); }
  catch (error) {
    if (target) target.replaceChildren(errorBox(error)); else toast(error.message);
    return undefined;
  }
  finally { if (button) button.disabled = false; }
}

function field(labelText, input) { return h("label", {}, labelText, input); }

function select(name, values, selected) {
  return h("select", { name }, values.map((value) => h("option", { value, selected: value === selected }, value === "" ? "(any)" : value)));
}

function formValues(form) {
  const values = {};
  for (const element of form.elements) {
    if (!element.name) continue;
    values[element.name] = element.type === "checkbox" ? element.checked : element.value;
  }
  return values;
}

const PAGE_ROWS = 25;

// A table of `rows`, a page of PAGE_ROWS at a time when there are more.
function table(columns, rows, empty) {
  if (!rows.length) return h("p", { class: "muted", text: empty || "Nothing here." });
  const body = h("tbody");
  const wrap = h("div", { class: "table-wrap" }, h("table", {},
    h("thead", {}, h("tr", {}, columns.map((c) => h("th", { text: c.title })))), body));
  const pages = Math.ceil(rows.length / PAGE_ROWS);
  let at = 0;
  const where = h("span", { class: "muted" });
  const previous = h("button", { type: "button", class: "plain", text: "Previous page", onclick: () => show(at - 1) });
  const next = h("button", { type: "button", class: "plain", text: "Next page", onclick: () => show(at + 1) });
  const show = (n) => {
    at = Math.max(0, Math.min(pages - 1, n));
    const first = at * PAGE_ROWS;
    const shown = rows.slice(first, first + PAGE_ROWS);
    body.replaceChildren(...shown.map((row) => h("tr", {}, columns.map((c) => h("td", { "data-label": c.title }, c.cell(row))))));
    where.textContent = `Rows ${first + 1}–${first + shown.length} of ${rows.length}`;
    previous.disabled = at === 0;
    next.disabled = at === pages - 1;
  };
  show(0);
  if (pages === 1) return wrap;
  return h("div", {}, wrap, h("div", { class: "row pager" }, previous, where, next));
}

function clearTimers() {
  for (const timer of state.timers) clearInterval(timer);
  state.timers = [];
}

function main() { return document.getElementById("main"); }

function page(title, ...content) {
  document.title = `${title} · Quiver console`;
  main().replaceChildren(h("h1", { text: title }), ...content);
  main().focus({ preventScroll: true });
}

// ---------- sign-in ----------

function showSignIn(notice) {
  clearTimers();
  document.getElementById("nav").hidden = true;
  document.getElementById("who").replaceChildren();
  const out = h("div");
  const form = h("form", { "aria-label": "Sign in" },
    field("Email", h("input", { name: "email", type: "email", autocomplete: "username", required: true })),
    field("API key", h("input", { name: "api_key", type: "password", autocomplete: "current-password", required: true })),
    h("button", { type: "submit", text: "Sign in" }), out);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    busy(form.querySelector("button"), out, async () => {
      const answer = await api("POST", "/session", formValues(form));
      signedIn(answer);
      route();
    });
  });
  main().replaceChildren(h("div", { class: "signin" },
    h("h1", { text: "Sign in to Quiver" }),
    notice ? h("p", { class: "muted", text: notice }) : null,
    h("p", { class: "muted", text: "Use the management API's credentials: the account's email and API key (quiver credentials prints them)." }),
    form));
  document.title = "Sign in · Quiver console";
}

function signedIn(answer) {
  state.csrf = answer.csrf;
  state.email = answer.email;
  document.getElementById("nav").hidden = false;
  const out = h("button", { class: "plain", type: "button", text: "Sign out", onclick: async () => {
    await busy(null, null, () => api("DELETE", "/session"));
    state.csrf = null;
    showSignIn("Signed out.");
  } });
  document.getElementById("who").replaceChildren(h("span", { text: answer.email }), out);
}

// ---------- indexes ----------

async function options() {
  if (!state.options) state.options = await api("GET", "/options");
  return state.options;
}

async function indexesPage() {
  const list = h("div", {}, h("p", { class: "muted", text: "Loading indexes…" }));
  const createOut = h("div");
  const searchList = h("div", {}, h("p", { class: "muted", text: "Loading search indexes…" }));
  const searchCreate = h("div");
  page("Vector indexes", list, h("h2", { text: "Create a vector index" }), createOut,
    h("h2", { text: "Search indexes" }), searchList, h("h2", { text: "Create a search index" }), searchCreate);
  const [opts] = await Promise.all([options()]);
  createOut.replaceChildren(createIndexForm(opts));
  searchCreate.replaceChildren(createSearchIndexForm(opts, searchList));
  await Promise.all([renderIndexList(list), renderSearchIndexList(searchList)]);
}

async function renderSearchIndexList(target) {
  const out = h("div");
  const base = (i) => `/v2/search/${encodeURIComponent(i.id)}`;
  const reload = () => renderSearchIndexList(target);
  try {
    const indexes = await api("GET", "/v2/search");
    target.replaceChildren(table([
      { title: "Name", cell: (i) => i.name },
      { title: "Plan", cell: (i) => i.type },
      { title: "Region", cell: (i) => i.region },
      { title: "Endpoint", cell: (i) => i.endpoint },
      { title: "Created", cell: (i) => when(i.creation_time * 1000) },
      { title: "", cell: (i) => h("div", { class: "row" },
        h("button", { type: "button", class: "plain", text: "Rename", onclick: (e) => {
          const name = prompt("New name", i.name);
          if (!name) return;
          busy(e.target, out, async () => { await api("POST", `${base(i)}/rename`, { name }); await reload(); });
        } }),
        h("button", { type: "button", class: "plain", text: "Reset tokens", onclick: (e) => {
          if (!confirm(`Reset the tokens of ${i.name}? Clients using the current ones will be refused.`)) return;
          busy(e.target, out, async () => {
            const fresh = await api("POST", `${base(i)}/reset-password`);
            out.replaceChildren(h("p", { text: `New tokens of ${i.name} (copy them now; they are not shown again):` }),
              h("div", { class: "secret", text: `token: ${fresh.token}` }), h("div", { class: "secret", text: `read-only token: ${fresh.read_only_token}` }));
          });
        } }),
        h("button", { type: "button", class: "danger", text: "Delete", onclick: (e) => {
          const typed = prompt(`Type the index's name (${i.name}) to delete it.`);
          if (typed === null) return;
          if (typed !== i.name) { toast("The name did not match: nothing was deleted."); return; }
          busy(e.target, out, async () => { await api("DELETE", base(i)); await reload(); });
        } })) },
    ], indexes, "No search index yet."), out);
  } catch (error) { target.replaceChildren(errorBox(error)); }
}

function createSearchIndexForm(opts, list) {
  const out = h("div");
  const form = h("form", { class: "grid", "aria-label": "Create a search index" },
    field("Name", h("input", { name: "name", required: true, maxlength: 255 })),
    field("Region", select("region", opts.search_regions, opts.search_regions[0])),
    field("Plan", select("type", opts.plans, "free")),
    h("button", { type: "submit", text: "Create search index" }));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    busy(form.querySelector("button"), out, async () => {
      const created = await api("POST", "/v2/search", formValues(form));
      toast(`Search index ${created.name} created`);
      form.reset();
      await renderSearchIndexList(list);
    });
  });
  return h("section", { class: "card" }, form, out);
}

async function renderIndexList(target) {
  try {
    const indexes = await api("GET", "/v2/vector/index");
    target.replaceChildren(table([
      { title: "Name", cell: (i) => h("a", { href: `#/indexes/${encodeURIComponent(i.id)}`, text: i.name }) },
      { title: "Type", cell: (i) => i.index_type },
      { title: "Dimensions", cell: (i) => i.dimension_count },
      { title: "Similarity", cell: (i) => i.similarity_function },
      { title: "Model", cell: (i) => [i.embedding_model, i.sparse_embedding_model].filter(Boolean).join(" + ") || "—" },
      { title: "Plan", cell: (i) => i.type },
      { title: "Region", cell: (i) => i.region },
      { title: "Created", cell: (i) => when(i.creation_time * 1000) },
    ], indexes, "No vector index yet: create one below."));
  } catch (error) { target.replaceChildren(errorBox(error)); }
}

function createIndexForm(opts) {
  const out = h("div");
  const dense = opts.dense_models.map((m) => m.name);
  const form = h("form", { class: "grid", "aria-label": "Create a vector index" },
    field("Name", h("input", { name: "name", required: true, maxlength: 255 })),
    field("Region", select("region", opts.regions, opts.regions[0])),
    field("Index type", select("index_type", opts.index_types, "DENSE")),
    field("Similarity", select("similarity_function", opts.similarity_functions, "COSINE")),
    field("Dense embedding model", select("embedding_model", ["(none: bring vectors)", ...dense], dense[0] || "(none: bring vectors)")),
    field("Dimensions (without a model)", h("input", { name: "dimension_count", type: "number", min: 1, max: 4096, placeholder: "from the model" })),
    field("Sparse model (sparse and hybrid)", select("sparse_embedding_model", ["(none)", ...opts.sparse_models], "(none)")),
    field("Plan", select("type", opts.plans, "free")),
    h("button", { type: "submit", text: "Create index" }));
  if (!dense.length) form.append(h("p", { class: "muted", text: "No dense model is installed on this node (quiver models pull NAME installs one)." }));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const v = formValues(form);
    const body = { name: v.name, region: v.region, index_type: v.index_type, similarity_function: v.similarity_function, type: v.type };
    if (!v.embedding_model.startsWith("(")) body.embedding_model = v.embedding_model;
    if (v.dimension_count) body.dimension_count = Number(v.dimension_count);
    if (!v.sparse_embedding_model.startsWith("(")) body.sparse_embedding_model = v.sparse_embedding_model;
    busy(form.querySelector("button[type=submit]"), out, async () => {
      const created = await api("POST", "/v2/vector/index", body);
      toast(`Index ${created.name} created`);
      location.hash = `#/indexes/${encodeURIComponent(created.id)}`;
    });
  });
  return h("section", { class: "card" }, form, out);
}

const CHARTS = [
  ["query_throughput", "Query throughput", "/s"], ["update_throughput", "Update throughput", "/s"],
  ["daily_query_requests", "Query requests", ""], ["daily_update_requests", "Update requests", ""],
  ["query_latency_mean", "Query latency, mean", "ms"], ["query_latency_99", "Query latency, p99", "ms"],
  ["update_latency_mean", "Update latency, mean", "ms"], ["update_latency_99", "Update latency, p99", "ms"],
  ["vector_count", "Vector count", ""], ["data_size", "Data size", "B"], ["daily_bandwidths", "Bandwidth", "B"],
];

function lineChart(key, title, unit, points) {
  const width = 300, height = 110, pad = 4;
  const ys = points.map((p) => Number(p.y) || 0);
  const max = Math.max(1, ...ys);
  const chart = svg("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": `${title} over time` });
  chart.append(svg("line", { x1: 0, y1: height - pad, x2: width, y2: height - pad }));
  const step = ys.length > 1 ? (width - 2 * pad) / (ys.length - 1) : 0;
  const coords = ys.map((y, i) => `${(pad + i * step).toFixed(1)},${(height - pad - (y / max) * (height - 2 * pad - 10)).toFixed(1)}`);
  chart.append(svg("polyline", { points: coords.join(" ") }));
  const top = svg("text", { x: pad, y: 9 });
  top.textContent = `max ${formatNumber(max)}${unit}`;
  chart.append(top);
  const latest = ys.length ? ys[ys.length - 1] : 0;
  const first = points.length ? points[0].x : "", last = points.length ? points[points.length - 1].x : "";
  return h("div", { class: "chart", "data-series": key, "data-points": String(points.length) },
    h("h3", { text: title }),
    h("div", { class: "latest", text: `${formatNumber(latest)}${unit ? " " + unit : ""}` }),
    chart,
    h("div", { class: "muted", style: null, text: `${String(first).slice(0, 16)} → ${String(last).slice(0, 16)}` }));
}

function counter(title, value, limit, unit) {
  const limited = typeof limit === "number" && limit >= 0;
  const share = limited && limit > 0 ? Math.min(100, (value / limit) * 100) : 0;
  return h("div", { class: "counter", "data-counter": title },
    h("div", { class: "muted", text: title }),
    h("div", { class: "value", text: `${formatNumber(value)}${unit || ""}${limited ? " of " + formatNumber(limit) + (unit || "") : limit === undefined ? "" : " (no limit)"}` }),
    limited ? h("div", { class: "bar" }, h("span", { style: null, "data-share": share.toFixed(0) })) : null);
}

async function indexPage(id) {
  const head = h("div", {}, h("p", { class: "muted", text: "Loading…" }));
  page("Index", head);
  let index;
  try { index = await api("GET", `/v2/vector/index/${encodeURIComponent(id)}`); }
  catch (error) { head.replaceChildren(errorBox(error)); return; }
  document.title = `${index.name} · Quiver console`;
  main().querySelector("h1").textContent = index.name;
  head.replaceChildren(h("p", { class: "muted", text:
    `${index.index_type} · ${index.dimension_count} dimensions · ${index.similarity_function}` +
    `${index.embedding_model ? " · " + index.embedding_model : ""}${index.sparse_embedding_model ? " · " + index.sparse_embedding_model : ""}` +
    ` · plan ${index.type} · ${index.region} · endpoint ${index.endpoint}` }));
  const tabs = [["Statistics", () => statsTab(index)], ["Data browser", () => browserTab(index)], ["Settings", () => settingsTab(index)]];
  const body = h("div");
  const bar = h("div", { class: "tabs", role: "tablist" });
  const show = (i) => {
    clearTimers();
    [...bar.children].forEach((b, j) => b.setAttribute("aria-selected", String(i === j)));
    body.replaceChildren(tabs[i][1]());
  };
  tabs.forEach(([name], i) => bar.append(h("button", { type: "button", role: "tab", text: name, onclick: () => show(i) })));
  main().append(bar, body);
  show(0);
}

function statsTab(index) {
  const periods = ["1h", "3h", "12h", "1d", "3d", "7d", "30d"];
  const out = h("div", {}, h("p", { class: "muted", text: "Loading statistics…" }));
  const period = select("period", periods, "1h");
  const load = () => busy(null, out, async () => {
    const stats = await api("GET", `/v2/vector/index/${encodeURIComponent(index.id)}/stats?period=${period.value}`);
    const counters = h("div", { class: "counters" },
      counter("Vectors", stats.current_vector_count, index.max_vector_count),
      counter("Queries today", stats.daily_query_count, index.max_daily_queries),
      counter("Updates today", stats.daily_update_count, index.max_daily_updates),
      counter("Queries this month", stats.monthly_query_count),
      counter("Updates this month", stats.monthly_update_count),
      counter("Bandwidth this month", stats.monthly_bandwidth_usage, index.max_monthly_bandwidth, " B"),
      counter("Storage", stats.storage_usage, undefined, " B"),
      counter("Pending", stats.pending_index_count));
    const charts = h("div", { class: "charts" }, CHARTS.map(([key, title, unit]) => lineChart(key, title, unit, stats[key] || [])));
    out.replaceChildren(h("h2", { text: "Usage against the plan" }), counters, h("h2", { text: `Over the last ${period.value}` }), charts);
    for (const bar of out.querySelectorAll(".bar span")) bar.style.width = bar.dataset.share + "%";
  });
  period.addEventListener("change", load);
  load();
  return h("div", {}, h("div", { class: "row" }, field("Period", period), h("button", { type: "button", class: "plain", text: "Refresh", onclick: load })), out);
}

function parseJsonField(text, what) {
  if (!text.trim()) return undefined;
  try { return JSON.parse(text); } catch (error) { throw new Error(`${what} is not valid JSON: ${error.message}`); }
}

function recordsTable(records) {
  return table([
    { title: "ID", cell: (r) => String(r.id) },
    { title: "Score", cell: (r) => (r.score === undefined ? "" : Number(r.score).toFixed(4)) },
    { title: "Data", cell: (r) => r.data || "" },
    { title: "Metadata", cell: (r) => (r.metadata ? h("pre", { text: json(r.metadata) }) : "") },
    { title: "Vector", cell: (r) => (r.vector ? h("pre", { text: `[${r.vector.slice(0, 8).map((x) => x.toFixed(4)).join(", ")}${r.vector.length > 8 ? ", …" : ""}] (${r.vector.length})` }) : "") },
  ], records, "No records.");
}

function browserTab(index) {
  const hasText = Boolean(index.embedding_model || index.sparse_embedding_model);
  const namespace = h("select", { name: "namespace" }, h("option", { value: "", text: "(default namespace)" }));
  const nsPath = (op) => `/vector/${encodeURIComponent(index.id)}/${op}${namespace.value ? "/" + encodeURIComponent(namespace.value) : ""}`;
  const loadNamespaces = async () => {
    const answer = await api("GET", `/vector/${encodeURIComponent(index.id)}/list-namespaces`);
    const current = namespace.value;
    namespace.replaceChildren(...answer.result.map((ns) => h("option", { value: ns, selected: ns === current, text: ns === "" ? "(default namespace)" : ns })));
  };
  const newNs = h("input", { placeholder: "new namespace" });
  const nsRow = h("div", { class: "row" }, field("Namespace", namespace), field("Or a new one", newNs),
    h("button", { type: "button", class: "plain", text: "Use", onclick: () => {
      if (!newNs.value) return;
      namespace.append(h("option", { value: newNs.value, text: newNs.value }));
      namespace.value = newNs.value; newNs.value = "";
    } }),
    h("button", { type: "button", class: "danger", text: "Delete namespace", onclick: async () => {
      if (!namespace.value) { toast("The default namespace cannot be deleted; reset it by deleting its records."); return; }
      if (!confirm(`Delete namespace ${namespace.value} and every record in it?`)) return;
      await busy(null, null, async () => { await api("DELETE", `/vector/${encodeURIComponent(index.id)}/delete-namespace/${encodeURIComponent(namespace.value)}`); toast("Namespace deleted"); namespace.value = ""; await loadNamespaces(); });
    } }));
  busy(null, null, loadNamespaces);

  // Upsert
  const upsertOut = h("div");
  const upsert = h("form", { class: "grid", "aria-label": "Upsert" },
    field("ID", h("input", { name: "id", required: true })),
    hasText ? field("Text (embedded by the index's model)", h("textarea", { name: "data" })) : null,
    field(hasText ? "Or a vector (JSON array)" : "Vector (JSON array)", h("textarea", { name: "vector", placeholder: "[0.1, 0.2, …]" })),
    field("Metadata (JSON object)", h("textarea", { name: "metadata", placeholder: "{\"genre\": \"news\"}" })),
    h("button", { type: "submit", text: "Upsert" }), upsertOut);
  upsert.addEventListener("submit", (event) => {
    event.preventDefault();
    busy(upsert.querySelector("button"), upsertOut, async () => {
      const v = formValues(upsert);
      const record = { id: v.id };
      const metadata = parseJsonField(v.metadata, "Metadata");
      if (metadata !== undefined) record.metadata = metadata;
      const vector = parseJsonField(v.vector || "", "Vector");
      if (vector !== undefined) { record.vector = vector; if (v.data) record.data = v.data; await api("POST", nsPath("upsert"), record); }
      else if (v.data) { record.data = v.data; await api("POST", nsPath("upsert-data"), record); }
      else throw new Error(hasText ? "Give a text or a vector." : "Give a vector.");
      upsertOut.replaceChildren(h("p", { class: "muted", text: `Upserted ${v.id}.` }));
    });
  });

  // Query
  const queryOut = h("div");
  const query = h("form", { class: "grid", "aria-label": "Query" },
    hasText ? field("Text", h("input", { name: "data" })) : null,
    field(hasText ? "Or a vector (JSON array)" : "Vector (JSON array)", h("input", { name: "vector" })),
    field("Filter", h("input", { name: "filter", placeholder: "genre = 'news' AND year > 2020" })),
    field("Top K", h("input", { name: "topK", type: "number", min: 1, max: 1000, value: 10 })),
    h("label", { class: "inline" }, h("input", { type: "checkbox", name: "includeMetadata", checked: true }), "metadata"),
    h("label", { class: "inline" }, h("input", { type: "checkbox", name: "includeData", checked: true }), "data"),
    h("label", { class: "inline" }, h("input", { type: "checkbox", name: "includeVectors" }), "vectors"),
    h("button", { type: "submit", text: "Query" }));
  query.addEventListener("submit", (event) => {
    event.preventDefault();
    busy(query.querySelector("button"), queryOut, async () => {
      const v = formValues(query);
      const body = { topK: Number(v.topK) || 10, includeMetadata: v.includeMetadata, includeData: v.includeData, includeVectors: v.includeVectors };
      if (v.filter) body.filter = v.filter;
      const vector = parseJsonField(v.vector || "", "Vector");
      let answer;
      if (vector !== undefined) { body.vector = vector; answer = await api("POST", nsPath("query"), body); }
      else if (v.data) { body.data = v.data; answer = await api("POST", nsPath("query-data"), body); }
      else throw new Error(hasText ? "Give a text or a vector." : "Give a vector.");
      queryOut.replaceChildren(h("p", { class: "muted", text: `${answer.result.length} results` }), recordsTable(answer.result));
    });
  });

  // Fetch, range and delete
  const fetchOut = h("div");
  const ids = h("input", { name: "ids", placeholder: "id1, id2" });
  const prefix = h("input", { name: "prefix", placeholder: "id prefix" });
  let cursor = "0";
  const rangeMore = h("button", { type: "button", class: "plain", text: "Next page", hidden: true });
  const doRange = (fresh) => busy(null, fetchOut, async () => {
    if (fresh) cursor = "0";
    const body = { cursor, limit: 20, includeMetadata: true, includeData: true };
    if (prefix.value) body.prefix = prefix.value;
    const answer = await api("POST", nsPath("range"), body);
    cursor = answer.result.nextCursor;
    rangeMore.hidden = !cursor;
    fetchOut.replaceChildren(recordsTable(answer.result.vectors.filter(Boolean)));
  });
  rangeMore.addEventListener("click", () => doRange(false));
  const idList = () => ids.value.split(",").map((s) => s.trim()).filter(Boolean);
  const records = h("div", { class: "row" }, field("IDs", ids), field("Prefix", prefix),
    h("button", { type: "button", text: "Fetch", onclick: () => busy(null, fetchOut, async () => {
      const body = { includeMetadata: true, includeData: true, includeVectors: true };
      if (idList().length) body.ids = idList(); else if (prefix.value) body.prefix = prefix.value; else throw new Error("Give IDs or a prefix.");
      const answer = await api("POST", nsPath("fetch"), body);
      fetchOut.replaceChildren(recordsTable(answer.result.filter(Boolean)));
    }) }),
    h("button", { type: "button", class: "plain", text: "Range", onclick: () => doRange(true) }), rangeMore,
    h("button", { type: "button", class: "danger", text: "Delete", onclick: () => {
      const list = idList();
      const what = list.length ? `records ${list.join(", ")}` : prefix.value ? `every record whose id starts with ${prefix.value}` : null;
      if (!what) { toast("Give IDs or a prefix to delete."); return; }
      if (!confirm(`Delete ${what}?`)) return;
      busy(null, fetchOut, async () => {
        const answer = await api("POST", nsPath("delete"), list.length ? { ids: list } : { prefix: prefix.value });
        fetchOut.replaceChildren(h("p", { class: "muted", text: `Deleted ${answer.result.deleted}.` }));
      });
    } }));
  return h("div", {}, nsRow,
    h("h2", { text: "Query" }), h("section", { class: "card" }, query, queryOut),
    h("h2", { text: "Upsert" }), h("section", { class: "card" }, upsert),
    h("h2", { text: "Fetch, range and delete" }), h("section", { class: "card" }, records, fetchOut));
}

function settingsTab(index) {
  const out = h("div");
  const base = `/v2/vector/index/${encodeURIComponent(index.id)}`;
  const name = h("input", { value: index.name });
  const plan = select("plan", state.options ? state.options.plans : ["free", "payg", "fixed"], index.type);
  return h("section", { class: "card" },
    h("div", { class: "row" }, field("Name", name), h("button", { type: "button", text: "Rename", onclick: (e) => busy(e.target, out, async () => {
      await api("POST", `${base}/rename`, { name: name.value }); toast("Renamed"); route();
    }) })),
    h("div", { class: "row" }, field("Plan", plan), h("button", { type: "button", text: "Change plan", onclick: (e) => busy(e.target, out, async () => {
      await api("POST", `${base}/setplan`, { target_plan: plan.value }); toast("Plan changed"); route();
    }) })),
    h("h2", { text: "Tokens" }),
    h("p", { class: "muted", text: "Resetting makes new tokens, shown here once; clients using the old ones stop working." }),
    h("button", { type: "button", class: "danger", text: "Reset tokens", onclick: (e) => {
      if (!confirm("Reset this index's tokens? Clients using the current ones will be refused.")) return;
      busy(e.target, out, async () => {
        const index2 = await api("POST", `${base}/reset-password`);
        out.replaceChildren(h("p", { text: "New tokens (copy them now; they are not shown again):" }),
          h("div", { class: "secret", text: `token: ${index2.token}` }), h("div", { class: "secret", text: `read-only token: ${index2.read_only_token}` }));
      });
    } }),
    h("h2", { text: "Delete" }),
    h("button", { type: "button", class: "danger", text: "Delete index", onclick: (e) => {
      const typed = prompt(`Type the index's name (${index.name}) to delete it and every record in it.`);
      if (typed === null) return;
      if (typed !== index.name) { toast("The name did not match: nothing was deleted."); return; }
      busy(e.target, out, async () => { await api("DELETE", base); toast("Index deleted"); location.hash = "#/indexes"; });
    } }),
    out);
}

// ---------- queue ----------

function publishPage() {
  const out = h("div");
  const form = h("form", { class: "grid", "aria-label": "Publish a message" },
    field("Destination URL", h("input", { name: "destination", type: "url", required: true, placeholder: "https://example.com/hook" })),
    field("Method", select("method", ["POST", "PUT", "PATCH", "GET", "DELETE"], "POST")),
    field("Retries", h("input", { name: "retries", type: "number", min: 0, value: 3 })),
    field("Delay", h("input", { name: "delay", placeholder: "e.g. 10s, 5m" })),
    field("Content type", h("input", { name: "contentType", value: "application/json" })),
    field("Body", h("textarea", { name: "body" })),
    h("button", { type: "submit", text: "Publish" }));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    busy(form.querySelector("button"), out, async () => {
      const v = formValues(form);
      const headers = { "Svc-Method": v.method, "Svc-Retries": String(v.retries || 0), "Content-Type": v.contentType || "text/plain" };
      if (v.delay) headers["Svc-Delay"] = v.delay;
      const answer = await api("POST", `/v2/publish/${v.destination}`, v.body, headers);
      out.replaceChildren(h("p", { text: `Published: ${answer.messageId}` }), h("a", { href: `#/queue/events?messageId=${encodeURIComponent(answer.messageId)}`, text: "Follow it in the events log" }));
    });
  });
  page("Publish a message", h("section", { class: "card" }, form, out));
}

// The messages waiting for delivery (delayed, due or being delivered), by filter, a page at a time;
// each can be shown whole or cancelled, and everything a filter matches can be cancelled at once.
function waitingPage() {
  const filterNames = [["URL", "url"], ["URL group", "topicName"], ["FIFO queue", "queueName"], ["Schedule ID", "scheduleId"], ["Label", "label"], ["Flow-control key", "flowControlKey"]];
  const given = hashQuery();
  const filters = h("form", { class: "grid", "aria-label": "Filter waiting messages" },
    filterNames.map(([title, name]) => field(title, h("input", { name, value: given.get(name) || "" }))),
    h("button", { type: "submit", text: "Apply" }),
    h("button", { type: "button", class: "danger", text: "Cancel matching messages", onclick: (e) => cancelMatching(e.target) }));
  const out = h("div");
  const detail = h("div");
  const more = h("button", { type: "button", class: "plain", text: "More messages", hidden: true });
  let cursor = null, shown = [];
  const params = () => {
    const p = new URLSearchParams();
    for (const [key, value] of Object.entries(formValues(filters))) if (value) p.set(key, value);
    return p;
  };
  const columns = [
    { title: "Message", cell: (m) => m.messageId },
    { title: "Created", cell: (m) => when(m.createdAt) },
    { title: "Not before", cell: (m) => when(m.notBefore) },
    { title: "Destination", cell: (m) => [m.method, m.url].join(" ") },
    { title: "Via", cell: (m) => [m.topicName && `group ${m.topicName}`, m.queueName && `queue ${m.queueName}`, m.scheduleId && `schedule ${m.scheduleId}`].filter(Boolean).join(" · ") },
    { title: "Retried", cell: (m) => `${m.retried} of ${m.maxRetries}` },
    { title: "", cell: (m) => h("div", { class: "row" },
      h("button", { type: "button", class: "plain", text: "Show", onclick: () => {
        detail.replaceChildren(h("h2", { text: `Message ${m.messageId}` }), h("pre", { text: json(m) }));
        detail.scrollIntoView({ block: "nearest" });
      } }),
      h("button", { type: "button", class: "danger", text: "Cancel", onclick: (e) => {
        if (!confirm(`Cancel message ${m.messageId}?`)) return;
        busy(e.target, detail, async () => {
          await api("DELETE", `/v2/messages/${encodeURIComponent(m.messageId)}`);
          detail.replaceChildren(h("p", { text: `Cancelled ${m.messageId}.` }));
          await load(false);
        });
      } })) },
  ];
  const load = (next) => busy(null, out, async () => {
    const p = params();
    p.set("count", "50");
    if (next && cursor) p.set("cursor", cursor);
    const answer = await api("GET", `/v2/messages?${p}`);
    shown = next ? shown.concat(answer.messages) : answer.messages;
    cursor = answer.cursor || null;
    more.hidden = !cursor;
    out.replaceChildren(h("p", { class: "muted", text: `${shown.length} shown${cursor ? ", more after them" : ""}` }), table(columns, shown, "No message is waiting."));
  });
  const cancelMatching = (button) => {
    const p = params();
    const what = p.toString() ? `every waiting message matching ${p.toString().replaceAll("&", ", ")}` : "EVERY waiting message";
    if (!confirm(`Cancel ${what}?`)) return;
    busy(button, detail, async () => {
      const answer = await api("DELETE", `/v2/messages${p.toString() ? "?" + p : ""}`);
      detail.replaceChildren(h("p", { text: `Cancelled ${answer.cancelled}.` }));
      await load(false);
    });
  };
  more.addEventListener("click", () => load(true));
  filters.addEventListener("submit", (event) => { event.preventDefault(); load(false); });
  page("Waiting messages", h("section", { class: "card" }, filters), detail, out, more);
  load(false);
}

function hashQuery() {
  const at = location.hash.indexOf("?");
  return new URLSearchParams(at < 0 ? "" : location.hash.slice(at + 1));
}

function stateBadge(name) {
  const bad = ["ERROR", "FAILED", "CANCELED", "CANCEL_REQUESTED"].includes(name);
  return h("span", { class: `badge ${bad ? "bad" : name === "DELIVERED" ? "ok" : ""}`, text: name });
}

function eventsPage() {
  const given = hashQuery();
  const out = h("div");
  const states = ["", "CREATED", "ACTIVE", "RETRY", "ERROR", "IN_PROGRESS", "DELIVERED", "FAILED", "CANCEL_REQUESTED", "CANCELED"];
  const filters = h("form", { class: "grid", "aria-label": "Filter events" },
    field("State", select("state", states, given.get("state") || "")),
    field("Message ID", h("input", { name: "messageId", value: given.get("messageId") || "" })),
    field("URL", h("input", { name: "url" })),
    field("URL group", h("input", { name: "topicName" })),
    field("Schedule ID", h("input", { name: "scheduleId" })),
    field("FIFO queue", h("input", { name: "queueName" })),
    h("label", { class: "inline" }, h("input", { type: "checkbox", name: "live", checked: true }), "live updates"),
    h("button", { type: "submit", text: "Apply" }));
  let cursor = null;
  const older = h("button", { type: "button", class: "plain", text: "Older events", hidden: true });
  const query = (withCursor) => {
    const v = formValues(filters);
    const params = new URLSearchParams();
    for (const key of ["state", "messageId", "url", "topicName", "scheduleId", "queueName"]) if (v[key]) params.set(key, v[key]);
    params.set("count", "50");
    if (withCursor && cursor) params.set("cursor", cursor);
    return params.toString();
  };
  const columns = [
    { title: "Time", cell: (e) => when(e.time) },
    { title: "State", cell: (e) => stateBadge(e.state) },
    { title: "Message", cell: (e) => e.messageId },
    { title: "URL", cell: (e) => e.url || "" },
    { title: "Detail", cell: (e) => [e.error, e.responseStatus ? `HTTP ${e.responseStatus}` : null, e.nextDeliveryTime ? `next at ${when(e.nextDeliveryTime)}` : null].filter(Boolean).join(" · ") },
  ];
  let shown = [];
  const render = () => out.replaceChildren(table(columns, shown, "No event matches."));
  const load = (more) => busy(null, out, async () => {
    const answer = await api("GET", `/v2/events?${query(more)}`);
    shown = more ? shown.concat(answer.events) : answer.events;
    cursor = answer.cursor || null;
    older.hidden = !cursor;
    render();
  });
  older.addEventListener("click", () => load(true));
  filters.addEventListener("submit", (event) => { event.preventDefault(); load(false); });
  state.timers.push(setInterval(() => {
    if (formValues(filters).live && !document.hidden && shown.length <= 50) load(false);
  }, 3000));
  page("Events log", h("section", { class: "card" }, filters), out, older);
  load(false);
}

function dlqPage() {
  const out = h("div");
  const detail = h("div");
  let cursor = null, shown = [];
  const more = h("button", { type: "button", class: "plain", text: "More", hidden: true });
  const selected = new Set();
  const bulk = (action) => async (e) => {
    if (!selected.size) { toast("Select dead letters first."); return; }
    if (action === "delete" && !confirm(`Delete ${selected.size} dead letters?`)) return;
    await busy(e.target, detail, async () => {
      const dlqIds = [...selected];
      if (action === "retry") await api("POST", "/v2/dlq/retry", { dlqIds });
      else await api("DELETE", "/v2/dlq", { dlqIds });
      toast(`${action === "retry" ? "Retried" : "Deleted"} ${dlqIds.length}`);
      selected.clear();
      await load(false);
    });
  };
  const columns = [
    { title: "", cell: (d) => h("input", { type: "checkbox", "aria-label": `select ${d.dlqId}`, checked: selected.has(d.dlqId), onchange: (e) => (e.target.checked ? selected.add(d.dlqId) : selected.delete(d.dlqId)) }) },
    { title: "Failed", cell: (d) => when(d.failedAt) },
    { title: "Message", cell: (d) => d.messageId },
    { title: "URL", cell: (d) => d.url },
    { title: "Response", cell: (d) => `HTTP ${d.responseStatus}` },
    { title: "", cell: (d) => h("div", { class: "row" },
      h("button", { type: "button", class: "plain", text: "Inspect", onclick: () => {
        detail.replaceChildren(h("h2", { text: `Dead letter ${d.dlqId}` }),
          h("h3", { text: "Body" }), h("pre", { text: d.body !== undefined ? d.body : d.bodyBase64 !== undefined ? `(base64) ${d.bodyBase64}` : "" }),
          h("h3", { text: "Headers" }), h("pre", { text: json(d.header || {}) }),
          h("h3", { text: `Response ${d.responseStatus}` }), h("pre", { text: d.responseBody !== undefined ? String(d.responseBody) : "" }));
        detail.scrollIntoView({ block: "nearest" });
      } }),
      h("button", { type: "button", text: "Retry", onclick: (e) => busy(e.target, detail, async () => {
        const answer = await api("POST", `/v2/dlq/retry/${encodeURIComponent(d.dlqId)}`);
        toast(`Retried as ${answer.messageId}`);
        await load(false);
      }) }),
      h("button", { type: "button", class: "danger", text: "Delete", onclick: (e) => {
        if (!confirm(`Delete dead letter ${d.dlqId}?`)) return;
        busy(e.target, detail, async () => { await api("DELETE", `/v2/dlq/${encodeURIComponent(d.dlqId)}`); await load(false); });
      } })) },
  ];
  const load = (next) => busy(null, out, async () => {
    const answer = await api("GET", `/v2/dlq?count=50${next && cursor ? "&cursor=" + encodeURIComponent(cursor) : ""}`);
    shown = next ? shown.concat(answer.messages) : answer.messages;
    cursor = answer.cursor || null;
    more.hidden = !cursor;
    out.replaceChildren(table(columns, shown, "No dead letters."));
  });
  more.addEventListener("click", () => load(true));
  page("Dead letters",
    h("div", { class: "row" }, h("button", { type: "button", text: "Retry selected", onclick: bulk("retry") }),
      h("button", { type: "button", class: "danger", text: "Delete selected", onclick: bulk("delete") }),
      h("button", { type: "button", class: "plain", text: "Refresh", onclick: () => load(false) })),
    out, more, detail);
  load(false);
}

function schedulesPage() {
  const out = h("div");
  const listOut = h("div");
  const cronHelp = h("div", { class: "muted", "aria-live": "polite" });
  const cron = h("input", { name: "cron", required: true, value: "*/5 * * * *" });
  let timer = null;
  const explain = () => {
    clearTimeout(timer);
    timer = setTimeout(async () => {
      try {
        const answer = await api("GET", `/cron?expression=${encodeURIComponent(cron.value)}&count=5`);
        cronHelp.replaceChildren(h("span", { text: "Next firings: " }), h("span", { class: "firings", text: answer.next.map(when).join(" · ") }));
      } catch (error) { cronHelp.replaceChildren(errorBox(error)); }
    }, 250);
  };
  cron.addEventListener("input", explain);
  const form = h("form", { class: "grid", "aria-label": "Create a schedule" },
    field("Destination URL", h("input", { name: "destination", type: "url", required: true })),
    field("Cron (UTC; CRON_TZ=Zone first for another)", cron),
    field("Method", select("method", ["POST", "PUT", "PATCH", "GET", "DELETE"], "POST")),
    field("Retries", h("input", { name: "retries", type: "number", min: 0, value: 3 })),
    field("Body", h("textarea", { name: "body" })),
    h("button", { type: "submit", text: "Create schedule" }));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    busy(form.querySelector("button"), out, async () => {
      const v = formValues(form);
      const answer = await api("POST", `/v2/schedules/${v.destination}`, v.body, { "Svc-Cron": v.cron, "Svc-Method": v.method, "Svc-Retries": String(v.retries || 0), "Content-Type": "text/plain" });
      toast(`Schedule ${answer.scheduleId} created`);
      await load();
    });
  });
  const action = (s, what) => (e) => busy(e.target, out, async () => {
    if (what === "delete") {
      if (!confirm(`Delete schedule ${s.scheduleId}?`)) return;
      await api("DELETE", `/v2/schedules/${encodeURIComponent(s.scheduleId)}`);
    } else {
      await api("PATCH", `/v2/schedules/${encodeURIComponent(s.scheduleId)}/${what}`);
    }
    await load();
  });
  const load = () => busy(null, listOut, async () => {
    const schedules = await api("GET", "/v2/schedules");
    listOut.replaceChildren(table([
      { title: "ID", cell: (s) => s.scheduleId },
      { title: "Cron", cell: (s) => s.cron },
      { title: "Destination", cell: (s) => s.destination },
      { title: "State", cell: (s) => h("span", { class: `badge ${s.isPaused ? "bad" : "ok"}`, text: s.isPaused ? "paused" : "active" }) },
      { title: "Next", cell: (s) => (s.isPaused ? "" : when(s.nextScheduleTime)) },
      { title: "", cell: (s) => h("div", { class: "row" },
        s.isPaused ? h("button", { type: "button", text: "Resume", onclick: action(s, "resume") }) : h("button", { type: "button", class: "plain", text: "Pause", onclick: action(s, "pause") }),
        h("button", { type: "button", class: "danger", text: "Delete", onclick: action(s, "delete") })) },
    ], schedules, "No schedules."));
  });
  page("Schedules", h("section", { class: "card" }, form, cronHelp, out), listOut);
  explain();
  load();
}

// Adds an endpoint to a URL group (made by its first endpoint), removes endpoints, deletes groups.
function urlGroupsPage() {
  const out = h("div");
  const listOut = h("div");
  const form = h("form", { class: "grid", "aria-label": "Add an endpoint" },
    field("URL group", h("input", { name: "group", required: true, placeholder: "new or existing name" })),
    field("Endpoint URL", h("input", { name: "url", type: "url", required: true })),
    field("Endpoint name (optional)", h("input", { name: "name" })),
    h("button", { type: "submit", text: "Add endpoint" }));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    busy(form.querySelector("button"), out, async () => {
      const v = formValues(form);
      const endpoint = { url: v.url };
      if (v.name) endpoint.name = v.name;
      await api("POST", `/v2/topics/${encodeURIComponent(v.group)}/endpoints`, { endpoints: [endpoint] });
      out.replaceChildren(h("p", { text: `Added ${v.url} to ${v.group}.` }));
      await load();
    });
  });
  const removeEndpoint = (group, endpoint) => (e) => {
    if (!confirm(`Remove ${endpoint.url} from ${group.name}?`)) return;
    busy(e.target, out, async () => {
      await api("DELETE", `/v2/topics/${encodeURIComponent(group.name)}/endpoints`, { endpoints: [endpoint.name ? { name: endpoint.name } : { url: endpoint.url }] });
      out.replaceChildren(h("p", { text: `Removed ${endpoint.url} from ${group.name}.` }));
      await load();
    });
  };
  const load = () => busy(null, listOut, async () => {
    const groups = await api("GET", "/v2/topics");
    listOut.replaceChildren(table([
      { title: "Name", cell: (g) => g.name },
      { title: "Endpoints", cell: (g) => h("ul", { class: "endpoints" }, (g.endpoints || []).map((endpoint) => h("li", {},
        h("span", { text: (endpoint.name ? `${endpoint.name}: ` : "") + endpoint.url }), " ",
        h("button", { type: "button", class: "plain small", text: "Remove", "aria-label": `Remove ${endpoint.url}`, onclick: removeEndpoint(g, endpoint) })))) },
      { title: "Updated", cell: (g) => when(g.updatedAt) },
      { title: "", cell: (g) => h("button", { type: "button", class: "danger", text: "Delete group", onclick: (e) => {
        if (!confirm(`Delete URL group ${g.name}?`)) return;
        busy(e.target, out, async () => { await api("DELETE", `/v2/topics/${encodeURIComponent(g.name)}`); out.replaceChildren(h("p", { text: `Deleted ${g.name}.` })); await load(); });
      } }) },
    ], groups, "No URL group yet: add an endpoint to make one."));
  });
  page("URL groups", h("section", { class: "card" }, form, out), listOut);
  load();
}

// FIFO queues (create, parallelism, pause, resume, delete) and the flow-control keys' live state.
function queuesPage() {
  const out = h("div");
  const queuesOut = h("div");
  const keysOut = h("div");
  const globalOut = h("p", { class: "muted" });
  const form = h("form", { class: "grid", "aria-label": "Create or change a FIFO queue" },
    field("Queue name", h("input", { name: "queueName", required: true })),
    field("Parallelism", h("input", { name: "parallelism", type: "number", min: 1, value: 1 })),
    h("button", { type: "submit", text: "Save queue" }));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    busy(form.querySelector("button"), out, async () => {
      const v = formValues(form);
      await api("POST", "/v2/queues", { queueName: v.queueName, parallelism: Number(v.parallelism || 1) });
      out.replaceChildren(h("p", { text: `Saved ${v.queueName}.` }));
      await load();
    });
  });
  const queueAction = (q, what) => (e) => {
    if (what === "delete" && !confirm(`Delete queue ${q.name}?`)) return;
    busy(e.target, out, async () => {
      const path = `/v2/queues/${encodeURIComponent(q.name)}`;
      if (what === "delete") await api("DELETE", path); else await api("POST", `${path}/${what}`);
      out.replaceChildren(h("p", { text: `${q.name}: ${what === "delete" ? "deleted" : what === "pause" ? "paused" : "resumed"}.` }));
      await load();
    });
  };
  const keyAction = (k, what) => (e) => {
    let query = "";
    if (what === "pin") {
      const limits = prompt("Pin limits (e.g. parallelism=2&rate=10&period=60):", "parallelism=1");
      if (limits === null) return;
      query = `?${limits}`;
    }
    if (what === "unpin") query = "?parallelism=true&rate=true";
    busy(e.target, out, async () => {
      await api("POST", `/v2/flowControl/${encodeURIComponent(k.flowControlKey)}/${what}${query}`);
      out.replaceChildren(h("p", { text: `${k.flowControlKey}: ${what} done.` }));
      await load();
    });
  };
  const limit = (count, max) => (max ? `${count} of ${max}` : `${count} (no limit)`);
  const load = () => Promise.all([
    busy(null, queuesOut, async () => {
      const queues = await api("GET", "/v2/queues");
      queuesOut.replaceChildren(table([
        { title: "Name", cell: (q) => q.name },
        { title: "Parallelism", cell: (q) => String(q.parallelism) },
        { title: "Waiting", cell: (q) => String(q.lag) },
        { title: "State", cell: (q) => h("span", { class: `badge ${q.paused ? "bad" : "ok"}`, text: q.paused ? "paused" : "active" }) },
        { title: "", cell: (q) => h("div", { class: "row" },
          q.paused ? h("button", { type: "button", text: "Resume", onclick: queueAction(q, "resume") }) : h("button", { type: "button", class: "plain", text: "Pause", onclick: queueAction(q, "pause") }),
          h("a", { href: `#/queue/messages?queueName=${encodeURIComponent(q.name)}`, text: "Messages" }),
          h("button", { type: "button", class: "danger", text: "Delete", onclick: queueAction(q, "delete") })) },
      ], queues, "No FIFO queue yet."));
    }),
    busy(null, keysOut, async () => {
      const [keys, global] = await Promise.all([api("GET", "/v2/flowControl"), api("GET", "/v2/globalParallelism")]);
      globalOut.textContent = `Deliveries in flight: ${limit(global.parallelismCount, global.parallelismMax)}.`;
      keysOut.replaceChildren(table([
        { title: "Key", cell: (k) => k.flowControlKey },
        { title: "Waiting", cell: (k) => String(k.waitListSize) },
        { title: "Parallelism", cell: (k) => limit(k.parallelismCount, k.parallelismMax) + (k.isPinnedParallelism ? " (pinned)" : "") },
        { title: "Rate", cell: (k) => (k.rateMax ? `${k.rateCount} of ${k.rateMax} per ${k.ratePeriod} s` : `${k.rateCount} (no limit)`) + (k.isPinnedRate ? " (pinned)" : "") },
        { title: "State", cell: (k) => h("span", { class: `badge ${k.isPaused ? "bad" : "ok"}`, text: k.isPaused ? "paused" : "active" }) },
        { title: "", cell: (k) => h("div", { class: "row" },
          k.isPaused ? h("button", { type: "button", text: "Resume", onclick: keyAction(k, "resume") }) : h("button", { type: "button", class: "plain", text: "Pause", onclick: keyAction(k, "pause") }),
          h("button", { type: "button", class: "plain", text: "Pin", onclick: keyAction(k, "pin") }),
          h("button", { type: "button", class: "plain", text: "Unpin", onclick: keyAction(k, "unpin") }),
          h("button", { type: "button", class: "plain", text: "Reset rate", onclick: keyAction(k, "resetRate") })) },
      ], keys, "No flow-control key yet: messages published with Svc-Flow-Control-Key make one."));
    }),
  ]);
  page("Queues and flow control",
    h("h2", { text: "FIFO queues" }), h("section", { class: "card" }, form, out), queuesOut,
    h("h2", { text: "Flow-control keys" }), globalOut, keysOut);
  load();
}

// Workflow runs, newest first, by state and URL; each run's steps, and cancelling a run that is running.
function workflowsPage() {
  const states = ["", "RUN_STARTED", "RUN_SUCCESS", "RUN_FAILED", "RUN_CANCELED"];
  const filters = h("form", { class: "grid", "aria-label": "Filter workflow runs" },
    field("State", select("state", states, "")),
    field("Workflow URL", h("input", { name: "workflowUrl" })),
    field("Run ID", h("input", { name: "workflowRunId" })),
    h("button", { type: "submit", text: "Apply" }));
  const out = h("div");
  const detail = h("div");
  const older = h("button", { type: "button", class: "plain", text: "Older runs", hidden: true });
  let cursor = null, shown = [];
  const stepsOf = (run) => run.steps.flatMap((group) => group.steps);
  const columns = [
    { title: "Run", cell: (r) => r.workflowRunId },
    { title: "URL", cell: (r) => r.workflowUrl },
    { title: "State", cell: (r) => h("span", { class: `badge ${r.workflowState === "RUN_SUCCESS" ? "ok" : r.workflowState === "RUN_STARTED" ? "" : "bad"}`, text: r.workflowState }) },
    { title: "Started", cell: (r) => when(r.workflowRunCreatedAt) },
    { title: "Ended", cell: (r) => when(r.workflowRunCompletedAt) },
    { title: "Steps", cell: (r) => String(stepsOf(r).length) },
    { title: "", cell: (r) => h("div", { class: "row" },
      h("button", { type: "button", class: "plain", text: "Steps", onclick: () => {
        detail.replaceChildren(h("h2", { text: `Run ${r.workflowRunId}` }), table([
          { title: "#", cell: (s) => String(s.stepId) },
          { title: "Name", cell: (s) => s.stepName || "" },
          { title: "Type", cell: (s) => s.stepType || "" },
          { title: "State", cell: (s) => stateBadge(s.state) },
          { title: "At", cell: (s) => when(s.createdAt) },
          { title: "Output", cell: (s) => h("pre", { text: typeof s.out === "string" ? s.out : json(s.out) }) },
        ], stepsOf(r), "No step yet."));
        detail.scrollIntoView({ block: "nearest" });
      } }),
      r.workflowState === "RUN_STARTED" ? h("button", { type: "button", class: "danger", text: "Cancel run", onclick: (e) => {
        if (!confirm(`Cancel run ${r.workflowRunId}?`)) return;
        busy(e.target, detail, async () => {
          await api("DELETE", `/v2/workflows/runs/${encodeURIComponent(r.workflowRunId)}`);
          detail.replaceChildren(h("p", { text: `Cancelled ${r.workflowRunId}.` }));
          await load(false);
        });
      } }) : null) },
  ];
  const load = (more) => busy(null, out, async () => {
    const p = new URLSearchParams();
    for (const [key, value] of Object.entries(formValues(filters))) if (value) p.set(key, value);
    p.set("count", "50");
    if (more && cursor) p.set("cursor", cursor);
    const answer = await api("GET", `/v2/workflows/logs?${p}`);
    shown = more ? shown.concat(answer.runs) : answer.runs;
    cursor = answer.cursor || null;
    older.hidden = !cursor;
    out.replaceChildren(table(columns, shown, "No workflow run matches."));
  });
  older.addEventListener("click", () => load(true));
  filters.addEventListener("submit", (event) => { event.preventDefault(); load(false); });
  page("Workflow runs", h("section", { class: "card" }, filters), out, older, detail);
  load(false);
}

function keysPage() {
  const keysOut = h("div");
  const showKeys = (k) => keysOut.replaceChildren(h("div", { class: "secret", text: `current: ${k.current}` }), h("div", { class: "secret", text: `next: ${k.next}` }));
  page("Signing keys", h("section", { class: "card" },
    h("p", { class: "muted", text: "Deliveries are signed with the current key; receivers also accept the next one, so rotating does not break them." }),
    keysOut,
    h("button", { type: "button", class: "danger", text: "Rotate signing keys", onclick: (e) => {
      if (!confirm("Rotate? The next key becomes current and a new next key is made; receivers must know the new keys.")) return;
      busy(e.target, keysOut, async () => { showKeys(await api("POST", "/v2/keys/rotate")); toast("Signing keys rotated"); });
    } })));
  busy(null, keysOut, async () => showKeys(await api("GET", "/v2/keys")));
}

// ---------- routing ----------

function route() {
  clearTimers();
  if (!state.csrf) { showSignIn(); return; }
  const path = location.hash.replace(/^#/, "").split("?")[0] || "/indexes";
  for (const link of document.querySelectorAll("nav a")) link.classList.toggle("here", path.startsWith(link.getAttribute("href").slice(1)));
  const index = path.match(/^\/indexes\/([^/]+)$/);
  if (index) return indexPage(decodeURIComponent(index[1]));
  switch (path) {
    case "/queue/publish": return publishPage();
    case "/queue/messages": return waitingPage();
    case "/queue/url-groups": return urlGroupsPage();
    case "/queue/queues": return queuesPage();
    case "/queue/workflows": return workflowsPage();
    case "/queue/keys": return keysPage();
    case "/queue/events": return eventsPage();
    case "/queue/dlq": return dlqPage();
    case "/queue/schedules": return schedulesPage();
    default: return indexesPage();
  }
}

window.addEventListener("hashchange", route);
window.addEventListener("DOMContentLoaded", async () => {
  try { signedIn(await api("GET", "/session")); }
  catch (_) { state.csrf = null; }
  route();
});
