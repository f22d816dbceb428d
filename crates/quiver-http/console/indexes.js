// The console's vector and search index pages: the lists, the forms that create indexes, and an
// index's statistics, data browser and settings. Served after core.js, in the same script.

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
      { title: "Name", cell: (i) => h("a", { href: `#/search/${encodeURIComponent(i.id)}`, text: i.name }) },
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
  main().append(...tabbed([["Statistics", () => statsTab(index)], ["Data browser", () => browserTab(index)], ["Settings", () => settingsTab(index)]]));
}

// A row of tabs and the element below it: each of `tabs` is [name, render], and choosing one shows
// what its render returns. The first is shown at once.
function tabbed(tabs) {
  const body = h("div");
  const bar = h("div", { class: "tabs", role: "tablist" });
  const show = (i) => {
    clearTimers();
    [...bar.children].forEach((b, j) => b.setAttribute("aria-selected", String(i === j)));
    body.replaceChildren(tabs[i][1]());
  };
  tabs.forEach(([name], i) => bar.append(h("button", { type: "button", role: "tab", text: name, onclick: () => show(i) })));
  show(0);
  return [bar, body];
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

  return h("div", {}, nsRow,
    h("h2", { text: "Query" }), h("section", { class: "card" }, query, queryOut),
    h("h2", { text: "Upsert" }), h("section", { class: "card" }, upsert),
    h("h2", { text: "Fetch, range and delete" }),
    fetchRangeDelete({ path: nsPath, show: recordsTable, noun: "record", fetched: { includeVectors: true } }));
}

// Fetch by ids or prefix, range page by page and delete, at `path(op)`: `show` renders what is read,
// `noun` names one item in messages, `fetched` adds to a fetch's body, and `check` runs before every
// call (it throws to refuse one).
function fetchRangeDelete({ path, show, noun, fetched = {}, check = () => {} }) {
  const out = h("div");
  const ids = h("input", { name: "ids", placeholder: "id1, id2" });
  const prefix = h("input", { name: "prefix", placeholder: "id prefix" });
  let cursor = "0";
  const more = h("button", { type: "button", class: "plain", text: "Next page", hidden: true });
  const range = (fresh) => busy(null, out, async () => {
    check();
    if (fresh) cursor = "0";
    const body = { cursor, limit: 20, includeMetadata: true, includeData: true };
    if (prefix.value) body.prefix = prefix.value;
    const answer = await api("POST", path("range"), body);
    cursor = answer.result.nextCursor;
    more.hidden = !cursor;
    out.replaceChildren(show(answer.result.vectors.filter(Boolean)));
  });
  more.addEventListener("click", () => range(false));
  const idList = () => ids.value.split(",").map((s) => s.trim()).filter(Boolean);
  const row = h("div", { class: "row" }, field("IDs", ids), field("Prefix", prefix),
    h("button", { type: "button", text: "Fetch", onclick: () => busy(null, out, async () => {
      check();
      const body = Object.assign({ includeMetadata: true, includeData: true }, fetched);
      if (idList().length) body.ids = idList(); else if (prefix.value) body.prefix = prefix.value; else throw new Error("Give IDs or a prefix.");
      const answer = await api("POST", path("fetch"), body);
      out.replaceChildren(show(answer.result.filter(Boolean)));
    }) }),
    h("button", { type: "button", class: "plain", text: "Range", onclick: () => range(true) }), more,
    h("button", { type: "button", class: "danger", text: "Delete", onclick: () => {
      const list = idList();
      const what = list.length ? `${noun}s ${list.join(", ")}` : prefix.value ? `every ${noun} whose id starts with ${prefix.value}` : null;
      if (!what) { toast("Give IDs or a prefix to delete."); return; }
      if (!confirm(`Delete ${what}?`)) return;
      busy(null, out, async () => {
        check();
        const answer = await api("POST", path("delete"), list.length ? { ids: list } : { prefix: prefix.value });
        out.replaceChildren(h("p", { class: "muted", text: `Deleted ${answer.result.deleted}.` }));
      });
    } }));
  return h("section", { class: "card" }, row, out);
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

