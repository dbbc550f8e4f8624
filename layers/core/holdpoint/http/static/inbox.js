// The Holdpoint approver's console: open interrupts across sessions, answered with the caller's
// own bearer token (kept in sessionStorage), and the history of decisions from the audit query
// (`GET /v1/interrupts?status=all`: resolved and expired interrupts with who, what and how fast).
// The first half of this script is shared with the session page (/inbox/session loads it before
// session.js): the API client, readable principals, policies and answers, local times, and the
// answer form. Everything the API returns is rendered as text (textContent), never as markup.
"use strict";

const TOKEN_KEY = "holdpoint.token";
const $ = (id) => document.getElementById(id);
const token = () => sessionStorage.getItem(TOKEN_KEY) || "";

function el(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (k === "dataset") Object.assign(node.dataset, v);
    else node[k] = v; // ariaLabel, role: the ARIA properties Chromium and Firefox reflect
  }
  for (const child of children) if (child !== null && child !== undefined) node.append(child);
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

let onRefused = () => {};

async function api(method, path, body) {
  const headers = { Authorization: `Bearer ${token()}` };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const resp = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await resp.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch (e) { data = null; }
  if (resp.status === 401 || (resp.status === 403 && !(data && data.error))) onRefused("Those credentials were refused.");
  if (!resp.ok) throw new ApiError(resp.status, data);
  return data;
}

// -- readable values ------------------------------------------------------------------------

// `key:dev-user` is an API key's subject, `user:ann` an end user's (client token); a bare name
// is an API key's subject or one a declaration maps (A2).
function principal(p) {
  if (typeof p !== "string" || !p) return "unknown";
  const m = /^(key|user):(.+)$/.exec(p);
  if (!m) return p;
  return m[1] === "key" ? `${m[2]} (API key)` : `${m[2]} (user)`;
}

function brief(value, max = 160) {
  if (value === null || value === undefined) return "";
  let text = typeof value === "string" ? value
    : (typeof value === "object" && typeof value.message === "string") ? value.message : JSON.stringify(value);
  text = text.replace(/\s+/g, " ").trim();
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

function parseJson(value) {
  if (typeof value !== "string") return value;
  try { return JSON.parse(value); } catch (e) { return value; }
}

// One value as a person reads it: strings bare, yes/no, the rest compact JSON.
function plain(value) {
  if (typeof value === "string") return value;
  if (typeof value === "boolean") return value ? "yes" : "no";
  return JSON.stringify(value);
}

// Tool arguments (canonical JSON text, what the fingerprint covers) as name/value pairs.
function argumentPairs(args) {
  const parsed = parseJson(args);
  if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) {
    return Object.entries(parsed).map(([k, v]) => [k, typeof v === "object" && v !== null ? JSON.stringify(v, null, 2) : plain(v)]);
  }
  return [["arguments", plain(parsed)]];
}

function callText(name, args) {
  const pairs = argumentPairs(args).map(([k, v]) => `${k}: ${v}`);
  return `${name}(${pairs.join(", ")})`;
}

// What a closed interrupt's answer means, from its verdict (PROTOCOL.md §2.3.1, the one reading
// every channel shares): Approved, Denied, Cancelled, Expired (with its outcome), a declared
// option's label, or the answer's fields; and whether the worker has it yet.
const VERDICT_WORDS = { approved: "Approved", denied: "Denied", cancelled: "Cancelled", answered: "Answered" };

function answerText(item) {
  const verdict = item.verdict || "answered";
  const answer = item.resolution;
  let text;
  if (item.status === "expired") text = `Expired (${verdict})`;
  else if (answer === null || answer === undefined) text = verdict === "answered" ? "Answered with no payload" : VERDICT_WORDS[verdict];
  else {
    const options = item.payload && item.payload.metadata && Array.isArray(item.payload.metadata.options) ? item.payload.metadata.options : [];
    const chosen = options.find((o) => JSON.stringify(o && typeof o === "object" && "value" in o ? o.value : o) === JSON.stringify(answer));
    const label = chosen === undefined ? null : String(typeof chosen === "object" && chosen !== null ? (chosen.label ?? chosen.value) : chosen);
    text = label !== null ? label : VERDICT_WORDS[verdict] || "Answered";
    const extra = answer && typeof answer === "object" && !Array.isArray(answer) && label === null
      ? Object.entries(answer).filter(([k]) => k !== "approved").map(([k, v]) => `${k}: ${plain(v)}`) : [];
    if (verdict === "answered" && !extra.length && label === null) text = plain(answer);
    else if (extra.length) text += ` (${extra.join(", ")})`;
  }
  if (item.status !== "expired" && item.delivery === "waiting") text += ", waiting to be delivered";
  if (item.delivery === "failed") text += ", not delivered (the worker never took it)";
  return text;
}

const sameDay = (d) => d.toDateString() === new Date().toDateString();

function localTime(iso, withDate) {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return "";
  if (!withDate && sameDay(d)) return d.toLocaleTimeString();
  return d.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "medium" });
}

function timeEl(iso, withDate) {
  return el("time", { dateTime: iso || "", textContent: localTime(iso, withDate), title: iso || "" });
}

function span(secs) {
  secs = Math.max(0, Math.floor(secs));
  const d = Math.floor(secs / 86400), h = Math.floor((secs % 86400) / 3600);
  const m = Math.floor((secs % 3600) / 60), s = secs % 60;
  if (d) return `${d}d ${h}h`;
  if (h) return `${h}h ${m}m`;
  if (m) return `${m}m ${String(s).padStart(2, "0")}s`;
  return `${s}s`;
}

function ago(iso) {
  return `${span((Date.now() - Date.parse(iso)) / 1000)} ago`;
}

// Who may answer, from the frozen policy (A2) and the requester.
function policyText(policy, requester) {
  if (policy === null) return "Who may answer: the approvers the tenant's policy names."; // an end user's view
  const p = policy || {};
  const who = [];
  if (p.subjects) who.push(p.subjects.map(principal).join(", "));
  if (p.groups) who.push(`group ${p.groups.map(principal).join(", ")}`);
  const parts = [`Who may answer: ${who.length ? who.join(" or ") : "anyone allowed to resume it"}`];
  if (p.origins) parts.push(`via ${p.origins.join(", ")}`);
  if ((p.quorum || 1) > 1) parts.push(`${p.quorum} approvals needed`);
  if (p.forbid_requester) parts.push(`not the requester (${principal(requester)})`);
  if (p.deny_resolves === false) parts.push("a denial does not end it");
  return `${parts.join(" · ")}.`;
}

function quorumText(item) {
  const quorum = (item.policy && item.policy.quorum) || 1;
  const answers = item.approvals || [];
  const yes = answers.filter((a) => a.status === "approved").map((a) => a.subject);
  const no = answers.filter((a) => a.status === "denied").map((a) => a.subject);
  if (quorum <= 1 && !answers.length) return "";
  let text = `${yes.length} of ${quorum} approval${quorum === 1 ? "" : "s"}${yes.length ? `: ${yes.join(", ")}` : ""}`;
  if (no.length) text += ` · denied: ${no.join(", ")}`;
  return text;
}

