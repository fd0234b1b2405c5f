// The client against a real `cairn serve` (scripted model): every door a
// person decides through.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { CairnError, Client } from "../dist/index.js";
import { startServer } from "./server.mjs";

let server;
let cairn;
before(async () => {
  server = await startServer();
  cairn = new Client({ baseUrl: server.url });
});
after(() => server.stop());

async function paused(agent) {
  const s = await cairn.createSession(agent, "go");
  assert.equal(s.status, "paused");
  assert.equal(s.interrupts.length, 1);
  return [s, s.interrupts[0]];
}

async function refused(promise) {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof CairnError, String(err));
    return err;
  }
  assert.fail("the call succeeded");
}

describe("decisions", () => {
  test("approve from the inbox", async () => {
    const [s, i] = await paused("ops");
    assert.deepEqual([i.kind, i.tool, i.arguments, i.message], ["approval", "deploy", { environment: "production" }, "Deploy to production?"]);
    assert.deepEqual([i.session_id, i.seq], [s.id, s.seq]);
    const inbox = [];
    for await (const p of cairn.pending({ kind: "approval", pageSize: 2 })) if (p.session_id === s.id) inbox.push(p);
    assert.deepEqual(inbox.map((p) => p.id), [i.id]);
    assert.ok(inbox[0].paused_at);
    const done = await cairn.approve(inbox[0]);
    assert.equal(done.status, "completed");
    assert.equal(done.output, '{"environment":"production"}');
  });

  test("a standing rule: granted, deciding, revoked", async () => {
    const first = await cairn.createSession("releaser", "staging");
    const done = await cairn.approve(first.interrupts[0], { rule: { if: 'args.environment == "staging"', duration: "72h" } });
    assert.equal(done.status, "completed");
    const [rule, ...more] = await cairn.rules({ tool: "release" });
    assert.equal(more.length, 0);
    assert.deepEqual([rule.if, rule.scope, rule.action, rule.uses], ['args.environment == "staging"', "agent", "approve", 0]);
    assert.equal((await cairn.createSession("releaser", "staging")).status, "completed", "a matching call runs without asking");
    assert.equal((await cairn.createSession("releaser", "qa")).status, "paused", "another one asks");
    assert.equal((await cairn.rules({ tool: "release" }))[0].uses, 1);
    const revoked = await cairn.revokeRule(rule.id);
    assert.ok(revoked.revoked_at);
    assert.deepEqual(await cairn.rules({ tool: "release" }), []);
    assert.equal((await cairn.rules({ tool: "release", all: true })).length, 1);
    const after = await cairn.createSession("releaser", "staging");
    assert.equal(after.status, "paused", "revoked, it decides nothing");
    const tooLong = await refused(cairn.approve(after.interrupts[0], { rule: { duration: "30d" } }));
    assert.deepEqual([tooLong.status, tooLong.code], [403, "forbidden"]);
  });

  test("a suggestion from the history, and the analytics", async () => {
    for (let i = 0; i < 3; i++) {
      const s = await cairn.createSession("releaser", "canary");
      assert.equal((await cairn.approve(s.interrupts[0])).status, "completed");
    }
    const s = await cairn.createSession("releaser", "canary");
    let item;
    for await (const p of cairn.pending({ kind: "approval" })) if (p.session_id === s.id) item = p;
    const sg = item.suggestion;
    assert.deepEqual([sg.rule.tool, sg.rule.if, sg.evidence.approvals, sg.evidence.people], ["release", 'args.environment == "canary"', 3, 1]);
    const rows = Object.fromEntries((await cairn.analytics({ by: "tool", since: new Date(Date.now() - 3600e3) })).rows.map((r) => [r.key, r]));
    assert.ok(rows.release.decisions >= 3 && rows.release.pending >= 1);
    const { scope, if: cond, duration } = sg.rule;
    assert.equal((await cairn.approve(item, { rule: { scope, if: cond, duration } })).status, "completed");
    assert.equal((await cairn.createSession("releaser", "canary")).status, "completed");
    for (const r of await cairn.rules({ tool: "release" })) await cairn.revokeRule(r.id);
    const bad = await refused(cairn.analytics({ by: "colour" }));
    assert.equal(bad.status, 400);
  });

  test("edit the arguments", async () => {
    const [s, i] = await paused("ops");
    const bad = await refused(cairn.approve(i, { arguments: { environment: "moon" } }));
    assert.deepEqual([bad.status, bad.code], [400, "invalid_arguments"]);
    assert.match(bad.message, /environment/);
    const same = await cairn.getSession(s.id);
    assert.deepEqual([same.status, same.seq], ["paused", s.seq], "a refused decision changes nothing");
    // The preview of the edit: computed, not recorded; of invalid arguments, refused.
    assert.deepEqual([i.preview?.format, i.preview?.content], ["diff", '-build: 1041\n+{"environment":"production"}']);
    const edited = await cairn.preview(i, { environment: "staging" });
    assert.deepEqual([edited.format, edited.content], ["diff", '-build: 1041\n+{"environment":"staging"}']);
    const badPreview = await refused(cairn.preview(i, { environment: "moon" }));
    assert.deepEqual([badPreview.status, badPreview.code], [400, "invalid_arguments"]);
    assert.equal((await cairn.getSession(s.id)).seq, s.seq, "a preview records nothing");
    const done = await cairn.approve(i, { arguments: { environment: "staging" } });
    assert.match(done.output, /approved this call with other arguments/);
    assert.ok(done.output.endsWith('{"environment":"staging"}'), done.output);
  });

  test("decide many at once", async () => {
    const [s1, i1] = await paused("ops");
    const [s2, i2] = await paused("ops");
    const out = await cairn.decideMany([
      { session_id: s1.id, interrupt_id: i1.id, action: "approve" },
      { session_id: s2.id, interrupt_id: i2.id, action: "reject", reason: "not now" },
    ]);
    assert.match(out.batch, /^bat_/);
    assert.deepEqual(out.results.map((r) => [r.session_id, r.status, r.session_status]), [[s1.id, 200, "completed"], [s2.id, 200, "completed"]]);
    const again = await cairn.decideMany([{ session_id: s1.id, interrupt_id: i1.id, action: "approve" }]);
    assert.deepEqual([again.results[0].status, again.results[0].error?.code], [409, "already_decided"]);
    const [s3] = await paused("ops");
    const chosen = await cairn.decideSelected({ tool: "deploy", session_ids: [s3.id] }, "approve", { limit: 5 });
    assert.deepEqual(chosen.results.map((r) => [r.session_id, r.status]), [[s3.id, 200]]);
  });

  test("fork at a pause", async () => {
    const [s] = await paused("ops");
    const fork = await cairn.fork(s.id);
    assert.deepEqual([fork.forked_from?.session_id, fork.forked_from?.seq, fork.status], [s.id, s.seq, "paused"]);
    // A fork runs under the definition its original started with.
    assert.match(s.definition?.hash ?? "", /^sha256:[0-9a-f]{64}$/);
    assert.deepEqual([fork.definition?.hash, fork.definition?.current], [s.definition?.hash, true]);
    const done = await cairn.reject(fork.interrupts[0], "not from the fork");
    assert.equal(done.status, "completed");
    assert.equal((await cairn.getSession(s.id)).status, "paused", "the original is not changed");
    const bad = await refused(cairn.fork(s.id, 2));
    assert.deepEqual([bad.status, bad.code], [400, "not_a_fork_point"]);
  });

  test("reject with a reason", async () => {
    const [, i] = await paused("ops");
    const done = await cairn.reject(i, "Not on a Friday.");
    assert.match(done.output, /^Not deployed: .*Not on a Friday\./);
  });

  test("answer a question", async () => {
    const [, i] = await paused("planner");
    assert.deepEqual([i.kind, i.question], ["input", "Which environment?"]);
    const done = await cairn.answer(i, "staging");
    assert.deepEqual([done.status, done.output], ["completed", "Planned for staging."]);
  });

  test("complete and fail a client tool", async () => {
    const [, i] = await paused("locator");
    assert.deepEqual([i.kind, i.tool, i.result_schema.required], ["client", "get_location", ["city"]]);
    const bad = await refused(cairn.complete(i, { town: "Lyon" }));
    assert.deepEqual([bad.status, bad.code], [400, "invalid_output"]);
    const done = await cairn.complete(i, { city: "Lyon" });
    assert.equal(done.output, '{"city":"Lyon"}');

    const [, j] = await paused("locator");
    const failed = await cairn.fail(j, "location permission denied");
    assert.match(failed.output, /^No location: .*location permission denied/);
  });

  test("review: send back, then edit", async () => {
    const [, i] = await paused("triage");
    assert.deepEqual([i.kind, i.output.priority], ["review", "low"]);
    const again = await cairn.reject(i, "it is rising");
    assert.deepEqual(again.interrupts[0].output, { priority: "high", summary: "disk rising" });
    const done = await cairn.edit(again.interrupts[0], { priority: "high", summary: "disk full by 6pm" });
    assert.deepEqual(done.output, { priority: "high", summary: "disk full by 6pm" });
  });

  test("any kind from its ask, with no code per kind", async () => {
    for (const [agent, action, value, want] of [
      ["ops", "approve", { environment: "staging" }, "staging"],
      ["planner", "answer", "staging", "Planned for staging."],
      ["locator", "complete", { city: "Lyon" }, '{"city":"Lyon"}'],
      ["triage", "edit", { priority: "high", summary: "full" }, "full"],
    ]) {
      const [, i] = await paused(agent);
      assert.ok(i.ask.label && i.ask.text && i.ask.decider, JSON.stringify(i.ask));
      assert.ok(i.ask.choices.some((c) => c.action === action), JSON.stringify(i.ask));
      assert.throws(() => cairn.choose(i, "teleport"), /not "teleport"/);
      const done = await cairn.choose(i, action, value);
      assert.equal(done.status, "completed");
      const out = typeof done.output === "string" ? done.output : JSON.stringify(done.output);
      assert.ok(out.includes(want), out);
    }
  });

  test("a second decision is a 409 naming the first", async () => {
    const [s, i] = await paused("ops");
    await cairn.approve(i);
    const late = await refused(cairn.reject(i, "too late"));
    assert.deepEqual([late.status, late.code], [409, "already_decided"]);
    assert.match(late.message, /already decided: approve by/);
    assert.equal((await cairn.getSession(s.id)).status, "completed");
  });

  test("a stale seq is a 409 conflict", async () => {
    const [s, i] = await paused("ops");
    const stale = await refused(cairn.decide(s.id, s.seq - 1, [{ interrupt_id: i.id, action: "approve" }]));
    assert.deepEqual([stale.status, stale.code], [409, "conflict"]);
    assert.equal((await cairn.getSession(s.id)).status, "paused");
  });
});

