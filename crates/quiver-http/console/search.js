// A search index's page: its statistics and a document browser (search, upsert, fetch, range and
// delete, in one of the index's named indexes). Served after indexes.js (whose helpers it uses), in the
// same script.

async function searchIndexPage(id) {
  const head = h("div", {}, h("p", { class: "muted", text: "Loading…" }));
  page("Search index", head);
  let index;
  try { index = await api("GET", `/v2/search/${encodeURIComponent(id)}`); }
  catch (error) { head.replaceChildren(errorBox(error)); return; }
  document.title = `${index.name} · Quiver console`;
  main().querySelector("h1").textContent = index.name;
  head.replaceChildren(h("p", { class: "muted", text: `search index · plan ${index.type} · ${index.region} · endpoint ${index.endpoint}` }));
  main().append(...tabbed([["Documents", () => documentsTab(index)], ["Statistics", () => searchStatsTab(index)]]));
}

function searchStatsTab(index) {
  const out = h("div", {}, h("p", { class: "muted", text: "Loading statistics…" }));
  busy(null, out, async () => {
    const stats = await api("GET", `/v2/search/${encodeURIComponent(index.id)}/stats`);
    out.replaceChildren(h("div", { class: "counters" },
      counter("Documents", stats.current_vector_count, index.max_vector_count),
      counter("Searches today", stats.daily_query_count, index.max_daily_queries),
      counter("Updates today", stats.daily_update_count, index.max_daily_updates),
      counter("Storage", stats.storage_usage, undefined, " B"),
      counter("Pending", stats.pending_index_count)));
    for (const bar of out.querySelectorAll(".bar span")) bar.style.width = bar.dataset.share + "%";
  });
  return out;
}

function documentsTable(documents) {
  return table([
    { title: "ID", cell: (d) => String(d.id) },
    { title: "Score", cell: (d) => (d.score === undefined ? "" : Number(d.score).toFixed(4)) },
    { title: "Content", cell: (d) => (d.content === undefined ? "" : h("pre", { text: typeof d.content === "string" ? d.content : json(d.content) })) },
    { title: "Metadata", cell: (d) => (d.metadata ? h("pre", { text: json(d.metadata) }) : "") },
  ], documents, "No documents.");
}

function documentsTab(index) {
  // The client's named indexes are the data plane's namespaces; documents always go to a named one.
  const name = h("select", { name: "index" });
  const path = (op) => `/search/${encodeURIComponent(index.id)}/${op}/${encodeURIComponent(name.value)}`;
  const loadNames = async () => {
    const answer = await api("GET", `/search/${encodeURIComponent(index.id)}/list-namespaces`);
    const current = name.value;
    const names = answer.result.filter((n) => n !== "");
    name.replaceChildren(...names.map((n) => h("option", { value: n, selected: n === current, text: n })));
  };
  const newName = h("input", { placeholder: "new index name" });
  const nameRow = h("div", { class: "row" }, field("Index", name), field("Or a new one", newName),
    h("button", { type: "button", class: "plain", text: "Use", onclick: () => {
      if (!newName.value) return;
      name.append(h("option", { value: newName.value, text: newName.value }));
      name.value = newName.value; newName.value = "";
    } }));
  busy(null, null, loadNames);
  const named = () => { if (!name.value) throw new Error("Choose an index, or name a new one and press Use."); };

  // Search
  const searchOut = h("div");
  const search = h("form", { class: "grid", "aria-label": "Search" },
    field("Query", h("input", { name: "query", required: true })),
    field("Filter", h("input", { name: "filter", placeholder: "category = 'news' AND @metadata.year > 2020" })),
    field("Top K", h("input", { name: "topK", type: "number", min: 1, max: 1000, value: 10 })),
    field("Semantic weight (0 to 1)", h("input", { name: "semanticWeight", type: "number", min: 0, max: 1, step: 0.05, value: 0.75 })),
    h("button", { type: "submit", text: "Search" }));
  search.addEventListener("submit", (event) => {
    event.preventDefault();
    busy(search.querySelector("button"), searchOut, async () => {
      named();
      const v = formValues(search);
      const body = { query: v.query, topK: Number(v.topK) || 10, includeData: true, includeMetadata: true, semanticWeight: Number(v.semanticWeight) };
      if (v.filter) body.filter = v.filter;
      const answer = await api("POST", path("search"), body);
      searchOut.replaceChildren(h("p", { class: "muted", text: `${answer.result.length} results` }), documentsTable(answer.result));
    });
  });

  // Upsert
  const upsertOut = h("div");
  const upsert = h("form", { class: "grid", "aria-label": "Upsert a document" },
    field("ID", h("input", { name: "id", required: true })),
    field("Content (JSON object, or text)", h("textarea", { name: "content", required: true, placeholder: "{\"title\": \"…\", \"body\": \"…\"}" })),
    field("Metadata (JSON object)", h("textarea", { name: "metadata", placeholder: "{\"year\": 2024}" })),
    h("button", { type: "submit", text: "Upsert" }), upsertOut);
  upsert.addEventListener("submit", (event) => {
    event.preventDefault();
    busy(upsert.querySelector("button"), upsertOut, async () => {
      named();
      const v = formValues(upsert);
      const text = v.content.trim();
      const document = { id: v.id, content: text.startsWith("{") ? parseJsonField(text, "Content") : v.content };
      const metadata = parseJsonField(v.metadata, "Metadata");
      if (metadata !== undefined) document.metadata = metadata;
      await api("POST", path("upsert-data"), [document]);
      upsertOut.replaceChildren(h("p", { class: "muted", text: `Upserted ${v.id}.` }));
      await loadNames();
    });
  });

  return h("div", {}, nameRow,
    h("h2", { text: "Search" }), h("section", { class: "card" }, search, searchOut),
    h("h2", { text: "Upsert a document" }), h("section", { class: "card" }, upsert),
    h("h2", { text: "Fetch, range and delete" }),
    fetchRangeDelete({ path, show: documentsTable, noun: "document", check: named }));
}