function answerItems(answers) {
  return (answers || []).map((a) => el("li", { className: `answered ${a.status}` },
    `${VERDICT_WORDS[a.status] || "Answered"} by ${principal(a.subject)}`, a.at ? " at " : "",
    a.at ? timeEl(a.at) : "", a.comment ? el("q", { textContent: a.comment }) : ""));
}

// Who an open interrupt still waits for (`waiting_for`, read off its policy by the server).
function waitingText(w) {
  if (!w) return "";
  const who = [...(w.subjects || []).map(principal), ...(w.groups || []).map((g) => `anyone in ${principal(g)}`)];
  const more = w.approvals > 1 ? `${w.approvals} more approvals` : "";
  if (!who.length && !more) return "";
  return `Waiting for ${more}${more && who.length ? " from " : ""}${who.join(" or ")}.`;
}

// What this person may do with the card (`you`, by the resume's own rules): nothing, and why,
// when the policy refuses them or they have answered already.
function readOnlyText(item) {
  const you = item.you;
  if (!you || you.may_answer) return "";
  if (you.answered) {
    const said = VERDICT_WORDS[you.answered.status] || "Answered";
    return `You answered (${said.toLowerCase()}) at ${localTime(you.answered.at)}. ${waitingText(item.waiting_for)}`.trim();
  }
  return `You cannot answer this: ${you.why}. ${waitingText(item.waiting_for)}`.trim();
}

// The question, as the server parsed its Markdown (core/markdown.py): text nodes, strong, em,
// code, and https: links only (rel noopener); nothing in a message becomes markup of its own.
function inlineNodes(parts) {
  const out = [];
  for (const p of parts || []) {
    if (typeof p === "string") p.split("\n").forEach((line, i) => { if (i) out.push(el("br")); if (line) out.push(line); });
    else if (p && p.b) out.push(el("strong", {}, ...inlineNodes(p.b)));
    else if (p && p.i) out.push(el("em", {}, ...inlineNodes(p.i)));
    else if (p && typeof p.code === "string") out.push(el("code", { textContent: p.code }));
    else if (p && p.a && /^https:\/\//i.test(p.href || "")) {
      out.push(el("a", { href: p.href, rel: "noopener noreferrer", target: "_blank" }, ...inlineNodes(p.a)));
    } else if (p && (p.a || p.span)) out.push(...inlineNodes(p.a || p.span));
  }
  return out;
}

function blockNodes(blocks) {
  return (blocks || []).map((b) => {
    if (b.ul || b.ol) return el(b.ul ? "ul" : "ol", {}, ...(b.ul || b.ol).map((i) => el("li", {}, ...inlineNodes(i))));
    if (b.h) return el("p", { className: "subhead" }, el("strong", {}, ...inlineNodes(b.h)));
    return el("p", {}, ...inlineNodes(b.p));
  });
}

// A question into a heading (its first paragraph, inline markup only) and what follows it.
function renderQuestion(heading, more, item, fallback) {
  const blocks = item.message_blocks || [];
  const first = blocks[0] && (blocks[0].p || blocks[0].h);
  heading.replaceChildren(...(first ? inlineNodes(first) : [fallback]));
  more.replaceChildren(...blockNodes(first ? blocks.slice(1) : blocks));
  more.hidden = !more.childNodes.length;
}

// "denies at 16:10": what the interrupt's expiry will answer (A5), said before it comes.
const EXPIRY_VERBS = { approve: "approves", deny: "denies", cancel: "cancels" };

// -- countdowns -----------------------------------------------------------------------------

// A node with data-expires (an ISO time) shows the time left, every second; at zero it reads
// "expired" and its card (data-card) turns expired: its answer buttons are disabled.
function tick() {
  const now = Date.now();
  for (const node of document.querySelectorAll("[data-since]")) node.textContent = `(${ago(node.dataset.since)})`;
  for (const node of document.querySelectorAll("[data-expires]")) {
    const left = (Date.parse(node.dataset.expires) - now) / 1000;
    const owner = node.closest("[data-card]");
    if (left <= 0) {
      node.textContent = `expired (${localTime(node.dataset.expires)}): ${EXPIRY_VERBS[node.dataset.outcome || "cancel"] || "closed"}`;
      node.classList.add("expired");
      if (owner && owner.dataset.state !== "expired") {
        owner.dataset.state = "expired";
        owner.querySelectorAll(".answer button").forEach((b) => { b.disabled = true; });
      }
    } else {
      const verb = EXPIRY_VERBS[node.dataset.outcome || "cancel"] || "expires";
      node.textContent = `${verb} at ${localTime(node.dataset.expires)} (in ${span(Math.ceil(left))})`;
      node.classList.toggle("soon", left < 60);
    }
  }
}

// -- the answer form ------------------------------------------------------------------------

// The form's fields: one per top-level property of an object schema (A1), by its type; a boolean
// `approved` is not a field but the Approve/Deny buttons. Other schemas: one JSON answer.
function schemaFields(schema, container, prefix) {
  const props = schema.type === "object" || schema.properties ? (schema.properties || {}) : null;
  const required = new Set(schema.required || []);
  if (props === null) {
    const input = el("textarea", { name: "payload", rows: 3, id: `${prefix}-payload` });
    input.dataset.field = "payload";
    const field = { name: null, kind: "json", input, prop: schema, required: true };
    container.append(fieldBox(field, "Answer (JSON)"));
    return [field];
  }
  const fields = [];
  for (const [name, prop] of Object.entries(props)) {
    const kind = Array.isArray(prop.enum) ? "enum" : (prop.type || "json");
    if (name === "approved" && kind === "boolean") continue;
    let input;
    if (kind === "boolean") input = el("input", { type: "checkbox" });
    else if (kind === "enum") {
      input = el("select", {}, el("option", { value: "", textContent: "—" }));
      prop.enum.forEach((v, i) => input.append(el("option", { value: String(i), textContent: plain(v) })));
    } else if (kind === "integer" || kind === "number") input = el("input", { type: "text", inputMode: "decimal" });
    else if (kind === "string") input = prop.maxLength > 200 ? el("textarea", { rows: 2 }) : el("input", { type: "text" });
    else input = el("textarea", { rows: 2, placeholder: "JSON" });
    input.name = name;
    input.id = `${prefix}-f-${name}`;
    input.dataset.field = name;
    if (required.has(name)) input.setAttribute("aria-required", "true");
    const field = { name, kind, input, prop, required: required.has(name) };
    container.append(fieldBox(field, `${prop.title || name}${required.has(name) ? " (required)" : ""}`));
    fields.push(field);
  }
  return fields;
}

