// requireApproval and the approval requests against a real `cairn serve`.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { CairnError, CairnRejected, Client, requireApproval } from "../dist/index.js";
import { startServer } from "./server.mjs";

let server;
let cairn;
before(async () => {
  server = await startServer();
  cairn = new Client({ baseUrl: server.url });
});
after(() => server.stop());

async function waiting(tool) {
  for (let i = 0; i < 400; i++) {
    for await (const p of cairn.pending({ kind: "approval" })) if (p.tool === tool) return p;
    await new Promise((ok) => setTimeout(ok, 50));
  }
  assert.fail(`no pending approval of ${tool}`);
}

test("a restarted caller finds its request, and never runs the function twice", async () => {
  const tool = "pay_" + randomUUID().slice(0, 8);
  const key = "invoice-" + randomUUID().slice(0, 8);
  // The first process asked, then stopped while the request was pending.
  const first = await cairn.requestApproval(tool, { invoice: "I-9" }, { idempotencyKey: key });
  assert.equal(first.status, "pending");
  const runs = [];
  const pay = requireApproval(async ({ invoice }) => {
    runs.push(invoice);
    return { paid: invoice };
  }, { client: cairn, tool, idempotencyKey: () => key });
  const [value, p] = await Promise.all([pay({ invoice: "I-9" }), waiting(tool).then((p) => cairn.approve(p).then(() => p))]);
  assert.equal(p.session_id, first.id);
  assert.deepEqual(value, { paid: "I-9" });
  assert.deepEqual(await pay({ invoice: "I-9" }), { paid: "I-9" }); // restarted again: the recorded result
  assert.deepEqual(runs, ["I-9"]);
  // The same key for another call is refused: a key names one request.
  const err = await pay({ invoice: "I-10" }).catch((e) => e);
  assert.ok(err instanceof CairnError && err.status === 409, String(err));
});

test("a rejection rejects with CairnRejected; a thrown error is recorded", async () => {
  const tool = "drop_" + randomUUID().slice(0, 8);
  const drop = cairn.requireApproval(async () => {
    throw new RangeError("no such table");
  }, { tool });
  const [err] = await Promise.all([drop({ table: "users" }).catch((e) => e), waiting(tool).then((p) => cairn.reject(p, "not today"))]);
  assert.ok(err instanceof CairnRejected);
  assert.deepEqual([err.status, err.reason], ["rejected", "not today"]);

  const [thrown, p] = await Promise.all([drop({ table: "logs" }).catch((e) => e), waiting(tool).then((p) => cairn.approve(p).then(() => p))]);
  assert.ok(thrown instanceof RangeError);
  const a = await cairn.getApproval(p.session_id);
  assert.deepEqual([a.status, a.result?.error], ["approved", "RangeError: no such table"]);
  // A function that returns nothing records null.
  const noop = cairn.requireApproval(() => undefined, { tool });
  const [, q] = await Promise.all([noop({}), waiting(tool).then((p) => cairn.approve(p).then(() => p))]);
  const done = await cairn.getApproval(q.session_id);
  assert.deepEqual([done.result?.output, (await cairn.getSession(q.session_id)).status], [null, "completed"]);
});

test("an anonymous function needs a tool name", () => {
  assert.throws(() => requireApproval(() => 1, { client: cairn }), TypeError);
});
