// AG-UI's own client library against Holdpoint's AG-UI channel: a run that parks ends with an
// interrupt outcome, the next run's resume[] answers it and the run finishes, replaying that run
// is safe, and connect reports the thread. Every event body Holdpoint answers is parsed with
// @ag-ui/core's EventSchema. Prints one JSON report on stdout; tests/e2e/test_agui_e2e.py reads it.
//
//   HP_BASE=http://127.0.0.1:8787 HP_KEY=hp_dev_local_key HP_AGENT=assistant node roundtrip.mjs
import { randomUUID } from "node:crypto";
import { HttpAgent } from "@ag-ui/client";
import { EventSchema } from "@ag-ui/core/schemas";

const base = process.env.HP_BASE;
const headers = { Authorization: `Bearer ${process.env.HP_KEY}` };
const agentUrl = (what) => `${base}/v1/channels/ag-ui/agents/${process.env.HP_AGENT}/${what}`;
const report = { bodies: [], schemaErrors: [], runs: [] };

function parseBody(text) {
  const events = [];
  for (const block of text.split("\n\n")) {
    for (const line of block.split("\n")) {
      if (!line.startsWith("data:")) continue;
      const event = JSON.parse(line.slice(5).trim());
      const checked = EventSchema.safeParse(event);
      if (!checked.success) report.schemaErrors.push({ event, issues: checked.error.issues });
      events.push(event);
    }
  }
  return events;
}

// The client's fetch, recording every request body and answer the library sees.
async function recordingFetch(url, init) {
  const response = await fetch(url, init);
  const text = await response.clone().text();
  report.bodies.push({ url: String(url), request: JSON.parse(init.body), status: response.status,
                       types: parseBody(text).map((e) => e.type) });
  return response;
}

async function post(what, input) {
  const response = await fetch(agentUrl(what), {
    method: "POST", body: JSON.stringify(input),
    headers: { ...headers, "Content-Type": "application/json", Accept: "text/event-stream" },
  });
  const text = await response.text();
  return { status: response.status, contentType: response.headers.get("content-type"), events: parseBody(text) };
}

const agent = new HttpAgent({ url: agentUrl("run"), headers, threadId: randomUUID(), fetch: recordingFetch });
const finished = [];
agent.subscribe({ onRunFinishedEvent: ({ event }) => { finished.push(event); } });

// 1. A new thread: the model calls send_email, the worker interrupts, the run ends parked.
agent.addMessage({ id: randomUUID(), role: "user", content: "Email Bob that the report is ready" });
await agent.runAgent({ runId: randomUUID() });
const pending = agent.pendingInterrupts.map((i) => ({ ...i }));
report.runs.push({ outcome: finished.at(-1)?.outcome, pending, messages: agent.messages.length });

// 2. The next run answers every pending interrupt through resume[].
const resume = pending.map((i) => ({ interruptId: i.id, status: "resolved", payload: { approved: true } }));
await agent.runAgent({ runId: randomUUID(), resume });
report.runs.push({ outcome: finished.at(-1)?.outcome, pending: agent.pendingInterrupts.length,
                   last: agent.messages.at(-1) });

// 3. The same request again (a retry of run 2): a no-op resume, the run reports the finished turn.
const replayed = await post("run", report.bodies.at(-1).request);
// 4. connect follows the thread without input.
const connected = await post("connect", { threadId: agent.threadId, runId: randomUUID(), messages: [] });
report.replay = { status: replayed.status, contentType: replayed.contentType, types: replayed.events.map((e) => e.type),
                  outcome: replayed.events.at(-1)?.outcome };
report.connect = { status: connected.status, types: connected.events.map((e) => e.type),
                   outcome: connected.events.at(-1)?.outcome };
report.threadId = agent.threadId;
report.messages = agent.messages;
console.log(JSON.stringify(report));