describe("sessions", () => {
  test("messages, cancel and listings", async () => {
    const s = await cairn.createSession("ops", "go", { metadata: { ticket: "T-1" } });
    assert.deepEqual(s.metadata, { ticket: "T-1" });
    const cancelled = await cairn.cancel(s.id);
    assert.equal(cancelled.status, "cancelled");
    const again = await cairn.sendMessage(s.id, "try again", cancelled.seq);
    assert.equal(again.status, "paused");
    const page = await cairn.listSessions({ limit: 1 });
    assert.equal(page.sessions.length, 1);
    assert.ok(page.next_cursor);
    const ids = [];
    for await (const x of cairn.sessions({ status: "paused", pageSize: 2 })) ids.push(x.id);
    assert.ok(ids.includes(s.id));
    assert.equal(new Set(ids).size, ids.length);
    const agents = new Set();
    for await (const x of cairn.sessions({ agent: "ops", pageSize: 2 })) agents.add(x.agent);
    assert.deepEqual([...agents], ["ops"]);
  });

  test("errors carry status, code and message", async () => {
    const missing = await refused(cairn.getSession("ses_nobody"));
    assert.deepEqual([missing.status, missing.code], [404, "not_found"]);
    const typo = await refused(cairn.createSession("opps", "go"));
    assert.equal(typo.status, 400);
    assert.match(typo.message, /did you mean "ops"/);
    const down = await refused(new Client({ baseUrl: "http://127.0.0.1:9" }).health());
    assert.deepEqual([down.status, down.code], [0, "unreachable"]);
    const forged = await refused(cairn.callback(server.url + "/v1/callbacks/cairn.cb.forged", { output: {} }));
    assert.ok([400, 403].includes(forged.status), String(forged.status));
  });

  test("agents, me, health", async () => {
    const agents = Object.fromEntries((await cairn.agents()).map((a) => [a.name, a]));
    assert.deepEqual(agents.locator.tools.map((t) => [t.name, t.kind]), [["get_location", "client"]]);
    assert.deepEqual([agents.ops.tools[0].approval, agents.ops.tools[0].parameters.required], ["always", ["environment"]]);
    assert.equal((await cairn.me()).auth, false);
    assert.equal(await cairn.health(), "ok");
  });
});