function fieldBox(field, title) {
  const error = el("span", { className: "field-error", id: `${field.input.id}-error` });
  field.error = error;
  field.input.setAttribute("aria-describedby", error.id);
  const hint = field.prop && field.prop.description ? el("span", { className: "hint", textContent: ` ${field.prop.description}` }) : null;
  if (field.kind === "boolean") {
    return el("div", { className: "field" }, el("label", { htmlFor: field.input.id }, field.input, ` ${title}`), hint, error);
  }
  return el("div", { className: "field" }, el("label", { htmlFor: field.input.id, textContent: title }), hint, field.input, error);
}

// The answer the fields hold and what is wrong with it, field by field (the simple checks of the
// types the form renders; the server checks the whole schema and names what it refuses).
function readFields(fields) {
  const out = {};
  const problems = [];
  for (const f of fields) {
    const raw = f.kind === "boolean" ? null : f.input.value;
    const p = f.prop || {};
    let value;
    let bad = null;
    if (f.kind === "boolean") value = f.input.checked;
    else if (raw.trim() === "") { if (f.required) bad = "required"; }
    else if (f.kind === "enum") value = p.enum[Number(raw)];
    else if (f.kind === "integer" || f.kind === "number") {
      value = Number(raw.trim());
      if (!Number.isFinite(value)) bad = "not a number";
      else if (f.kind === "integer" && !Number.isInteger(value)) bad = "must be a whole number";
      else if (typeof p.minimum === "number" && value < p.minimum) bad = `at least ${p.minimum}`;
      else if (typeof p.maximum === "number" && value > p.maximum) bad = `at most ${p.maximum}`;
      else if (typeof p.exclusiveMinimum === "number" && value <= p.exclusiveMinimum) bad = `more than ${p.exclusiveMinimum}`;
      else if (typeof p.exclusiveMaximum === "number" && value >= p.exclusiveMaximum) bad = `less than ${p.exclusiveMaximum}`;
    } else if (f.kind === "string") {
      value = raw;
      if (typeof p.minLength === "number" && raw.length < p.minLength) bad = `at least ${p.minLength} characters`;
      else if (typeof p.maxLength === "number" && raw.length > p.maxLength) bad = `at most ${p.maxLength} characters`;
      else if (typeof p.pattern === "string") {
        try { if (!new RegExp(p.pattern, "u").test(raw)) bad = `must match ${p.pattern}`; } catch (e) { /* the server checks */ }
      }
    } else {
      try { value = JSON.parse(raw); } catch (e) { bad = "not valid JSON"; }
    }
    if (bad) problems.push([f, bad]);
    else if (value !== undefined) { if (f.name === null) return { value, problems }; out[f.name] = value; }
  }
  return { value: fields.length === 1 && fields[0].name === null ? null : out, problems };
}

function mark(input, errorNode, message) {
  input.setAttribute("aria-invalid", "true");
  input.classList.add("invalid");
  if (errorNode) errorNode.textContent = message;
}

function clearMarks(form) {
  for (const bad of form.querySelectorAll("[aria-invalid]")) {
    bad.removeAttribute("aria-invalid");
    bad.classList.remove("invalid");
  }
  for (const node of form.querySelectorAll(".field-error")) node.textContent = "";
  form.querySelector(".error").textContent = "";
}

// The server names one `param`: `payload.note` is the field `note` (`payload.payload.note` under
// an AG-UI answer), `comment` the comment box, `payload` alone the whole answer, `arguments` (or
// a field under it) the edited arguments.
function serverMark(form, fields, err) {
  const parts = (err.param || "").split(".");
  let targets = [];
  if (parts[0] === "arguments" && form.elements.arguments) {
    mark(form.elements.arguments, form.querySelector(".arguments-error"), err.message);
  }
  if (parts[0] === "payload" && parts.length > 1) {
    const name = parts[1] === "payload" && parts.length > 2 ? parts[2] : parts[1];
    targets = fields.filter((f) => f.name === name);
  } else if (parts[0] === "payload") targets = fields;
  if (parts[0] === "comment") mark(form.elements.comment, form.querySelector(".comment-error"), err.message);
  for (const f of targets) mark(f.input, f.error, err.message);
}

// An answer form for one interrupt: the schema's fields, a comment, and one clear kind of action:
// the payload's options; or Approve/Deny (no schema, or a schema with a boolean `approved`, which
// they set); or one Submit. `done(result)` gets the resume's answer.
function answerForm(item, done) {
  const prefix = `a-${item.session_id}-${item.interrupt_id}`.replace(/[^A-Za-z0-9_-]/g, "_");
  const form = el("form", { className: "answer", noValidate: true, ariaLabel: "Answer" });
  const fieldsBox = el("div", { className: "fields" });
  const payload = item.payload && typeof item.payload === "object" ? item.payload : {};
  const schema = item.response_schema && typeof item.response_schema === "object" ? item.response_schema : null;
  const fields = schema ? schemaFields(schema, fieldsBox, prefix) : [];
  const approvedProp = schema && schema.properties && schema.properties.approved;
  const approveDeny = !schema || (approvedProp && approvedProp.type === "boolean");
  const options = payload.metadata && Array.isArray(payload.metadata.options) ? payload.metadata.options : [];
  const comment = el("textarea", { name: "comment", rows: 2, id: `${prefix}-comment`, maxLength: 2000 });
  const commentError = el("span", { className: "field-error comment-error", id: `${prefix}-comment-error` });
  comment.setAttribute("aria-describedby", commentError.id);
  const buttons = el("div", { className: "buttons" });
  form.append(fieldsBox, el("div", { className: "field" },
    el("label", { htmlFor: comment.id, textContent: "Comment (optional)" }), comment, commentError),
  el("p", { className: "error", role: "alert" }), buttons);

  const send = async (build, edited) => {
    clearMarks(form);
    const { value, problems } = readFields(fields);
    if (problems.length) {
      for (const [f, message] of problems) mark(f.input, f.error, message);
      form.querySelector(".error").textContent = `Check ${problems.length === 1 ? "this field" : `these ${problems.length} fields`}.`;
      problems[0][0].input.focus();
      return;
    }
    const body = { payload: build(value) };
    if (comment.value.trim()) body.comment = comment.value.trim();
    if (item.action && item.action.fingerprint) body.expect_fingerprint = item.action.fingerprint;
    if (edited !== undefined) body.arguments = edited;
    const all = form.querySelectorAll("button");
    all.forEach((b) => { b.disabled = true; });
    try {
      const path = `/v1/sessions/${encodeURIComponent(item.session_id)}/interrupts/${encodeURIComponent(item.interrupt_id)}/resume`;
      const result = await api("POST", path, body);
      all.forEach((b) => { b.disabled = false; });
      done(result, form);
    } catch (err) {
      all.forEach((b) => { b.disabled = false; });
      form.querySelector(".error").textContent = `${err.code}: ${err.message}`;
      serverMark(form, fields, err);
    }
  };

  if (options.length) {
    options.forEach((option, i) => {
      const isObj = typeof option === "object" && option !== null;
      const label = isObj ? (option.label ?? option.value) : option;
      const value = isObj && "value" in option ? option.value : option;
      buttons.append(el("button", { type: "button", className: "option", textContent: String(label),
        title: i < 9 ? `key ${i + 1}` : "", onclick: () => send(() => ({ status: "resolved", payload: value })) }));
    });
  } else if (approveDeny) {
    buttons.append(
      el("button", { type: "button", className: "approve primary", textContent: "Approve", title: "key a",
        onclick: () => send((v) => (schema ? { ...v, approved: true } : { approved: true })) }),
      el("button", { type: "button", className: "deny", textContent: "Deny", title: "key d",
        onclick: () => send((v) => (schema ? { ...v, approved: false } : { approved: false })) }));
    if (editable(item)) buttons.before(editBox(item, prefix, (edited) => send(
      (v) => (schema ? { ...v, approved: true } : { approved: true }), edited)));
  } else {
    buttons.append(el("button", { type: "submit", className: "submit primary", textContent: "Submit" }));
  }
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    if (!options.length && !approveDeny) send((v) => v);
  });
  return form;
}

