// The Holdpoint inbox: open interrupts across sessions, answered with the caller's own bearer
// token (kept in sessionStorage), and the history of decisions from the audit query
// (`GET /v1/interrupts?status=all`: resolved and expired interrupts with who, what and how fast).
// Everything the API returns is rendered as text (textContent), never as markup.
"use strict";

const TOKEN_KEY = "holdpoint.token";
const REFRESH_MS = 2000;
let refreshTimer = null;
let busy = false;

const $ = (id) => document.getElementById(id);

function el(tag, props, ...children) {
  const node = document.createElement(tag);
  Object.assign(node, props || {});
  for (const child of children) node.append(child);
  return node;
}

class ApiError extends Error {
  constructor(status, body) {
    const err = (body && body.error) || {};
    super(err.message || (body && body.message) || `HTTP ${status}`);
    this.status = status;
    this.code = err.code || `http_${status}`;
    this.param = err.param || null;
  }
}

async function api(method, path, body) {
  const headers = { Authorization: `Bearer ${sessionStorage.getItem(TOKEN_KEY)}` };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const resp = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await resp.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch (e) { data = null; }
  if (resp.status === 401 || (resp.status === 403 && !(data && data.error))) {
    signOut("Those credentials were refused.");
  }
  if (!resp.ok) throw new ApiError(resp.status, data);
  return data;
}

// -- sign in --------------------------------------------------------------------------------

function signOut(message) {
  sessionStorage.removeItem(TOKEN_KEY);
  clearInterval(refreshTimer);
  $("app").hidden = true;
  $("sign-out").hidden = true;
  $("sign-in").hidden = false;
  $("sign-in-error").textContent = message || "";
}

function signedIn() {
  $("sign-in").hidden = true;
  $("app").hidden = false;
  $("sign-out").hidden = false;
  refresh();
  clearInterval(refreshTimer);
  refreshTimer = setInterval(refresh, REFRESH_MS);
}

// -- filters --------------------------------------------------------------------------------

function filters() {
  const form = $("filters");
  const minutes = (name) => (form.elements[name].value === "" ? null : Number(form.elements[name].value) * 60);
  return {
    agent_id: form.elements.agent_id.value.trim() || null,
    reason: form.elements.reason.value.trim() || null,
    older_than: minutes("older_than"),
    expiring_within: minutes("expiring_within"),
    approver: form.elements.mine.checked ? "me" : null,
  };
}

function query(params) {
  const q = new URLSearchParams({ status: "open", limit: "100" });
  for (const [k, v] of Object.entries(params)) if (v !== null) q.set(k, String(v));
  return q.toString();
}

// The server applies the filters it knows; the page applies the rest to what it gets.
function keep(item, f, now) {
  if (f.agent_id && item.agent_id !== undefined && item.agent_id !== f.agent_id) return false;
  if (f.reason && item.reason !== f.reason) return false;
  if (f.older_than !== null && now - Date.parse(item.created_at) < f.older_than * 1000) return false;
  if (f.expiring_within !== null) {
    if (!item.expires_at || Date.parse(item.expires_at) - now > f.expiring_within * 1000) return false;
  }
  return true;
}

// -- the open list --------------------------------------------------------------------------

async function refresh() {
  if (busy) return;
  busy = true;
  try {
    if (!$("open").hidden) await loadOpen();
    else await loadHistory();
    $("status").textContent = "";
  } catch (err) {
    $("status").textContent = `Could not load: ${err.code || "error"}: ${err.message}`;
  } finally {
    busy = false;
  }
}

async function loadOpen() {
  const f = filters();
  const page = await api("GET", `/v1/interrupts?${query(f)}`);
  const now = Date.now();
  const items = (page.interrupts || []).filter((i) => keep(i, f, now));
  const list = $("items");
  const shown = new Set();
  for (const item of items) {
    const key = `${item.session_id}/${item.interrupt_id}`;
    shown.add(key);
    if (!list.querySelector(`[data-key="${CSS.escape(key)}"]`)) list.append(card(item, key));
  }
  for (const node of Array.from(list.children)) if (!shown.has(node.dataset.key)) node.remove();
  $("empty").hidden = items.length > 0;
}

function ago(iso) {
  const secs = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000));
  if (secs < 60) return `${secs}s ago`;
  if (secs < 3600) return `${Math.round(secs / 60)}m ago`;
  return `${Math.round(secs / 3600)}h ago`;
}

// Tool arguments arrive as canonical JSON text (what the fingerprint covers): shown indented.
function pretty(value) {
  if (typeof value === "string") {
    try { return JSON.stringify(JSON.parse(value), null, 2); } catch (e) { return value; }
  }
  return JSON.stringify(value, null, 2);
}

