// A session followed live over the WebSocket API (docs/PROTOCOL.md "Live events"): the log from
// the last seq this page has, then each committed event as it is committed, once and in order
// (by seq: a repeat is dropped, a gap is filled by subscribing again from the last seq). A `delta`
// frame grows the text of the message being generated; the committed message replaces it. After
// a reconnect the page subscribes again from its last seq, so it loses nothing and repeats nothing.
// The session view (read again whenever events arrive) gives the status, why a running session
// waits (`retrying`), and a banner for each open interrupt, answered in place with the same form
// and checks as the inbox (/inbox/app.js, loaded first, holds them). Without a WebSocket API the
// page reads the log with `GET .../events` instead. Everything is rendered as text (textContent).
"use strict";

const KEEPALIVE_MS = 300000; // under API Gateway's 10-minute idle timeout
const RETRY_MS = [250, 1000, 3000];
const POLL_MS = 2000;

const H = window.Holdpoint;
const sid = new URLSearchParams(location.search).get("id") || "";
const page = { last: 0, early: new Map(), filling: false, ws: null, reconnects: 0, liveUrl: null, shown: new Set(),
               callOf: new Map(), committedCalls: new Set(), added: new Set(), viewTimer: null, viewBusy: false, viewAgain: false,
               agent: null, decisionsWanted: true };

function status(text) {
  H.$("live").textContent = text;
  document.body.dataset.reconnects = String(page.reconnects);
}

// -- committed events -----------------------------------------------------------------------

// One line saying what an event did: who resumed, which tool, the error.
function detail(event) {
  const d = event.data || {};
  const who = (r) => (r && r.subject ? `${H.principal(r.subject)}${r.origin ? ` (${r.origin})` : ""}` : "someone");
  switch (event.type) {
    case "session.created": return d.agent_id ? `agent ${d.agent_id}` : "";
    case "message.added": return d.role || "";
    case "turn.failed": return `error: ${H.brief(d.error)}`;
    case "decision.delivered": case "decision.deferred": return d.trigger ? `for ${d.trigger}` : "";
    case "decision.retry": return `attempt ${d.attempt} failed: ${H.brief(d.error)}; again in ${d.delay_secs} s`;
    case "decision.failed": return `error: ${H.brief(d.error)}`;
    case "call.started": return d.kind === "tool_call" ? `tool ${d.name || ""}` : (d.kind || "");
    case "call.settled": return `${d.kind === "tool_call" ? "tool" : (d.kind || "")} ${d.ok === false ? `failed: ${H.brief(d.error)}` : "done"}`;
    case "call.retry": return `attempt ${d.attempt}: ${H.brief(d.error || d.reason)}`;
    case "session.interrupted": return `${d.reason || ""}: ${H.brief(d.payload && d.payload.message ? d.payload.message : d.payload, 100)}`;
    case "session.interrupt_resumed": {
      const answer = H.answerText({ verdict: d.verdict, resolution: d.payload, status: d.expired ? "expired" : "resolved" });
      return d.expired ? answer : `${answer} by ${who(d.responder)}`;
    }
    case "interrupt.reminded": return `reminder ${d.reminder}`;
    case "interrupt.escalated": return "escalated";
    case "interrupt.expired": return d.outcome ? `outcome ${d.outcome}` : "";
    default: return "";
  }
}

function renderEvent(event) {
  const failed = /failed|retry/.test(event.type) || (event.type === "call.settled" && event.data && event.data.ok === false);
  const item = el("li", { className: `event${failed ? " failed" : ""}` }, el("code", { textContent: String(event.seq) }),
    event.at ? H.timeEl(event.at) : "", el("span", { className: "etype", textContent: event.type }),
    el("span", { className: "detail", textContent: detail(event) }));
  item.dataset.seq = String(event.seq);
  item.dataset.type = event.type;
  H.$("events").append(item);
}

// -- the view: status, retrying, banners, messages --------------------------------------------

function viewSoon() {
  clearTimeout(page.viewTimer);
  page.viewTimer = setTimeout(loadView, 100);
}