// A3: the policy lets this approver edit the action's arguments as they approve it.
function editable(item) {
  return Boolean(item.action && item.you && item.you.may_edit);
}

// The edit of an action's arguments: an editor prefilled with them, a diff of the change shown
// before anything is sent, and only then the button that approves the edited action.
function editBox(item, prefix, approve) {
  const original = parseJson(item.action.arguments);
  const editor = el("textarea", { name: "arguments", rows: 6, id: `${prefix}-arguments`, spellcheck: false,
    value: JSON.stringify(original, null, 2) });
  const error = el("span", { className: "field-error arguments-error", id: `${prefix}-arguments-error` });
  editor.setAttribute("aria-describedby", error.id);
  const diff = el("ul", { className: "diff", ariaLabel: "Changes to the arguments", hidden: true });
  const confirm = el("button", { type: "button", className: "approve-edited primary", hidden: true,
    textContent: "Approve with these changes" });
  let reviewed = null;
  const review = () => {
    editor.removeAttribute("aria-invalid");
    editor.classList.remove("invalid");
    error.textContent = "";
    let edited;
    try { edited = JSON.parse(editor.value); } catch (e) { edited = undefined; }
    if (!edited || typeof edited !== "object" || Array.isArray(edited)) {
      mark(editor, error, "The arguments must be a JSON object.");
      diff.hidden = true; confirm.hidden = true; reviewed = null;
      return;
    }
    const lines = diffLines(original, edited);
    diff.replaceChildren(...(lines.length ? lines : [el("li", { textContent: "No changes: this approves the action as it stands." })]));
    diff.hidden = false;
    reviewed = lines.length ? edited : null;
    confirm.hidden = !reviewed;
  };
  editor.addEventListener("input", () => { diff.hidden = true; confirm.hidden = true; reviewed = null; });
  confirm.addEventListener("click", () => { if (reviewed) approve(reviewed); });
  return el("details", { className: "edit" },
    el("summary", { textContent: "Edit the arguments before approving" }),
    el("div", { className: "field" }, el("label", { htmlFor: editor.id, textContent: "Arguments (JSON)" }), editor, error),
    el("button", { type: "button", className: "review-edit", textContent: "Show the changes", onclick: review }),
    diff, confirm);
}

// The change from one arguments object to another, a line per key: removed, then added.
function diffLines(before, after) {
  const out = [];
  const keys = [...new Set([...Object.keys(before || {}), ...Object.keys(after)])];
  for (const key of keys) {
    const had = before && Object.prototype.hasOwnProperty.call(before, key);
    const has = Object.prototype.hasOwnProperty.call(after, key);
    if (had && has && JSON.stringify(before[key]) === JSON.stringify(after[key])) continue;
    if (had) out.push(el("li", { className: "del", textContent: `− ${key}: ${plain(before[key])}` }));
    if (has) out.push(el("li", { className: "ins", textContent: `+ ${key}: ${plain(after[key])}` }));
  }
  return out;
}

// What a resume's answer means for the person who gave it.
function resultText(result) {
  const edit = result.edit ? `You approved your edit (fingerprint ${result.edit.fingerprint.slice(0, 12)}…)${
    result.edit.superseded ? `; the ${result.edit.superseded} earlier approval(s) no longer count` : ""}. ` : "";
  if (result.status === "open") {
    const left = Math.max(0, (result.quorum || 1) - (result.approvals || 0));
    const mine = result.noop ? "You had already answered" : "Your answer is recorded";
    return `${edit}${mine}: ${result.approvals} of ${result.quorum} approvals; waiting for ${left} more.`;
  }
  if (result.noop) return "Already answered.";
  return `${edit}Answered.`;
}

// The last few messages up to the interrupt's anchor (the call it asks about), readable: an
// assistant turn with no text shows the tool call it made, never an empty string.
function messageText(message) {
  const content = message.content;
  let text = "";
  if (typeof content === "string") text = content;
  else if (Array.isArray(content)) text = content.map((p) => (p && typeof p.text === "string" ? p.text : "")).join(" ");
  else if (content !== null && content !== undefined) text = JSON.stringify(content);
  const calls = (message.tool_calls || []).map((c) => `→ ${callText(c.function.name, c.function.arguments || "{}")}`);
  return [text.trim(), ...calls].filter(Boolean).join("\n") || "(no text)";
}

function roleName(message) {
  return { user: "user", assistant: "assistant", tool: "tool result", system: "system" }[message.role] || message.role;
}

function excerpt(messages, anchor, count = 4) {
  const end = anchor ? messages.findIndex((m) => m.id === anchor) : -1;
  const upto = end >= 0 ? messages.slice(0, end + 1) : messages;
  return upto.slice(-count);
}

window.Holdpoint = { TOKEN_KEY, $, el, api, ApiError, principal, brief, plain, answerText, callText, localTime,
                     timeEl, span, ago, policyText, quorumText, answerItems, tick, answerForm, resultText,
                     messageText, roleName, argumentPairs, readOnlyText, waitingText, renderQuestion,
                     setRefused: (fn) => { onRefused = fn; } };

// == the inbox page =========================================================================

const REFRESH_MS = 2000;
const HISTORY_EVERY = 5; // refreshes: the history is read again every 10 s while it is shown
const EXCERPT_TTL_MS = 60000;
const EXPIRED_KEEP_MS = 30000;
let refreshTimer = null;
let tickTimer = null;
let busy = false;
let ticks = 0;
const sessions = new Map(); // session_id -> {sig, at, view|null, pending}
let historyRows = [];

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
  refresh(true);
  clearInterval(refreshTimer);
  refreshTimer = setInterval(() => refresh(false), REFRESH_MS);
  clearInterval(tickTimer);
  tickTimer = setInterval(tick, 1000);
}