function card(item, key) {
  const node = $("card").content.firstElementChild.cloneNode(true);
  node.dataset.key = key;
  node.dataset.interruptId = item.interrupt_id;
  const payload = item.payload && typeof item.payload === "object" ? item.payload : {};
  node.querySelector(".reason").textContent = item.reason;
  const meta = [`session ${item.session_id}`, `interrupt ${item.interrupt_id}`, ago(item.created_at)];
  if (item.agent_id) meta.unshift(`agent ${item.agent_id}`);
  if (item.expires_at) meta.push(`expires ${item.expires_at}`);
  node.querySelector(".meta").textContent = meta.join(" · ");
  node.querySelector(".follow").href = `/inbox/session?id=${encodeURIComponent(item.session_id)}`;
  node.querySelector(".message").textContent =
    typeof payload.message === "string" ? payload.message : JSON.stringify(item.payload);
  if (item.action) {
    node.querySelector(".action").hidden = false;
    node.querySelector(".tool").textContent = item.action.tool || "";
    node.querySelector(".fingerprint").textContent = item.action.fingerprint || "";
    node.querySelector(".arguments").textContent = pretty(item.action.arguments);
  }
  const form = node.querySelector("form.answer");
  const schema = item.response_schema && typeof item.response_schema === "object" ? item.response_schema : null;
  const fields = schema ? schemaFields(schema, form.querySelector(".fields")) : [];
  const answer = (payload_) => submit(item, form, payload_);
  const options = (payload.metadata && Array.isArray(payload.metadata.options)) ? payload.metadata.options : [];
  for (const option of options) {
    const label = typeof option === "object" && option !== null ? (option.label ?? option.value) : option;
    const value = typeof option === "object" && option !== null && "value" in option ? option.value : option;
    node.querySelector(".options").append(el("button", {
      type: "button", className: "option", textContent: String(label),
      onclick: () => answer({ status: "resolved", payload: value }),
    }));
  }
  const buttons = form.querySelector(".buttons");
  const approvedField = fields.find((f) => f.name === "approved" && f.kind === "boolean");
  if (!schema || approvedField) {
    for (const [text, value] of [["Approve", true], ["Deny", false]]) {
      buttons.append(el("button", {
        type: "button", className: value ? "approve" : "deny", textContent: text,
        onclick: () => answer(schema ? { ...collect(fields, form), approved: value } : { approved: value }),
      }));
    }
  }
  if (schema) {
    buttons.append(el("button", { type: "button", className: "submit", textContent: "Submit",
                                  onclick: () => answer(collect(fields, form)) }));
  }
  return node;
}

// A form for the top level of a response schema: one input per property, by its type. The
// server checks the answer (A1); the page only collects it.
function schemaFields(schema, container) {
  const props = schema.type === "object" || schema.properties ? (schema.properties || {}) : null;
  if (props === null) {
    const input = el("textarea", { name: "payload", rows: 3, placeholder: "JSON answer" });
    container.append(el("label", { className: "field" }, "Answer (JSON) ", input));
    return [{ name: null, kind: "json", input }];
  }
  const required = new Set(schema.required || []);
  return Object.entries(props).map(([name, prop]) => {
    const kind = Array.isArray(prop.enum) ? "enum" : (prop.type || "json");
    let input;
    if (kind === "boolean") input = el("input", { type: "checkbox" });
    else if (kind === "enum") {
      input = el("select", {}, el("option", { value: "", textContent: "—" }));
      prop.enum.forEach((v, i) => input.append(el("option", { value: String(i), textContent: JSON.stringify(v) })));
    } else if (kind === "integer" || kind === "number") input = el("input", { type: "number", step: "any" });
    else if (kind === "string") input = el("input", { type: "text" });
    else input = el("textarea", { rows: 2, placeholder: "JSON" });
    input.name = name;
    input.dataset.field = name;
    const title = `${prop.title || name}${required.has(name) ? " *" : ""}`;
    container.append(el("label", { className: "field" }, `${title} `, input));
    return { name, kind, input, prop };
  });
}

function collect(fields, form) {
  const out = {};
  for (const f of fields) {
    const v = f.input.value;
    if (f.kind === "boolean") out[f.name] = f.input.checked;
    else if (f.kind === "enum") { if (v !== "") out[f.name] = f.prop.enum[Number(v)]; }
    else if (f.kind === "integer" || f.kind === "number") { if (v !== "") out[f.name] = Number(v); }
    else if (f.kind === "string") { if (v !== "") out[f.name] = v; }
    else if (v.trim() !== "") {
      try { const parsed = JSON.parse(v); if (f.name === null) return parsed; out[f.name] = parsed; }
      catch (e) { out[f.name ?? "payload"] = v; }
    }
  }
  return fields.length === 1 && fields[0].name === null ? null : out;
}

