// Quiver's web console: one page, plain JavaScript, no third-party code. Every action is a call to
// Quiver's own APIs through /console/api (the server puts in the session's credentials), and every error
// shown is the API's own message. Text from the server is only ever set as text, never as HTML.
//
// The script is served as one file, this one first, then indexes.js and queue.js (the pages of each
// area): this one holds the shared helpers, sign-in and the routing.
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

// A list the API pages by cursor, 50 items a read. `path(params)` is the route to read with `params`
// (count, and the cursor for a next page) plus the page's own filters; `key` names the answer's array;
// `render(shown, hasMore)` is what `out` shows. `load(false)` reads the first page again, and the `more`
// button (labelled `moreText`) reads the next.
function cursorList(out, moreText, path, key, render) {
  const list = { shown: [], cursor: null };
  list.more = h("button", { type: "button", class: "plain", text: moreText, hidden: true });
  list.load = (next) => busy(null, out, async () => {
    const params = new URLSearchParams({ count: "50" });
    if (next && list.cursor) params.set("cursor", list.cursor);
    const answer = await api("GET", path(params));
    list.shown = next ? list.shown.concat(answer[key]) : answer[key];
    list.cursor = answer.cursor || null;
    list.more.hidden = !list.cursor;
    out.replaceChildren(...[render(list.shown, Boolean(list.cursor))].flat());
  });
  list.more.addEventListener("click", () => list.load(true));
  return list;
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

// ---------- routing ----------

function route() {
  clearTimers();
  if (!state.csrf) { showSignIn(); return; }
  const path = location.hash.replace(/^#/, "").split("?")[0] || "/indexes";
  for (const link of document.querySelectorAll("nav a")) link.classList.toggle("here", path.startsWith(link.getAttribute("href").slice(1)) || (link.getAttribute("href") === "#/indexes" && path.startsWith("/search/")));
  const index = path.match(/^\/indexes\/([^/]+)$/);
  if (index) return indexPage(decodeURIComponent(index[1]));
  const search = path.match(/^\/search\/([^/]+)$/);
  if (search) return searchIndexPage(decodeURIComponent(search[1]));
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
