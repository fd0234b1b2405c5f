// An OpenAI Agents SDK agent (@openai/agents 0.20.0, Node 22) whose
// function tool is wrapped by requireApproval: its model is a fake OpenAI
// Responses API on loopback, Cairn a real `cairn serve`, and a person
// decides through Cairn's REST API. Run by clients/clients_test.go
// (TestOpenAIAgentsTool) with `node --test`.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { Agent, run, setTracingDisabled, tool } from "@openai/agents";
import { z } from "zod";
import { CairnRejected, Client } from "../dist/index.js";
import { startServer } from "./server.mjs";

setTracingDisabled(true);

// The fake model: asks for refund(order A-17, 120) until it sees the
// tool's output, then answers with that output.
let model;
function startModel() {
  const srv = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      assert.equal(req.url, "/v1/responses");
      const r = JSON.parse(body);
      const items = Array.isArray(r.input) ? r.input : [];
      const result = items.find((it) => it.type === "function_call_output");
      const output = result
        ? [{ type: "message", id: "msg_1", role: "assistant", status: "completed",
            content: [{ type: "output_text", text: `The tool said: ${typeof result.output === "string" ? result.output : JSON.stringify(result.output)}`, annotations: [] }] }]
        : [{ type: "function_call", id: "fc_1", call_id: "call_1", name: "refund", arguments: JSON.stringify({ order: "A-17", amount: 120 }), status: "completed" }];
      res.setHeader("Content-Type", "application/json");
      res.end(JSON.stringify({ id: "resp_1", object: "response", created_at: Math.floor(Date.now() / 1000), status: "completed", model: r.model,
        output, usage: { input_tokens: 10, output_tokens: 5, total_tokens: 15, input_tokens_details: { cached_tokens: 0 }, output_tokens_details: { reasoning_tokens: 0 } } }));
    });
  });
  return new Promise((ok) => srv.listen(0, "127.0.0.1", () => ok(srv)));
}

let server;
let cairn;
before(async () => {
  server = await startServer();
  cairn = new Client({ baseUrl: server.url });
  model = await startModel();
  process.env.OPENAI_BASE_URL = `http://127.0.0.1:${model.address().port}/v1`;
  process.env.OPENAI_API_KEY = "sk-test";
});
after(() => {
  server.stop();
  model.close();
});

function refundAgent(runs) {
  const refund = tool({
    name: "refund",
    description: "Refund an order.",
    parameters: z.object({ order: z.string(), amount: z.number() }),
    execute: cairn.requireApproval(
      async ({ order, amount }) => {
        runs.push({ order, amount });
        return `refunded ${amount} EUR on ${order}`;
      },
      { tool: "refund", message: (a) => `Refund ${a.amount} EUR on ${a.order}?` },
    ),
    // The SDK hides a tool's errors from the model by default; a
    // person's reason for a rejection is what the model should see.
    errorFunction: (_ctx, err) => (err instanceof CairnRejected ? err.message : "the tool failed"),
  });
  return new Agent({ name: "support", instructions: "Refund when asked.", model: "gpt-4o-mini", tools: [refund] });
}

// The person: waits for the request in Cairn's inbox, then decides.
async function decide(decision) {
  for (let i = 0; i < 400; i++) {
    for await (const p of cairn.pending({ kind: "approval" })) {
      if (p.tool === "refund") {
        assert.equal(p.message, "Refund 120 EUR on A-17?");
        return decision(p);
      }
    }
    await new Promise((ok) => setTimeout(ok, 50));
  }
  assert.fail("the refund never reached the inbox");
}

test("approved with an edit: the tool runs once, with the approved arguments", async () => {
  const runs = [];
  const [result] = await Promise.all([
    run(refundAgent(runs), "Please refund order A-17."),
    decide((p) => cairn.approve(p, { arguments: { order: "A-17", amount: 100 } })),
  ]);
  assert.deepEqual(runs, [{ order: "A-17", amount: 100 }]);
  assert.equal(result.finalOutput, "The tool said: refunded 100 EUR on A-17");
  // The request's record holds who approved and what the function returned.
  const [done] = (await cairn.listSessions({ agent: "approvals", status: "completed" })).sessions;
  const a = await cairn.getApproval(done.id);
  assert.deepEqual([a.status, a.edited, a.result?.output], ["approved", true, "refunded 100 EUR on A-17"]);
});

test("rejected: the tool never runs and the agent sees the reason", async () => {
  const runs = [];
  const [result] = await Promise.all([
    run(refundAgent(runs), "Please refund order A-17."),
    decide((p) => cairn.reject(p, "the order shipped already")),
  ]);
  assert.deepEqual(runs, []);
  // The wrapped function threw CairnRejected; the SDK told the model.
  assert.match(result.finalOutput, /refund was rejected: the order shipped already/);
  const [last] = (await cairn.listSessions({ agent: "approvals", status: "completed" })).sessions;
  const a = await cairn.getApproval(last.id);
  assert.deepEqual([a.status, a.reason, a.result], ["rejected", "the order shipped already", undefined]);
});
