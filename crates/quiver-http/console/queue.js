// The console's queue pages: publish, waiting messages, the events log, dead letters, schedules, URL
// groups, FIFO queues and flow-control keys, workflow runs and signing keys. Served after indexes.js,
// in the same script.

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
  const list = cursorList(out, "More messages", (p) => {
    for (const [key, value] of params()) p.set(key, value);
    return `/v2/messages?${p}`;
  }, "messages", (shown, hasMore) => [
    h("p", { class: "muted", text: `${shown.length} shown${hasMore ? ", more after them" : ""}` }),
    table(columns, shown, "No message is waiting."),
  ]);
  const load = list.load;
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
  filters.addEventListener("submit", (event) => { event.preventDefault(); load(false); });
  page("Waiting messages", h("section", { class: "card" }, filters), detail, out, list.more);
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
  const columns = [
    { title: "Time", cell: (e) => when(e.time) },
    { title: "State", cell: (e) => stateBadge(e.state) },
    { title: "Message", cell: (e) => e.messageId },
    { title: "URL", cell: (e) => e.url || "" },
    { title: "Detail", cell: (e) => [e.error, e.responseStatus ? `HTTP ${e.responseStatus}` : null, e.nextDeliveryTime ? `next at ${when(e.nextDeliveryTime)}` : null].filter(Boolean).join(" · ") },
  ];
  const list = cursorList(out, "Older events", (p) => {
    const v = formValues(filters);
    for (const key of ["state", "messageId", "url", "topicName", "scheduleId", "queueName"]) if (v[key]) p.set(key, v[key]);
    return `/v2/events?${p}`;
  }, "events", (shown) => table(columns, shown, "No event matches."));
  filters.addEventListener("submit", (event) => { event.preventDefault(); list.load(false); });
  // Live updates read the first page again, unless older pages have been read too.
  state.timers.push(setInterval(() => {
    if (formValues(filters).live && !document.hidden && list.shown.length <= 50) list.load(false);
  }, 3000));
  page("Events log", h("section", { class: "card" }, filters), out, list.more);
  list.load(false);
}

function dlqPage() {
  const out = h("div");
  const detail = h("div");
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
  const list = cursorList(out, "More", (p) => `/v2/dlq?${p}`, "messages", (shown) => table(columns, shown, "No dead letters."));
  const load = list.load;
  page("Dead letters",
    h("div", { class: "row" }, h("button", { type: "button", text: "Retry selected", onclick: bulk("retry") }),
      h("button", { type: "button", class: "danger", text: "Delete selected", onclick: bulk("delete") }),
      h("button", { type: "button", class: "plain", text: "Refresh", onclick: () => load(false) })),
    out, list.more, detail);
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
      await load();
      out.replaceChildren(h("p", { text: `Added ${v.url} to ${v.group}.` }));
    });
  });
  const removeEndpoint = (group, endpoint) => (e) => {
    if (!confirm(`Remove ${endpoint.url} from ${group.name}?`)) return;
    busy(e.target, out, async () => {
      await api("DELETE", `/v2/topics/${encodeURIComponent(group.name)}/endpoints`, { endpoints: [endpoint.name ? { name: endpoint.name } : { url: endpoint.url }] });
      await load();
      out.replaceChildren(h("p", { text: `Removed ${endpoint.url} from ${group.name}.` }));
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
        busy(e.target, out, async () => { await api("DELETE", `/v2/topics/${encodeURIComponent(g.name)}`); await load(); out.replaceChildren(h("p", { text: `Deleted ${g.name}.` })); });
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
      await load();
      out.replaceChildren(h("p", { text: `Saved ${v.queueName}.` }));
    });
  });
  const queueAction = (q, what) => (e) => {
    if (what === "delete" && !confirm(`Delete queue ${q.name}?`)) return;
    busy(e.target, out, async () => {
      const path = `/v2/queues/${encodeURIComponent(q.name)}`;
      if (what === "delete") await api("DELETE", path); else await api("POST", `${path}/${what}`);
      await load();
      out.replaceChildren(h("p", { text: `${q.name}: ${what === "delete" ? "deleted" : what === "pause" ? "paused" : "resumed"}.` }));
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
      await load();
      out.replaceChildren(h("p", { text: `${k.flowControlKey}: ${what} done.` }));
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
  const list = cursorList(out, "Older runs", (p) => {
    for (const [key, value] of Object.entries(formValues(filters))) if (value) p.set(key, value);
    return `/v2/workflows/logs?${p}`;
  }, "runs", (shown) => table(columns, shown, "No workflow run matches."));
  const load = list.load;
  filters.addEventListener("submit", (event) => { event.preventDefault(); load(false); });
  page("Workflow runs", h("section", { class: "card" }, filters), out, list.more, detail);
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

