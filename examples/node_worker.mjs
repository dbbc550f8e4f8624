// The seed's `decide` as a plain Node HTTP worker: standard library only (`http`, `crypto`), no npm install.
//
//   PORT=9002 HOLDPOINT_WORKER_SECRET=... node examples/node_worker.mjs
//
// PORT=0 picks a free port. The first line on stdout is always `listening on <port>`, so a script or
// test can read the port; everything else goes to stderr. HOST defaults to 127.0.0.1.
//
// Every decision request is verified before it is read: `X-Holdpoint-Signature` must be
// `sha256=` + hex HMAC-SHA256(secret, `${X-Holdpoint-Timestamp}.${raw body}`), compared in constant
// time, and the timestamp must be within five minutes of this machine's clock; anything else is 401.
// Without HOLDPOINT_WORKER_SECRET the worker refuses to start unless HOLDPOINT_WORKER_INSECURE=1.

import { createHmac, timingSafeEqual } from "node:crypto";
import { createServer } from "node:http";

const MAX_SKEW_SECONDS = 300;
const MAX_BODY_BYTES = 6 * 1024 * 1024;

// The seed (docs: interrupts), line for line: pause before a sensitive action, then act on the answer.
function seedDecide({ trigger, proposed }) {
    if (trigger.type === "tool.execute" && trigger.name === "send_email") {
        return { actions: [{ type: "interrupt", reason: "confirm", payload: { message: "Send the email?" } }] };
    }

    if (trigger.type === "interrupt.resumed") {
        return trigger.payload?.approved
            ? { actions: [{ type: "tool.result", result: "sent" }] }
            : { actions: [{ type: "tool.error", error: "declined" }] };
    }

    return proposed;
}

// The seed plus a decision counter kept in the worker state, which the engine stores verbatim and
// sends back on the next decision: the count only grows if the state really round-trips.
function decide({ trigger, proposed, state }) {
    const previous = state !== null && typeof state === "object" && !Array.isArray(state) ? state : {};
    const decisions = (Number.isSafeInteger(previous.decisions) ? previous.decisions : 0) + 1;
    const answer = seedDecide({ trigger, proposed: proposed ?? null });
    // A `null` proposal echoed as `null` lets the engine continue on its own (PROTOCOL.md §2.4).
    return answer === null ? null : { ...answer, state: { ...previous, decisions } };
}

function signatureOk(secret, timestamp, body, signature) {
    if (typeof timestamp !== "string" || !/^\d{1,12}$/.test(timestamp)) return false;
    if (Math.abs(Date.now() / 1000 - Number(timestamp)) > MAX_SKEW_SECONDS) return false;
    if (typeof signature !== "string") return false;
    const mac = createHmac("sha256", secret).update(`${timestamp}.`).update(body).digest("hex");
    const expected = Buffer.from(`sha256=${mac}`);
    const given = Buffer.from(signature);
    // timingSafeEqual throws on different lengths; a length mismatch is a plain failure.
    return given.length === expected.length && timingSafeEqual(given, expected);
}

function reply(res, status, payload) {
    const body = JSON.stringify(payload);
    res.writeHead(status, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(body) });
    res.end(body);
}

function handler(secret) {
    return (req, res) => {
        if (req.method !== "POST") {
            res.setHeader("Allow", "POST");
            return reply(res, 405, { error: "method not allowed" });
        }
        const chunks = [];
        let size = 0;
        let tooLarge = false;
        req.on("data", (chunk) => {
            size += chunk.length;
            if (size > MAX_BODY_BYTES) tooLarge = true;
            else chunks.push(chunk);
        });
        req.on("error", () => res.destroy());
        req.on("end", () => {
            if (tooLarge) return reply(res, 413, { error: "body too large" });
            const body = Buffer.concat(chunks);
            if (secret && !signatureOk(secret, req.headers["x-holdpoint-timestamp"], body,
                                       req.headers["x-holdpoint-signature"])) {
                return reply(res, 401, { error: "bad signature" });
            }
            let request;
            try {
                request = JSON.parse(body.toString("utf8"));
            } catch {
                return reply(res, 400, { error: "body is not JSON" });
            }
            if (request === null || typeof request !== "object" || typeof request.trigger?.type !== "string") {
                return reply(res, 400, { error: "not a decision request" });
            }
            try {
                const answer = decide({ trigger: request.trigger, proposed: request.proposed, state: request.state });
                console.error(`${request.session_id ?? "-"} ${request.trigger.type} -> ` +
                              `${(answer?.actions ?? []).map((a) => a.type).join(",") || "(proposal)"}`);
                return reply(res, 200, answer);
            } catch (err) {
                console.error(`decide failed: ${err?.stack ?? err}`);
                return reply(res, 500, { error: "decide failed" });
            }
        });
    };
}

const secret = process.env.HOLDPOINT_WORKER_SECRET || "";
if (!secret && process.env.HOLDPOINT_WORKER_INSECURE !== "1") {
    console.error("HOLDPOINT_WORKER_SECRET is not set (set HOLDPOINT_WORKER_INSECURE=1 to accept unsigned requests)");
    process.exit(2);
}
const port = Number(process.env.PORT ?? 9002);
const host = process.env.HOST || "127.0.0.1";
const server = createServer(handler(secret));
server.listen(port, host, () => {
    console.log(`listening on ${server.address().port}`);
});
for (const signal of ["SIGINT", "SIGTERM"]) {
    process.on(signal, () => {
        server.close(() => process.exit(0));
        server.closeAllConnections?.();
    });
}