async function submit(item, form, payload) {
  const body = { payload };
  const comment = form.elements.comment.value.trim();
  if (comment) body.comment = comment;
  if (item.action && item.action.fingerprint) body.expect_fingerprint = item.action.fingerprint;
  for (const bad of form.querySelectorAll("[aria-invalid]")) {
    bad.removeAttribute("aria-invalid");
    bad.classList.remove("invalid");
  }
  const error = form.querySelector(".error");
  error.textContent = "";
  const buttons = form.closest(".card").querySelectorAll("button");
  buttons.forEach((b) => { b.disabled = true; });
  try {
    const path = `/v1/sessions/${encodeURIComponent(item.session_id)}/interrupts/${encodeURIComponent(item.interrupt_id)}/resume`;
    await api("POST", path, body);
    form.closest(".card").remove();
    $("empty").hidden = $("items").children.length > 0;
    $("status").textContent = `Answered ${item.interrupt_id}.`;
  } catch (err) {
    buttons.forEach((b) => { b.disabled = false; });
    error.textContent = `${err.code}: ${err.message}`;
    highlight(form, err.param);
  }
}

// `payload.note` names the form field `note`; `comment` the comment box; `payload` the whole form.
function highlight(form, param) {
  if (!param) return;
  const parts = param.split(".");
  let target = null;
  if (parts[0] === "payload" && parts.length > 1) {
    const name = parts[1] === "payload" && parts.length > 2 ? parts[2] : parts[1];
    target = form.querySelector(`[data-field="${CSS.escape(name)}"]`);
  } else if (parts[0] === "comment") {
    target = form.elements.comment;
  }
  for (const node of target ? [target] : Array.from(form.querySelectorAll(".fields [data-field], .fields textarea"))) {
    node.setAttribute("aria-invalid", "true");
    node.classList.add("invalid");
  }
}

// -- history --------------------------------------------------------------------------------

async function loadHistory() {
  const f = filters();
  const page = await api("GET", `/v1/interrupts?${query({ agent_id: f.agent_id, reason: f.reason, status: "all" })}`);
  const rows = (page.interrupts || []).filter((i) => i.status !== "open").map(decision);
  rows.sort((a, b) => (a.at < b.at ? 1 : -1));
  const body = $("history-rows");
  body.replaceChildren(...rows.map((r) => el("tr", { className: "decision" },
    el("td", { textContent: r.at }), el("td", { textContent: r.by }),
    el("td", { textContent: JSON.stringify(r.answer) }), el("td", { textContent: r.reason }),
    el("td", { textContent: r.interrupt_id }), el("td", { textContent: r.session_id }),
    el("td", { textContent: r.took }))));
  $("history-empty").hidden = rows.length > 0;
}

// One closed interrupt of the audit trail as a history row (A6): who, what, when, how fast.
function decision(item) {
  const responder = item.responder || {};
  const approvers = (item.approvals || []).map((a) => a.subject).filter(Boolean);
  const by = item.status === "expired" ? `(expired: ${responder.subject || "system"})`
    : approvers.length > 1 ? approvers.join(", ") : (responder.subject || responder.user || "");
  return {
    at: item.resolved_at || "", session_id: item.session_id, interrupt_id: item.interrupt_id,
    reason: item.reason || "", by, answer: item.resolution,
    took: typeof item.decision_secs === "number" ? `${item.decision_secs.toFixed(1)} s` : "",
  };
}

// -- tabs and start -------------------------------------------------------------------------

function show(tab) {
  for (const name of ["open", "history"]) {
    $(name).hidden = name !== tab;
    $(`tab-${name}`).setAttribute("aria-selected", String(name === tab));
  }
  refresh();
}

document.addEventListener("DOMContentLoaded", () => {
  $("sign-in").addEventListener("submit", (ev) => {
    ev.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, $("token").value.trim());
    $("token").value = "";
    signedIn();
  });
  $("sign-out").addEventListener("click", () => signOut(""));
  $("filters").addEventListener("submit", (ev) => { ev.preventDefault(); $("items").replaceChildren(); refresh(); });
  $("tab-open").addEventListener("click", () => show("open"));
  $("tab-history").addEventListener("click", () => show("history"));
  if (sessionStorage.getItem(TOKEN_KEY)) signedIn();
  else signOut("");
});