async function loadView() {
  if (page.viewBusy) { page.viewAgain = true; return; }
  page.viewBusy = true;
  try {
    const view = await api("GET", `/v1/sessions/${encodeURIComponent(sid)}`);
    page.agent = view.agent_id;
    renderView(view);
    if (page.decisionsWanted) { page.decisionsWanted = false; await loadDecisions(); }
    page.viewFailures = 0;
  } catch (err) {
    status(`could not read the session: ${err.code}: ${err.message}`);
    // read it again (1, 2, 4 s... at most 30 s apart): a draft waits on this read to be replaced
    page.viewFailures = (page.viewFailures || 0) + 1;
    clearTimeout(page.viewTimer);
    page.viewTimer = setTimeout(loadView, Math.min(30000, 1000 * 2 ** (page.viewFailures - 1)));
  } finally {
    page.viewBusy = false;
    if (page.viewAgain) { page.viewAgain = false; viewSoon(); }
  }
}

function renderView(view) {
  const pill = H.$("session-status");
  pill.textContent = view.status;
  pill.dataset.status = view.status;
  const retry = H.$("retrying");
  const r = view.retrying;
  retry.hidden = !r;
  retry.textContent = r ? `retrying: ${r.reason} (attempt ${r.attempt}${r.next_at ? `, next at ${H.localTime(r.next_at)}` : ""})` : "";
  renderBanners(view.interrupts || []);
  showMessages(view);
}

function renderBanners(interrupts) {
  const box = H.$("banners");
  const open = new Set();
  for (const interrupt of interrupts) {
    const item = { ...interrupt, session_id: sid };
    open.add(item.interrupt_id);
    let node = box.querySelector(`[data-interrupt-id="${CSS.escape(item.interrupt_id)}"]`);
    if (!node) node = banner(item);
    node.querySelector(".progress").textContent = H.quorumText(item);
    readOnly(node, item);
    const sig = JSON.stringify(item.approvals || []);
    const list = node.querySelector(".answers");
    if (list.dataset.sig !== sig) { list.dataset.sig = sig; list.replaceChildren(...H.answerItems(item.approvals)); }
  }
  for (const node of Array.from(box.children)) if (!open.has(node.dataset.interruptId)) node.remove();
  H.tick();
}

function banner(item) {
  const payload = item.payload && typeof item.payload === "object" ? item.payload : {};
  const question = typeof payload.message === "string" ? payload.message
    : (item.action ? `Run ${item.action.tool}?` : H.brief(item.payload) || item.reason);
  const node = el("article", { className: "banner", ariaLabel: `Waiting for approval: ${question}` });
  node.dataset.interruptId = item.interrupt_id;
  node.dataset.card = "";
  const countdown = el("span", { className: "countdown" });
  if (item.expires_at) { countdown.dataset.expires = item.expires_at; countdown.dataset.outcome = item.on_expiry || "cancel"; }
  const heading = el("span", { className: "asked-text" });
  const more = el("div", { className: "question-more", hidden: true });
  H.renderQuestion(heading, more, item, question);
  node.append(el("h2", { className: "question" }, "Waiting for approval: ", heading), more,
    el("p", { className: "times" }, `asked by ${H.principal(item.requester)} at `, H.timeEl(item.created_at), " ", countdown));
  if (item.action) {
    node.append(el("p", { className: "call" }, "Action: ",
      el("code", { className: "tool-call", textContent: H.callText(item.action.tool, item.action.arguments) })),
    el("details", { className: "fingerprint-box" }, el("summary", { textContent: "Fingerprint" }),
      el("code", { className: "fingerprint", textContent: item.action.fingerprint || "" })));
  }
  node.append(el("p", { className: "who", textContent: H.policyText(item.policy, item.requester) }),
    el("p", { className: "progress" }), el("ul", { className: "answers" }),
    el("p", { className: "mine", role: "status" }), el("p", { className: "readonly", hidden: true }));
  node.append(H.answerForm(item, (result) => {
    node.querySelector(".mine").textContent = H.resultText(result);
    if (result.status !== "open") node.dataset.state = "answered";
    viewSoon();
  }));
  H.$("banners").append(node);
  return node;
}

// As on the inbox's cards: no answer form for a person the server says may not answer (or has).
function readOnly(node, item) {
  const text = H.readOnlyText(item);
  const line = node.querySelector(".readonly");
  line.textContent = text;
  line.hidden = !text;
  node.dataset.readonly = text ? "true" : "false";
  node.querySelector("form.answer").hidden = Boolean(text);
}

