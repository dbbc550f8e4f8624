// A session followed live over the WebSocket API (docs/PROTOCOL.md "Live events"): the log from
// the last seq this page has, then each committed event as it is committed, once and in order
// (by seq: a repeat is dropped, a gap is filled by subscribing again from the last seq). A `delta`
// frame grows the text of the message being generated; the committed message replaces it. After
// a reconnect the page subscribes again from its last seq, so it loses nothing and repeats nothing.
// Everything is rendered as text (textContent), never as markup.
"use strict";

const TOKEN_KEY = "holdpoint.token";
const KEEPALIVE_MS = 300000; // under API Gateway's 10-minute idle timeout
const RETRY_MS = [250, 1000, 3000];

const $ = (id) => document.getElementById(id);
const sid = new URLSearchParams(location.search).get("id") || "";
const token = () => sessionStorage.getItem(TOKEN_KEY) || "";
const page = { last: 0, early: new Map(), filling: false, ws: null, reconnects: 0, liveUrl: null, shown: new Set(),
               callOf: new Map(), committedCalls: new Set() };

function el(tag, props, ...children) {
  const node = document.createElement(tag);
  Object.assign(node, props || {});
  for (const child of children) node.append(child);
  return node;
}

function status(text) {
  $("live").textContent = text;
  document.body.dataset.reconnects = String(page.reconnects);
}

// -- committed events -----------------------------------------------------------------------

function renderEvent(event) {
  const item = el("li", { className: "event" }, el("code", { textContent: String(event.seq) }), ` ${event.type}`);
  item.dataset.seq = String(event.seq);
  $("events").append(item);
}

async function showMessages() {
  const resp = await fetch(`/v1/sessions/${encodeURIComponent(sid)}`, { headers: { Authorization: `Bearer ${token()}` } });
  if (!resp.ok) return;
  const view = await resp.json();
  for (const message of view.messages || []) {
    if (page.shown.has(message.id)) continue;
    page.shown.add(message.id);
    const content = typeof message.content === "string" ? message.content : JSON.stringify(message.content ?? "");
    const calls = (message.tool_calls || []).map((c) => ` → ${c.function.name}(${c.function.arguments || ""})`).join("");
    const node = el("div", { className: `turn ${message.role}` }, el("b", { textContent: `${message.role}: ` }),
      el("span", { className: "text", textContent: content + calls }));
    node.dataset.messageId = message.id;
    const call = page.callOf.get(message.id);
    const draft = call && document.querySelector(`.draft[data-call-id="${CSS.escape(call)}"]`);
    if (draft) draft.replaceWith(node); else $("messages").append(node);
  }
}

function deliver(event) {
  renderEvent(event);
  const data = event.data || {};
  if (event.type === "message.added" && data.call_id) { // an LLM call's message: it replaces the call's draft
    page.callOf.set(data.message_id, data.call_id);
    page.committedCalls.add(data.call_id);
  }
  return event.type === "message.added" || event.type === "call.settled";
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
  if (messages) showMessages();
}

// -- deltas: the message being generated ------------------------------------------------------

function draftOf(frame) {
  let node = document.querySelector(`.draft[data-call-id="${CSS.escape(frame.call_id)}"]`);
  if (!node) {
    node = el("div", { className: "turn assistant draft" }, el("b", { textContent: "assistant: " }),
      el("span", { className: "text" }));
    node.dataset.callId = frame.call_id;
    node.dataset.next = "0";
    $("messages").append(node);
  }
  return node;
}

function onDelta(frame) {
  if (page.committedCalls.has(frame.call_id)) return; // its committed message is here already
  const node = draftOf(frame);
  if (frame.type === "delta_end") {
    if (frame.reason !== "finished") { node.classList.add("stopped"); node.dataset.reason = frame.reason; }
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

async function start() {
  $("sign-in").hidden = true;
  $("app").hidden = false;
  $("session-id").textContent = sid;
  const config = await (await fetch("/inbox/live.json")).json();
  if (!config.url) { status("live events are not configured on this deployment"); return; }
  page.liveUrl = config.url;
  connect(0);
  setInterval(subscribe, KEEPALIVE_MS);
}

document.addEventListener("DOMContentLoaded", () => {
  $("sign-in").addEventListener("submit", (ev) => {
    ev.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, $("token").value.trim());
    $("token").value = "";
    start();
  });
  if (token()) start(); else $("sign-in").hidden = false;
});