// -- signing in through the tenant's identity provider ----------------------------------------
// `/inbox?tenant=T`: the authorization code flow with PKCE (S256), as a public client (no secret
// in the page). The verifier and state wait in sessionStorage while the provider signs the person
// in; the code that comes back is exchanged at the token endpoint (which the page's CSP allows),
// and the ID token becomes the tab's bearer token.

const PKCE_KEY = "holdpoint.pkce";

function base64url(bytes) {
  return btoa(String.fromCharCode(...new Uint8Array(bytes))).replace(/\+/g, "-").replace(/\//g, "_")
    .replace(/=+$/, "");
}

const randomText = (n) => base64url(crypto.getRandomValues(new Uint8Array(n)));

async function providerSignIn(config, tenant) {
  const verifier = randomText(48);
  const state = randomText(16);
  const challenge = base64url(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier)));
  const redirect = `${location.origin}${location.pathname}?tenant=${encodeURIComponent(tenant)}`;
  sessionStorage.setItem(PKCE_KEY, JSON.stringify({ verifier, state, redirect, client_id: config.client_id,
    token_endpoint: config.token_endpoint }));
  const params = new URLSearchParams({ response_type: "code", client_id: config.client_id, redirect_uri: redirect,
    scope: "openid", state, code_challenge: challenge, code_challenge_method: "S256" });
  location.assign(`${config.authorization_endpoint}?${params}`);
}

// The provider sent the person back with `code` and `state`: "" once signed in, else why not.
async function finishSignIn(params) {
  const pending = JSON.parse(sessionStorage.getItem(PKCE_KEY) || "null");
  sessionStorage.removeItem(PKCE_KEY);
  history.replaceState(null, "", pending ? pending.redirect : location.pathname); // the code leaves the address bar
  if (!pending || params.get("state") !== pending.state) return "That sign-in was not started here; sign in again.";
  const body = new URLSearchParams({ grant_type: "authorization_code", code: params.get("code") || "",
    client_id: pending.client_id, redirect_uri: pending.redirect, code_verifier: pending.verifier });
  try {
    const resp = await fetch(pending.token_endpoint, { method: "POST", body });
    const data = resp.ok ? await resp.json() : null;
    if (!data || typeof data.id_token !== "string") return "The identity provider refused the sign-in.";
    sessionStorage.setItem(TOKEN_KEY, data.id_token);
    return "";
  } catch (err) {
    return "The identity provider could not be reached.";
  }
}