// Who decided each closed interrupt of this session, when, with which comment: the audit query
// (A6), read again when an interrupt is resumed.
async function loadDecisions() {
  const rows = [];
  let cursor = null;
  for (let pages = 0; pages < 5; pages += 1) {
    const q = new URLSearchParams({ status: "all", limit: "100" });
    if (page.agent) q.set("agent_id", page.agent);
    if (cursor) q.set("cursor", cursor);
    const listed = await api("GET", `/v1/interrupts?${q}`);
    rows.push(...(listed.interrupts || []).filter((i) => i.session_id === sid && i.status !== "open"));
    cursor = listed.next_cursor;
    if (!cursor) break;
  }
  rows.sort((a, b) => (a.resolved_at < b.resolved_at ? -1 : 1));
  H.$("decisions-box").hidden = rows.length === 0;
  H.$("decisions").replaceChildren(...rows.map((i) => {
    const payload = i.payload && typeof i.payload === "object" ? i.payload : {};
    const answers = i.approvals || [];
    const who = i.status === "expired" ? "expired" : `by ${(answers.length ? answers.map((a) => a.subject)
      : [(i.responder || {}).subject]).filter(Boolean).map(H.principal).join(", ")}`;
    const comments = answers.filter((a) => a.comment).map((a) => `${a.subject}: ${a.comment}`);
    if (!comments.length && i.comment) comments.push(i.comment);
    const node = el("li", { className: `decision ${i.status}` },
      el("b", { className: "verdict", textContent: H.answerText(i) }), " ",
      el("span", { className: "asked", textContent: typeof payload.message === "string" ? payload.message : i.reason }),
      ` ${who} at `, H.timeEl(i.resolved_at),
      comments.length ? " " : "", comments.length ? el("q", { className: "comment", textContent: comments.join(" | ") }) : "");
    node.dataset.interruptId = i.interrupt_id;
    return node;
  }));
}

function showMessages(view) {
  for (const message of view.messages || []) {
    if (page.shown.has(message.id)) continue;
    // While a reply streams, an assistant message waits for its `message.added` event, which names
    // the call whose draft it replaces (the view can be read before that event arrives).
    if (message.role === "assistant" && !page.added.has(message.id) && H.$("messages").querySelector(".draft")) break;
    page.shown.add(message.id);
    const text = H.messageText(message);
    const node = el("div", { className: `turn ${message.role}` }, el("b", { textContent: `${H.roleName(message)}: ` }),
      el("span", { className: text === "(no text)" ? "text empty-text" : "text", textContent: text }));
    node.dataset.messageId = message.id;
    const call = page.callOf.get(message.id);
    const draft = call && document.querySelector(`.draft[data-call-id="${CSS.escape(call)}"]`);
    const pending = H.$("messages").querySelector(".draft"); // a draft is newer than any committed message
    if (draft) draft.replaceWith(node); else if (pending) pending.before(node); else H.$("messages").append(node);
  }
}

function deliver(event) {
  renderEvent(event);
  const data = event.data || {};
  if (event.type === "message.added") page.added.add(data.message_id);
  if (event.type === "message.added" && data.call_id) { // an LLM call's message: it replaces the call's draft
    page.callOf.set(data.message_id, data.call_id);
    page.committedCalls.add(data.call_id);
  }
  // a decision's answer reached the worker (its `delivery`): read who decided what again
  if (event.type === "session.interrupt_resumed" || (event.type === "decision.delivered"
      && (event.data || {}).trigger === "interrupt.resumed")) page.decisionsWanted = true;
  return true;
}

function onEvents(frame) {
  let messages = false;
  for (const event of frame.events) {
    if (event.seq > page.last && !page.early.has(event.seq)) page.early.set(event.seq, event);
  }
  while (page.early.has(page.last + 1)) {
    page.last += 1;
    messages = deliver(page.early.get(page.last)) || messages;
    page.early.delete(page.last);
  }
  if (page.early.size && !page.filling) subscribe(); // a gap: the log fills it
  if (messages) viewSoon();
}

// -- deltas: the message being generated ------------------------------------------------------