describe("events", () => {
  test("follow live, then resume after a seq", async () => {
    const s = await cairn.createSession("ops", "go");
    const stored = await cairn.events(s.id);
    assert.deepEqual(stored.map((e) => e.seq), Array.from({ length: s.seq }, (_, k) => k + 1));
    const record = await cairn.audit(s.id); // the paused session's record: chained and signed to its last event
    assert.deepEqual([record.verified_seq, record.signed_seq, record.broken ?? null], [s.seq, s.seq, null]);
    assert.ok(record.summary.startsWith(`verified up to seq ${s.seq}; signed checkpoint`), record.summary);
    const seen = [];
    for await (const ev of cairn.follow(s.id)) {
      seen.push(ev);
      if (ev.type === "turn_paused") cairn.approve(s.interrupts[0]);
      if (ev.type === "turn_completed") break;
    }
    const seqs = seen.map((e) => e.seq);
    assert.deepEqual(seqs, Array.from({ length: seen.length }, (_, k) => k + 1), "every stored event once, in order");
    for (const want of ["approval_requested", "decision", "tool_started", "tool_result", "turn_completed"]) {
      assert.ok(seen.some((e) => e.type === want), want);
    }
    const tail = [];
    for await (const ev of cairn.follow(s.id, { after: s.seq })) {
      tail.push(ev.seq);
      if (ev.type === "turn_completed") break;
    }
    assert.deepEqual(tail, seqs.slice(s.seq));
  });

  test("the cross-session feed", async () => {
    const abort = new AbortController();
    const feed = cairn.changes({ signal: abort.signal });
    const first = feed.next(); // opens the stream
    await new Promise((r) => setTimeout(r, 200));
    const s = await cairn.createSession("planner", "go");
    let next = await first;
    for (;;) {
      const c = next.value;
      if (c.type === "session" && c.session.id === s.id && c.session.status === "paused") {
        assert.equal(c.session.interrupts[0].kind, "input");
        break;
      }
      next = await feed.next();
    }
    abort.abort();
    await feed.return();
  });
});

test("stateless: a continuation resumes once", async () => {
  const r = await cairn.invoke("ops", { input: "go" });
  assert.equal(r.status, "paused");
  const decisions = [{ interrupt_id: r.interrupts[0].id, action: "approve" }];
  const done = await cairn.invoke("ops", { continuation: r.continuation, decisions });
  assert.deepEqual([done.status, done.output], ["completed", '{"environment":"production"}']);
  const spent = await refused(cairn.invoke("ops", { continuation: r.continuation, decisions }));
  assert.deepEqual([spent.status, spent.code], [409, "conflict"]);
  assert.equal(spent.result.output, done.output, "the 409 carries the first answer");
});
