// AG-UI's own client library over Holdpoint's WebSocket (docs/PROTOCOL.md "Live events",
// `format: "ag-ui"`): an AbstractAgent whose transport is a WebSocket subscription, so the
// library's own event verification and message assembly run over what Holdpoint sends. One
// `runAgent` follows one run of a thread (a session's turn) from the last seq it has. Prints one
// JSON report on stdout; tests/e2e/test_agui_live_e2e.py reads it.
//
//   HP_LIVE=ws://... HP_BASE=http://... HP_KEY=... HP_SESSION=<session id> \
//   HP_INPUTS='[null, {"type": "client.message", ...}]' HP_DROP_AFTER=3 node live.mjs
//
// HP_INPUTS: one entry a run; a non-null one is posted to the session once that run's
// subscription is answered (so the run is followed live). HP_DROP_AFTER: the socket is cut after
// that many events of the last run and the transport reconnects from the last seq it has.
import { AbstractAgent } from "@ag-ui/client";
import { EventSchema } from "@ag-ui/core/schemas";
import { Observable } from "rxjs";
import WebSocket from "ws";

const ENDS = new Set(["RUN_FINISHED", "RUN_ERROR"]);

class WebSocketAgent extends AbstractAgent {
  constructor({ url, token, threadId }) {
    super({ threadId });
    this.url = url;
    this.token = token;
    this.through = 0; // every seq up to it is delivered
    this.seen = new Set(); // `${seq}:${k}` positions delivered
    this.ended = new Set(); // messages whose TEXT_MESSAGE_END was delivered
    this.open = new Map(); // message id -> its text delivered so far (started, not ended)
    this.again = new Map(); // message id -> its text so far, as the log sends it again after a reconnect
    this.stats = { frames: 0, duplicates: 0, reconnects: 0, gaps: 0, repeatedMessages: 0, schemaErrors: [] };
    this.onSubscribed = null;
    this.dropAfter = null;
  }

  // What to hand on of an event (null: nothing). A message that comes again from the log after a
  // reconnect (docs/PROTOCOL.md "Token deltas") is the same text: one this client has whole is
  // dropped; one it has in part (the reconnect cut its deltas) goes on from where its text stopped,
  // then ends. A START in a delta frame (no positions) is a call streaming again (a retry): handed on.
  handOn(event, fromLog) {
    const id = event.messageId;
    if (!event.type.startsWith("TEXT_MESSAGE_")) return event;
    if (event.type === "TEXT_MESSAGE_START" && fromLog && (this.ended.has(id) || this.open.has(id))) {
      this.again.set(id, "");
      this.stats.repeatedMessages++;
      return null;
    }
    if (this.again.has(id)) return this.fromLogAgain(event, id);
    if (event.type === "TEXT_MESSAGE_START") this.open.set(id, "");
    else if (event.type === "TEXT_MESSAGE_CONTENT") this.open.set(id, (this.open.get(id) ?? "") + event.delta);
    else { this.open.delete(id); this.ended.add(id); }
    return event;
  }

  fromLogAgain(event, id) {
    if (event.type === "TEXT_MESSAGE_CONTENT") {
      const before = this.again.get(id);
      const text = before + event.delta;
      this.again.set(id, text);
      const had = this.open.get(id);
      if (had === undefined || text.length <= had.length) return null;
      this.open.set(id, text);
      return { ...event, delta: text.slice(Math.max(had.length, before.length)) };
    }
    this.again.delete(id); // TEXT_MESSAGE_END
    if (!this.open.has(id)) return null;
    this.open.delete(id);
    this.ended.add(id);
    return event;
  }