function draftOf(frame) {
  let node = document.querySelector(`.draft[data-call-id="${CSS.escape(frame.call_id)}"]`);
  if (!node) {
    node = el("div", { className: "turn assistant draft" }, el("b", { textContent: "assistant: " }),
      el("span", { className: "text" }));
    node.dataset.callId = frame.call_id;
    node.dataset.next = "0";
    H.$("messages").append(node);
  }
  return node;
}

// A finished stream's message is committed right after it; if its events have not replaced the
// draft by then (a frame lost, a read refused), the log is read again from the last event seen.
const DRAFT_SETTLE_MS = 3000;

function settleDraft(call) {
  if (!document.querySelector(`.draft[data-call-id="${CSS.escape(call)}"]`)) return;
  subscribe();
  viewSoon();
}

function onDelta(frame) {
  if (page.committedCalls.has(frame.call_id)) return; // its committed message is here already
  const node = draftOf(frame);
  if (frame.type === "delta_end") {
    if (frame.reason !== "finished") { node.classList.add("stopped"); node.dataset.reason = frame.reason; }
    else setTimeout(() => settleDraft(frame.call_id), DRAFT_SETTLE_MS);
    return;
  }
  if (frame.index === 0) { // the call streams (again, after a failed attempt): a fresh draft
    node.querySelector(".text").textContent = "";
    node.dataset.next = "0";
    node.classList.remove("stopped");
  }
  if (frame.index !== Number(node.dataset.next)) return; // the deltas come in order; a repeat adds nothing
  node.dataset.next = String(frame.index + 1);
  node.querySelector(".text").textContent += frame.text;
}

// -- the connection -------------------------------------------------------------------------

function subscribe() {
  if (!page.ws || page.ws.readyState !== WebSocket.OPEN) return;
  page.filling = true;
  page.ws.send(JSON.stringify({ action: "subscribe", session_ids: [sid], after_seq: page.last }));
}

function onFrame(frame) {
  if (frame.type === "events") onEvents(frame);
  else if (frame.type === "delta" || frame.type === "delta_end") onDelta(frame);
  else if (frame.type === "subscribed") {
    page.filling = false;
    status(page.reconnects ? `live (reconnected ${page.reconnects}×)` : "live");
    if (frame.has_more || page.early.size) subscribe();
  } else if (frame.type === "error") status(`error: ${frame.error.message}`);
}

function connect(attempt) {
  const ws = new WebSocket(`${page.liveUrl}?token=${encodeURIComponent(token())}`);
  page.ws = ws;
  ws.onopen = () => { attempt = 0; subscribe(); };
  ws.onmessage = (msg) => { try { onFrame(JSON.parse(msg.data)); } catch (e) { status(`bad frame: ${e}`); } };
  ws.onclose = () => {
    if (page.ws !== ws) return;
    page.reconnects += 1;
    status("reconnecting");
    setTimeout(() => connect(attempt + 1), RETRY_MS[Math.min(attempt, RETRY_MS.length - 1)]);
  };
}

// Without a WebSocket API: the log read with GET .../events from the last seq, every 2 s.
async function poll() {
  try {
    const got = await api("GET", `/v1/sessions/${encodeURIComponent(sid)}/events?after_seq=${page.last}&limit=200`);
    if (got.events.length) onEvents({ events: got.events });
  } catch (err) {
    status(`could not read events: ${err.code}`);
  }
}

async function start() {
  H.$("sign-in").hidden = true;
  H.$("app").hidden = false;
  H.$("session-id").textContent = sid;
  H.setRefused(() => { H.$("app").hidden = true; H.$("sign-in").hidden = false; });
  setInterval(H.tick, 1000);
  loadView();
  const config = await (await fetch("/inbox/live.json")).json();
  if (!config.url) {
    status("live events are not configured on this deployment: reading the log every 2 s");
    poll();
    setInterval(poll, POLL_MS);
    return;
  }
  page.liveUrl = config.url;
  connect(0);
  setInterval(subscribe, KEEPALIVE_MS);
}

document.addEventListener("DOMContentLoaded", () => {
  H.$("sign-in").addEventListener("submit", (ev) => {
    ev.preventDefault();
    sessionStorage.setItem(H.TOKEN_KEY, H.$("token").value.trim());
    H.$("token").value = "";
    start();
  });
  if (sessionStorage.getItem(H.TOKEN_KEY)) start(); else H.$("sign-in").hidden = false;
});
