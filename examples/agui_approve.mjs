// Holdpoint's AG-UI channel from AG-UI's own client (`@ag-ui/client`'s HttpAgent, unchanged): the
// first run parks on the agent's approval, the next run approves it through `resume[]`, and the
// agent's last message is printed ("Email sent." with the seed worker).
//
//   npm ci --prefix examples
//   node examples/agui_approve.mjs        # HOLDPOINT_URL and HOLDPOINT_API_KEY: make serve's (.holdpoint/local.env)
import { randomUUID } from "node:crypto";
import { HttpAgent } from "@ag-ui/client";

const api = process.env.HOLDPOINT_URL || "http://127.0.0.1:8787";
const headers = { Authorization: `Bearer ${process.env.HOLDPOINT_API_KEY || "hp_dev_local_key"}` };
const agent = new HttpAgent({ url: `${api}/v1/channels/ag-ui/agents/assistant/run`, headers });

agent.addMessage({ id: randomUUID(), role: "user", content: "Email Bob that the report is ready" });
await agent.runAgent();                       // ends parked: agent.pendingInterrupts = [{id, reason, ...}]
for (const asked of agent.pendingInterrupts) console.log(`asked: ${asked.message ?? asked.reason}`);
await agent.runAgent({                        // the person's answer, as every channel gives it
  resume: agent.pendingInterrupts.map((i) => ({ interruptId: i.id, status: "resolved", payload: { approved: true } })),
});
console.log(agent.messages.at(-1).content);   // "Email sent."