  run(input) {
    return new Observable((subscriber) => {
      let ws = null;
      let filling = true;
      let held = [];
      let delivered = 0;
      let done = false;

      const subscribe = () => {
        filling = true;
        ws.send(JSON.stringify({ action: "subscribe", session_ids: [input.threadId], after_seq: this.through,
                                 format: "ag-ui" }));
      };
      const deliver = (frame) => {
        const positions = frame.positions;
        for (let i = 0; i < frame.events.length && !done; i++) {
          if (positions) {
            const key = `${positions[i][0]}:${positions[i][1]}`;
            if (this.seen.has(key)) { this.stats.duplicates++; continue; }
            this.seen.add(key);
          }
          const event = this.handOn(frame.events[i], Boolean(positions));
          if (event === null) continue;
          const checked = EventSchema.safeParse(event);
          if (!checked.success) this.stats.schemaErrors.push({ event, issues: checked.error.issues });
          subscriber.next(event);
          delivered++;
          if (ENDS.has(event.type)) {
            done = true;
            if (positions) this.through = Math.max(this.through, positions[i][0] - 1);
          }
          if (this.dropAfter !== null && delivered === this.dropAfter && !done) {
            this.dropAfter = null;
            ws.terminate(); // the connection is gone; `close` reconnects
            return false;
          }
        }
        if (!done && frame.through_seq !== undefined) this.through = Math.max(this.through, frame.through_seq);
        return true;
      };
      const onFrame = (frame) => {
        this.stats.frames++;
        if (frame.type === "error") { subscriber.error(new Error(JSON.stringify(frame.error))); return; }
        if (frame.type === "subscribed") {
          // What came during the catch-up, in log order (a live post can overtake the catch-up),
          // deltas last; only then is the catch-up's `through_seq` taken.
          filling = false;
          const order = (f) => (f.after_seq === undefined ? Infinity : f.after_seq);
          const waiting = held.sort((a, b) => order(a) - order(b));
          held = [];
          for (const f of waiting) if (!accept(f)) return;
          if (!filling && !done) this.through = Math.max(this.through, frame.through_seq);
          if (frame.has_more && !filling && !done) subscribe(); // one page per subscribe: the next from `through`
          if (this.onSubscribed) { const hook = this.onSubscribed; this.onSubscribed = null; hook(); }
        } else if (frame.type === "ag-ui") {
          accept(frame);
        }
        if (done) finish();
      };
      const accept = (frame) => {
        if (filling) { held.push(frame); return true; }
        if (frame.after_seq !== undefined && frame.after_seq > this.through) { // a gap: the log fills it
          this.stats.gaps++;
          held.push(frame);
          subscribe();
          return true;
        }
        return deliver(frame);
      };
      const finish = () => {
        if (ws) { ws.removeAllListeners("close"); ws.close(); }
        subscriber.complete();
      };
      const open = () => {
        ws = new WebSocket(this.url, { headers: { Authorization: `Bearer ${this.token}` } });
        ws.on("open", subscribe);
        ws.on("message", (raw) => onFrame(JSON.parse(String(raw))));
        ws.on("error", () => {});
        ws.on("close", () => {
          if (done) return;
          this.stats.reconnects++;
          held = [];
          open();
        });
      };
      open();
      return () => { if (ws && !done) { ws.removeAllListeners("close"); ws.terminate(); } };
    });
  }
}

const base = process.env.HP_BASE;
const token = process.env.HP_KEY;
const inputs = JSON.parse(process.env.HP_INPUTS || "[null]");
const agent = new WebSocketAgent({ url: process.env.HP_LIVE, token, threadId: process.env.HP_SESSION });
const report = { runs: [], textMessages: [], errors: [] };
let current = null;
agent.subscribe({
  onEvent: ({ event }) => {
    current.types.push(event.type);
    if (event.type.startsWith("TEXT_MESSAGE_")) report.textMessages.push(event);
  },
  onRunFinishedEvent: ({ event }) => { current.outcome = event.outcome?.type ?? "success"; },
});

for (const [index, input] of inputs.entries()) {
  current = { types: [], outcome: null };
  report.runs.push(current);
  if (input) {
    agent.onSubscribed = () => {
      fetch(`${base}/v1/sessions/${agent.threadId}/inputs`, {
        method: "POST", body: JSON.stringify(input),
        headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
      }).then((r) => { if (r.status >= 300) report.errors.push(`input ${index}: ${r.status}`); });
    };
  }
  if (index === inputs.length - 1 && process.env.HP_DROP_AFTER) agent.dropAfter = Number(process.env.HP_DROP_AFTER);
  try {
    await agent.runAgent({ runId: `follow-${index}` });
  } catch (error) {
    report.errors.push(String(error && error.message ? error.message : error));
    break;
  }
  current.pending = agent.pendingInterrupts.map((i) => i.id);
}
report.stats = agent.stats;
report.messages = agent.messages;
console.log(JSON.stringify(report));
process.exit(0);