// Offers the provider's sign-in when the tenant declared one with the console's endpoints.
async function offerProvider(tenant) {
  if (!tenant) return;
  const resp = await fetch(`/inbox/sign-in.json?tenant=${encodeURIComponent(tenant)}`);
  if (!resp.ok) return;
  const config = await resp.json();
  $("idp-sign-in").onclick = () => providerSignIn(config, tenant);
  $("idp").hidden = false;
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

function query(params, status) {
  const q = new URLSearchParams({ status: status || "open", limit: "100" });
  for (const [k, v] of Object.entries(params)) if (v !== null && v !== undefined) q.set(k, String(v));
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

async function refresh(force) {
  if (busy) return;
  busy = true;
  ticks += 1;
  try {
    if (!$("open").hidden) await loadOpen();
    else if (force || ticks % HISTORY_EVERY === 0) await loadHistory();
    if ($("status").dataset.kind === "error") { $("status").textContent = ""; $("status").dataset.kind = ""; }
  } catch (err) {
    $("status").textContent = `Could not load: ${err.code || "error"}: ${err.message}`;
    $("status").dataset.kind = "error";
  } finally {
    busy = false;
  }
}

async function loadOpen() {
  const f = filters();
  if (ticks % HISTORY_EVERY === 1) loadAttention(); // every 10 s: stuck work changes slowly
  const page = await api("GET", `/v1/interrupts?${query(f)}`);
  const now = Date.now();
  const items = (page.interrupts || []).filter((i) => keep(i, f, now));
  const list = $("items");
  const shown = new Set();
  const bySession = new Map();
  for (const item of items) {
    const key = `${item.session_id}/${item.interrupt_id}`;
    shown.add(key);
    const sig = bySession.get(item.session_id) || [];
    sig.push(`${item.interrupt_id}:${(item.approvals || []).length}`);
    bySession.set(item.session_id, sig);
    const existing = list.querySelector(`[data-key="${CSS.escape(key)}"]`);
    if (existing) updateCard(existing, item);
    else list.append(card(item, key));
  }
  for (const node of Array.from(list.children)) {
    if (shown.has(node.dataset.key)) continue;
    if (node.dataset.state === "expired") { // expired here first: kept a while, marked, then gone
      node.dataset.gone = node.dataset.gone || String(now);
      if (now - Number(node.dataset.gone) < EXPIRED_KEEP_MS) continue;
    }
    removeCard(node);
  }
  $("empty").hidden = list.children.length > 0;
  countOpen();
  document.body.dataset.refreshes = String(Number(document.body.dataset.refreshes || 0) + 1);
  for (const [sid, sig] of bySession) loadExcerpt(sid, sig.sort().join(","));
}

// -- needs attention -------------------------------------------------------------------------

const agents = new Map(); // agent_id -> its config, or null where this caller may not read it (a client token)

// The sessions whose delivery is retrying or has failed (GET /v1/sessions?attention=true): why, what
// to do, and the worker's URL to a caller who may read the agent.
async function loadAttention() {
  let page;
  try { page = await api("GET", "/v1/sessions?attention=true&limit=20"); } catch (err) { return; }
  const rows = page.sessions || [];
  for (const row of rows) {
    if (row.agent_id && !agents.has(row.agent_id)) {
      agents.set(row.agent_id, null);
      try { agents.set(row.agent_id, (await api("GET", `/v1/agents/${encodeURIComponent(row.agent_id)}`)).agent); }
      catch (err) { /* 403 for a client token: the worker's address is not theirs to see */ }
    }
  }
  $("attention").hidden = rows.length === 0;
  $("attention-items").replaceChildren(...rows.map(attentionItem));
}

function attentionItem(row) {
  const a = row.attention || {};
  const agent = agents.get(row.agent_id);
  const worker = agent && agent.worker && agent.worker.url;
  const item = el("li", { className: "stuck", dataset: { kind: a.kind || "" } },
    el("b", { textContent: a.kind === "failed" ? "Delivery failed" : "Delivery retrying" }), " since ", timeEl(a.since), ": ",
    el("span", { className: "reason", textContent: a.reason || "" }), " ",
    el("a", { href: `/inbox/session?id=${encodeURIComponent(row.session_id)}`, textContent: "open session",
      ariaLabel: `session ${row.session_id}` }));
  if (worker) item.append(el("div", { className: "worker" }, "Worker ", el("code", { textContent: worker })));
  if (a.advice) item.append(el("div", { className: "what-to-do", textContent: `What to do: ${a.advice}` }));
  item.dataset.sessionId = row.session_id;
  return item;
}

// The conversation of each session, read once and again only when its open interrupts or their
// answers change (or after a minute), not every refresh for every card.
async function loadExcerpt(sid, sig) {
  const now = Date.now();
  let entry = sessions.get(sid);
  if (entry && (entry.pending || (entry.sig === sig && now - entry.at < EXCERPT_TTL_MS))) {
    if (entry.view) renderExcerpts(sid, entry.view);
    return;
  }
  entry = { sig, at: now, view: entry ? entry.view : null, pending: true };
  sessions.set(sid, entry);
  try {
    entry.view = await api("GET", `/v1/sessions/${encodeURIComponent(sid)}`);
    document.body.dataset.viewReads = String(Number(document.body.dataset.viewReads || 0) + 1);
  } catch (err) {
    entry.view = null;
  } finally {
    entry.pending = false;
    entry.at = Date.now();
  }
  if (entry.view) renderExcerpts(sid, entry.view);
}

function renderExcerpts(sid, view) {
  for (const node of $("items").querySelectorAll(`[data-session-id="${CSS.escape(sid)}"]`)) {
    const messages = excerpt(view.messages || [], node.dataset.anchor || null);
    const box = node.querySelector(".excerpt");
    const sig = messages.map((m) => m.id).join(",");
    if (box.dataset.sig === sig) continue;
    box.dataset.sig = sig;
    box.hidden = messages.length === 0;
    box.querySelector(".turns").replaceChildren(...messages.map((m) => el("li", { className: `turn-line ${m.role}` },
      el("span", { className: "role", textContent: `${roleName(m)}: ` }), el("span", { className: "said", textContent: messageText(m) }))));
  }
}

function card(item, key) {
  const node = $("card").content.firstElementChild.cloneNode(true);
  const id = `c-${item.session_id}-${item.interrupt_id}`.replace(/[^A-Za-z0-9_-]/g, "_");
  node.dataset.key = key;
  node.dataset.card = "";
  node.dataset.interruptId = item.interrupt_id;
  node.dataset.sessionId = item.session_id;
  if (item.anchor) node.dataset.anchor = item.anchor;
  node.id = id;
  const payload = item.payload && typeof item.payload === "object" ? item.payload : {};
  node.querySelector(".reason").textContent = item.reason;
  node.querySelector(".requester").textContent = `asked by ${principal(item.requester || (item.owner ? `key:${item.owner}` : ""))}`;
  const meta = [];
  if (item.agent_id) meta.push(`agent ${item.agent_id}`);
  meta.push(`session ${item.session_id}`);
  node.querySelector(".meta").textContent = meta.join(" · ");
  node.querySelector(".follow").href = `/inbox/session?id=${encodeURIComponent(item.session_id)}`;
  const message = node.querySelector(".message");
  message.id = `${id}-message`;
  renderQuestion(message, node.querySelector(".question-more"), item,
    item.action ? `Run ${item.action.tool}?` : brief(item.payload) || item.reason);
  node.setAttribute("aria-labelledby", message.id);
  const raised = node.querySelector(".raised");
  raised.append("asked ", timeEl(item.created_at), " ", el("span", { className: "ago", dataset: { since: item.created_at } }));
  renderAction(node, item);
  node.querySelector(".who").textContent = policyText(item.policy, item.requester);
  // What a bulk answer binds this card to: the action shown here, never a later one (A3).
  node.dataset.fingerprint = (item.action && item.action.fingerprint) || "";
  node.querySelector("input.select").addEventListener("change", updateBulk);
  updateCard(node, item);
  return node;
}

// The answer form for a person who may answer; for anyone else a line saying why not and who the
// card waits for (the server's own rule, `you`): never buttons that could only be refused.
function answerBox(node, item) {
  const box = node.querySelector(".answer-box");
  const readOnly = readOnlyText(item);
  const sig = readOnly ? `ro:${readOnly}` : "form";
  if (box.dataset.sig === sig) return;
  const had = box.dataset.sig === "form";
  box.dataset.sig = sig;
  node.dataset.readonly = readOnly ? "true" : "false";
  if (readOnly) box.replaceChildren(el("p", { className: "readonly", textContent: readOnly }));
  else if (!had) box.replaceChildren(answerForm(item, (result, form) => answered(node, item, result, form)));
  // A card joins a bulk answer only where its own answer is Approve or Deny.
  const pick = node.querySelector(".pick");
  pick.hidden = !box.querySelector("button.approve");
  if (pick.hidden) pick.querySelector("input").checked = false;
  updateBulk();
}

// The action an approval approves; an approver's edit (A3) replaces it, so a card shows it anew
// and its form is made again for the new fingerprint (an answer for the old one would be refused).
function renderAction(node, item) {
  if (!item.action || node.dataset.fingerprint === item.action.fingerprint) return;
  const again = node.dataset.fingerprint !== undefined;
  node.dataset.fingerprint = item.action.fingerprint;
  node.querySelector(".action").hidden = false;
  node.querySelector(".tool").textContent = item.action.tool || "";
  node.querySelector(".arguments").replaceChildren(...argumentPairs(item.action.arguments).flatMap(([k, v]) => [
    el("dt", { textContent: k }), el("dd", { textContent: v })]));
  node.querySelector(".fingerprint").textContent = item.action.fingerprint || "";
  node.querySelector(".agent-version").textContent = item.action.agent_version || "";
  const edits = item.edits || [];
  const last = edits[edits.length - 1];
  node.querySelector(".edited").textContent = last
    ? `Edited by ${principal(last.by.subject)} ${last.at}: approvals of the earlier version no longer count.` : "";
  if (!again) return;
  node.querySelector(".answer-box").dataset.sig = ""; // a new form, for the new fingerprint
  node.dataset.mine = ""; // an answer to the earlier version no longer stands: this approver may answer again
  const note = node.querySelector(".mine");
  if (note) note.remove();
}

// What changes while a card is open, updated in place (its form, and what is typed, stay).
function updateCard(node, item) {
  renderAction(node, item);
  const countdown = node.querySelector(".countdown");
  if (item.expires_at) { countdown.dataset.expires = item.expires_at; countdown.dataset.outcome = item.on_expiry || "cancel"; }
  if (node.dataset.mine !== "answered") answerBox(node, item);
  node.querySelector(".progress").textContent = quorumText(item);
  const sig = JSON.stringify(item.approvals || []);
  const list = node.querySelector(".answers");
  if (list.dataset.sig !== sig) {
    list.dataset.sig = sig;
    list.replaceChildren(...answerItems(item.approvals));
    node.dataset.answers = String((item.approvals || []).length);
  }
  node.classList.toggle("escalated", Boolean(item.escalated));
  tick();
}

function answered(node, item, result, form) {
  const text = resultText(result);
  if (result.status === "open") { // one answer of a quorum: the card stays and shows the progress
    form.querySelector(".error").textContent = "";
    node.dataset.mine = "answered";
    let note = node.querySelector(".mine");
    if (!note) { note = el("p", { className: "mine", role: "status" }); form.before(note); }
    note.textContent = text;
    if (!result.noop) form.elements.comment.value = "";
    form.hidden = true; // a second answer by the same person changes nothing (A2)
    sessions.delete(item.session_id);
    refresh(true);
    return;
  }
  $("status").textContent = `${text} ${item.payload && item.payload.message ? `“${brief(item.payload.message, 60)}”` : item.interrupt_id}`;
  removeCard(node);
}

function removeCard(node) {
  const focused = node.contains(document.activeElement);
  const next = node.nextElementSibling || node.previousElementSibling;
  node.remove();
  $("empty").hidden = $("items").children.length > 0;
  countOpen();
  updateBulk();
  if (focused && next) next.focus();
}

// The tab's title counts what is open, so a person sees it from another tab: "(3) Holdpoint inbox".
function countOpen() {
  const open = cards().filter((c) => c.dataset.state !== "expired").length;
  document.title = open ? `(${open}) Holdpoint inbox` : "Holdpoint inbox";
}

// -- answering several cards together ---------------------------------------------------------

const BULK_MAX = 100; // the most items one POST /v1/interrupts/resume takes (PROTOCOL.md §5.2.1)

function selectedCards() {
  return cards().filter((c) => !c.querySelector(".pick").hidden && c.querySelector("input.select").checked);
}

function updateBulk() {
  const count = selectedCards().length;
  $("bulk-count").textContent = count ? `${count} selected` : "None selected";
  for (const id of ["bulk-approve", "bulk-deny", "bulk-clear"]) $(id).disabled = count === 0;
}

function selectAll(on) {
  for (const node of cards()) {
    if (!node.querySelector(".pick").hidden) node.querySelector("input.select").checked = on;
  }
  updateBulk();
}

// The selected cards answered in one request (more in several of BULK_MAX): each is its own
// answer, bound to the action its card shows; a refused one stays, with its reason on its card.
async function answerSelected(approved) {
  const chosen = selectedCards();
  if (!chosen.length) return;
  const comment = $("bulk-comment").value.trim();
  const items = chosen.map((node) => {
    const one = { session_id: node.dataset.sessionId, interrupt_id: node.dataset.interruptId, payload: { approved } };
    if (node.dataset.fingerprint) one.expect_fingerprint = node.dataset.fingerprint;
    if (comment) one.comment = comment;
    return one;
  });
  const controls = ["bulk-approve", "bulk-deny", "bulk-clear"].map($);
  controls.forEach((b) => { b.disabled = true; });
  const results = [];
  try {
    for (let at = 0; at < items.length; at += BULK_MAX) {
      const out = await api("POST", "/v1/interrupts/resume", { items: items.slice(at, at + BULK_MAX) });
      results.push(...(out.results || []));
    }
  } catch (err) {
    $("status").textContent = `Could not answer: ${err.code}: ${err.message}`;
    updateBulk();
    return;
  }
  let refused = 0;
  for (const result of results) {
    const node = $("items").querySelector(`[data-key="${CSS.escape(`${result.session_id}/${result.interrupt_id}`)}"]`);
    if (!node) continue;
    node.querySelector("input.select").checked = false;
    const form = node.querySelector("form.answer");
    if (result.http_status !== 200) {
      refused += 1;
      const err = result.error || {};
      if (form) form.querySelector(".error").textContent = `${err.code}: ${err.message}`;
      node.dataset.refused = err.code || "refused";
      continue;
    }
    answered(node, { session_id: result.session_id, interrupt_id: result.interrupt_id, payload: null }, result, form);
  }
  const word = approved ? "Approved" : "Denied";
  $("status").textContent = `${word} ${results.length - refused} of ${results.length}` +
    (refused ? `; ${refused} refused: see ${refused === 1 ? "its card" : "their cards"}.` : ".");
  $("bulk-comment").value = "";
  updateBulk();
}

// -- keyboard -------------------------------------------------------------------------------

function cards() { return Array.from($("items").children); }

function currentCard() {
  const active = document.activeElement;
  return active && active.closest ? active.closest("#items > .card") : null;
}

function move(step) {
  const all = cards();
  if (!all.length) return;
  const at = all.indexOf(currentCard());
  const next = all[at < 0 ? (step > 0 ? 0 : all.length - 1) : Math.min(all.length - 1, Math.max(0, at + step))];
  next.focus();
  next.scrollIntoView({ block: "nearest" });
}

function onKey(ev) {
  if (ev.ctrlKey || ev.metaKey || ev.altKey || $("app").hidden) return;
  const target = ev.target;
  const typing = target && (target.tagName === "TEXTAREA" || target.tagName === "SELECT"
    || (target.tagName === "INPUT" && !["checkbox", "radio", "button", "submit"].includes(target.type)));
  if (typing) {
    if (ev.key === "Escape" && target.closest(".card")) { ev.preventDefault(); target.closest(".card").focus(); }
    return;
  }
  if (ev.key === "h") { ev.preventDefault(); show("history"); return; }
  if (ev.key === "i") { ev.preventDefault(); show("open"); return; }
  if ($("open").hidden) return;
  const here = currentCard();
  const click = (selector) => {
    const button = here && here.querySelector(selector);
    if (button && !button.disabled) { ev.preventDefault(); button.click(); }
  };
  if (ev.key === "j" || ev.key === "ArrowDown") { ev.preventDefault(); move(1); }
  else if (ev.key === "k" || ev.key === "ArrowUp") { ev.preventDefault(); move(-1); }
  else if (ev.key === "a") click("button.approve");
  else if (ev.key === "d") click("button.deny");
  else if (ev.key === "x" && here && !here.querySelector(".pick").hidden) {
    ev.preventDefault();
    const box = here.querySelector("input.select");
    box.checked = !box.checked;
    updateBulk();
  }
  else if (/^[1-9]$/.test(ev.key)) click(`button.option:nth-of-type(${ev.key})`);
  else if (ev.key === "c" && here) { ev.preventDefault(); here.querySelector("textarea[name=comment]").focus(); }
  else if (ev.key === "o" && here) { ev.preventDefault(); location.href = here.querySelector("a.follow").href; }
}

// -- history --------------------------------------------------------------------------------

async function loadHistory() {
  const f = filters();
  const rows = [];
  let cursor = null;
  for (let pages = 0; pages < 5; pages += 1) { // at most 500 decisions
    const params = { agent_id: f.agent_id, reason: f.reason, cursor };
    const page = await api("GET", `/v1/interrupts?${query(params, "all")}`);
    rows.push(...(page.interrupts || []).filter((i) => i.status !== "open").map(decision));
    cursor = page.next_cursor;
    if (!cursor) break;
  }
  rows.sort((a, b) => (a.decided_at < b.decided_at ? 1 : -1));
  historyRows = rows;
  renderHistory();
}

// One closed interrupt of the audit trail (A6) as a record: what was asked, the answer, who, when.
function decision(item) {
  const responder = item.responder || {};
  const answers = item.approvals || [];
  const payload = item.payload && typeof item.payload === "object" ? item.payload : {};
  const expired = item.status === "expired";
  const mixed = new Set(answers.map((a) => a.status)).size > 1;
  const by = expired ? [] : (answers.length ? answers.map((a) => (mixed ? `${a.subject} (${a.status})` : a.subject))
    : [responder.subject || responder.user || ""].filter(Boolean));
  const comments = answers.filter((a) => a.comment).map((a) => (answers.length > 1 ? `${a.subject}: ${a.comment}` : a.comment));
  if (!comments.length && item.comment) comments.push(item.comment);
  return {
    decided_at: item.resolved_at || "", status: item.status, answer: answerText(item),
    by: expired ? "expired (no one)" : by.join(", "), comment: comments.join(" | "),
    question: typeof payload.message === "string" ? payload.message : brief(item.payload),
    tool: item.action ? item.action.tool : "", arguments: item.action ? item.action.arguments : "",
    reason: item.reason || "", requester: item.requester || "", session_id: item.session_id,
    interrupt_id: item.interrupt_id, decision_secs: typeof item.decision_secs === "number" ? item.decision_secs : null,
    receipt: typeof item.receipt === "string" ? item.receipt : "",
    ...editRecord(item.edits || []),
  };
}

// A3: an edited action's audit: the arguments as raised and who edited them (the last editor's).
function editRecord(edits) {
  if (!edits.length) return { original_arguments: "", edited_by: "" };
  return { original_arguments: edits[0].original.arguments,
    edited_by: edits.map((e) => `${e.by.subject} ${e.at}`).join(" | ") };
}

function took(secs) {
  if (secs === null) return "";
  return secs < 60 ? `${secs.toFixed(1)} s` : span(secs);
}

function matches(row, words) {
  const hay = [row.answer, row.by, row.comment, row.question, row.tool, row.arguments, row.reason, row.requester,
    row.session_id, row.interrupt_id, row.status, localTime(row.decided_at, true)].join(" ").toLowerCase();
  return words.every((w) => hay.includes(w));
}

function visibleRows() {
  const words = $("history-search").value.toLowerCase().split(/\s+/).filter(Boolean);
  return historyRows.filter((r) => matches(r, words));
}

function renderHistory() {
  const rows = visibleRows();
  $("history-rows").replaceChildren(...rows.map((r) => {
    const what = el("td", { className: "what" });
    if (r.tool) what.append(el("code", { textContent: callText(r.tool, r.arguments) }), el("br"));
    what.append(el("span", { textContent: r.question }), " ",
      el("a", { href: `/inbox/session?id=${encodeURIComponent(r.session_id)}`, textContent: "session",
        ariaLabel: `session ${r.session_id}` }));
    const row = el("tr", { className: `decision ${r.status}${r.answer.startsWith("Denied") ? " denied" : ""}` },
      el("td", { className: "when" }, timeEl(r.decided_at, true)), what,
      el("td", { className: "answer-cell", textContent: r.answer }), el("td", { className: "by", textContent: r.by }),
      el("td", { className: "comment", textContent: r.comment }),
      el("td", { className: "took", textContent: took(r.decision_secs) }));
    row.dataset.interruptId = r.interrupt_id;
    return row;
  }));
  $("history-empty").hidden = rows.length > 0;
  $("history-empty").textContent = historyRows.length ? "No decision matches the search." : "No decisions yet.";
  $("history-count").textContent = `${rows.length} of ${historyRows.length} decisions`;
}

// The rows the search shows, downloaded as a file built here (a Blob and an <a download>).
function download(name, type, text) {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const link = el("a", { href: url, download: name, hidden: true });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

const CSV_COLUMNS = ["decided_at", "status", "answer", "by", "comment", "question", "tool", "arguments", "reason",
  "requester", "session_id", "interrupt_id", "decision_secs", "receipt", "original_arguments", "edited_by"];

// A cell a spreadsheet reads as text: one that starts with a formula's lead (= + - @, or TAB or
// CR, which some programs skip first) gets a leading apostrophe, then the CSV quoting.
function csvCell(value) {
  let text = value === null || value === undefined ? "" : String(value);
  if (/^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\r\n\t]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

function exportRows(kind) {
  const rows = visibleRows();
  if (kind === "json") download("holdpoint-decisions.json", "application/json", `${JSON.stringify(rows, null, 2)}\n`);
  else {
    const lines = [CSV_COLUMNS.join(","), ...rows.map((r) => CSV_COLUMNS.map((c) => csvCell(r[c])).join(","))];
    download("holdpoint-decisions.csv", "text/csv", `${lines.join("\r\n")}\r\n`);
  }
}

// -- tabs and start -------------------------------------------------------------------------

function show(tab) {
  for (const name of ["open", "history"]) {
    $(name).hidden = name !== tab;
    $(`tab-${name}`).setAttribute("aria-selected", String(name === tab));
  }
  refresh(true);
}

document.addEventListener("DOMContentLoaded", () => {
  if (document.body.dataset.page !== "inbox") return;
  Holdpoint.setRefused(signOut);
  $("sign-in").addEventListener("submit", (ev) => {
    ev.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, $("token").value.trim());
    $("token").value = "";
    signedIn();
  });
  $("sign-out").addEventListener("click", () => signOut(""));
  $("filters").addEventListener("submit", (ev) => { ev.preventDefault(); $("items").replaceChildren(); refresh(true); });
  $("bulk-select-all").addEventListener("click", () => selectAll(true));
  $("bulk-clear").addEventListener("click", () => selectAll(false));
  $("bulk-approve").addEventListener("click", () => answerSelected(true));
  $("bulk-deny").addEventListener("click", () => answerSelected(false));
  $("tab-open").addEventListener("click", () => show("open"));
  $("tab-history").addEventListener("click", () => show("history"));
  $("history-search").addEventListener("input", renderHistory);
  $("export-csv").addEventListener("click", () => exportRows("csv"));
  $("export-json").addEventListener("click", () => exportRows("json"));
  document.addEventListener("keydown", onKey);
  const params = new URLSearchParams(location.search);
  const tenant = params.get("tenant");
  offerProvider(tenant);
  if (params.has("code")) {
    finishSignIn(params).then((why) => (token() && !why ? signedIn() : signOut(why)));
    return;
  }
  if (token()) signedIn();
  else signOut("");
});
