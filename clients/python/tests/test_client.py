"""The client against a real `cairn serve` (scripted model): every door a person decides through."""

from __future__ import annotations

import queue
import threading
import unittest

from cairn_client import CairnError, Client, Decision, RuleGrant

from .server import Server

server: Server


def setUpModule() -> None:
    global server
    server = Server()


def tearDownModule() -> None:
    server.stop()


class Approvals(unittest.TestCase):
    def setUp(self) -> None:
        self.cairn = Client(server.url, timeout=30)

    def paused(self, agent: str, text: str = "go"):
        s = self.cairn.create_session(agent, text)
        self.assertEqual(s.status, "paused", s)
        self.assertEqual(len(s.interrupts), 1)
        return s, s.interrupts[0]

    def test_approve(self) -> None:
        s, i = self.paused("ops")
        self.assertEqual((i.kind, i.tool, i.arguments, i.message), ("approval", "deploy", {"environment": "production"}, "Deploy to production?"))
        self.assertEqual((i.session_id, i.seq), (s.id, s.seq))
        self.assertEqual(i.path[0].tool, "deploy")
        inbox = [p for p in self.cairn.pending(kind="approval") if p.session_id == s.id]
        self.assertEqual([p.id for p in inbox], [i.id])
        self.assertIsNotNone(inbox[0].paused_at)

        done = self.cairn.approve(inbox[0])
        self.assertEqual(done.status, "completed")
        self.assertEqual(done.output, '{"environment":"production"}')
        self.assertIsNotNone(done.updated_at)

    def test_standing_rule(self) -> None:
        _, i = self.paused("releaser", "staging")
        done = self.cairn.approve(i, rule=RuleGrant(if_='args.environment == "staging"', duration="72h"))
        self.assertEqual(done.status, "completed")
        (rule,) = self.cairn.rules(tool="release")
        self.assertEqual((rule.if_, rule.scope, rule.action, rule.uses), ('args.environment == "staging"', "agent", "approve", 0))
        self.assertIsNotNone(rule.expires_at)
        # The next matching call runs without asking; another one asks.
        self.assertEqual(self.cairn.create_session("releaser", "staging").status, "completed")
        self.assertEqual(self.cairn.create_session("releaser", "qa").status, "paused")
        self.assertEqual(self.cairn.rules(tool="release")[0].uses, 1)
        revoked = self.cairn.revoke_rule(rule.id)
        self.assertIsNotNone(revoked.revoked_at)
        self.assertEqual(self.cairn.rules(tool="release"), [])
        self.assertEqual(len(self.cairn.rules(tool="release", all=True)), 1)
        self.assertEqual(self.cairn.create_session("releaser", "staging").status, "paused")
        # Longer than the tool allows: refused, nothing granted.
        _, j = self.paused("releaser", "staging")
        with self.assertRaises(CairnError) as long:
            self.cairn.approve(j, rule=RuleGrant(duration="30d"))
        self.assertEqual((long.exception.status, long.exception.code), (403, "forbidden"))

    def test_suggestion_and_analytics(self) -> None:
        for _ in range(3):
            _, i = self.paused("releaser", "canary")
            self.assertEqual(self.cairn.approve(i).status, "completed")
        s, _ = self.paused("releaser", "canary")
        (item,) = [p for p in self.cairn.pending(kind="approval") if p.session_id == s.id]
        sg = item.suggestion
        assert sg is not None and sg.rule is not None and sg.evidence is not None
        self.assertEqual((sg.rule.tool, sg.rule.if_, sg.evidence.approvals, sg.evidence.people), ("release", 'args.environment == "canary"', 3, 1))
        self.assertIsNotNone(sg.evidence.since)
        rows = {r.key: r for r in self.cairn.analytics(by="tool").rows}
        release = rows["release"]
        self.assertGreaterEqual(release.decisions, 3)
        self.assertGreaterEqual(release.pending, 1)
        assert release.time_to_decision_ms is not None
        # Taking it: the grant it names.
        self.assertEqual(self.cairn.approve(item, rule=sg.rule.grant()).status, "completed")
        self.assertEqual(self.cairn.create_session("releaser", "canary").status, "completed")
        for r in self.cairn.rules(tool="release"):
            self.cairn.revoke_rule(r.id)
        with self.assertRaises(CairnError) as bad:
            self.cairn.analytics(by="colour")
        self.assertEqual(bad.exception.status, 400)

    def test_edit_arguments(self) -> None:
        s, i = self.paused("ops")
        with self.assertRaises(CairnError) as refused:
            self.cairn.approve(i, arguments={"environment": "moon"})
        self.assertEqual((refused.exception.status, refused.exception.code), (400, "invalid_arguments"))
        self.assertIn("environment", refused.exception.message)
        same = self.cairn.get_session(s.id)
        self.assertEqual((same.status, same.seq), ("paused", s.seq), "a refused decision changes nothing")

        # The preview of the edit: computed, not recorded; of invalid arguments, refused.
        assert i.preview is not None
        self.assertEqual((i.preview.format, i.preview.content), ("diff", '-build: 1041\n+{"environment":"production"}'))
        edited = self.cairn.preview(i, {"environment": "staging"})
        self.assertEqual((edited.format, edited.content), ("diff", '-build: 1041\n+{"environment":"staging"}'))
        with self.assertRaises(CairnError) as bad_preview:
            self.cairn.preview(i, {"environment": "moon"})
        self.assertEqual((bad_preview.exception.status, bad_preview.exception.code), (400, "invalid_arguments"))
        self.assertEqual(self.cairn.get_session(s.id).seq, s.seq, "a preview records nothing")

        done = self.cairn.approve(i, arguments={"environment": "staging"})
        self.assertIn("approved this call with other arguments", done.output)
        self.assertTrue(done.output.endswith('{"environment":"staging"}'), done.output)

    def test_decide_many(self) -> None:
        (s1, i1), (s2, i2) = self.paused("ops"), self.paused("ops")
        out = self.cairn.decide_many([(s1.id, Decision.approve(i1.id)), (s2.id, Decision.reject(i2.id, "not now"))])
        self.assertTrue(out.batch.startswith("bat_"))
        self.assertEqual([(r.session_id, r.status, r.session_status) for r in out.results], [(s1.id, 200, "completed"), (s2.id, 200, "completed")])
        again = self.cairn.decide_many([(s1.id, Decision.approve(i1.id))])
        assert again.results[0].error is not None
        self.assertEqual((again.results[0].status, again.results[0].error.code), (409, "already_decided"))
        s3, _ = self.paused("ops")
        chosen = self.cairn.decide_selected("approve", tool="deploy", session_ids=[s3.id], limit=5)
        self.assertEqual([(r.session_id, r.status) for r in chosen.results], [(s3.id, 200)])

    def test_fork(self) -> None:
        s, i = self.paused("ops")
        fork = self.cairn.fork(s.id)
        assert fork.forked_from is not None
        # A fork runs under the definition its original started with.
        assert s.definition is not None and fork.definition is not None
        self.assertEqual((fork.definition.hash, fork.definition.current), (s.definition.hash, True))
        self.assertTrue(s.definition.hash.startswith("sha256:"))
        self.assertEqual((fork.forked_from.session_id, fork.forked_from.seq, fork.status), (s.id, s.seq, "paused"))
        done = self.cairn.reject(fork.interrupts[0], "not from the fork")
        self.assertEqual(done.status, "completed")
        self.assertEqual(self.cairn.get_session(s.id).status, "paused", "the original is not changed")
        with self.assertRaises(CairnError) as refused:
            self.cairn.fork(s.id, seq=2)
        self.assertEqual((refused.exception.status, refused.exception.code), (400, "not_a_fork_point"))

    def test_reject(self) -> None:
        _, i = self.paused("ops")
        done = self.cairn.reject(i, reason="Not on a Friday.")
        self.assertEqual(done.status, "completed")
        self.assertTrue(done.output.startswith("Not deployed: "), done.output)
        self.assertIn("Not on a Friday.", done.output)

    def test_answer_a_question(self) -> None:
        _, i = self.paused("planner")
        self.assertEqual((i.kind, i.question), ("input", "Which environment?"))
        done = self.cairn.answer(i, "staging")
        self.assertEqual((done.status, done.output), ("completed", "Planned for staging."))

    def test_complete_a_client_tool(self) -> None:
        _, i = self.paused("locator")
        self.assertEqual((i.kind, i.tool), ("client", "get_location"))
        self.assertEqual(i.result_schema["required"], ["city"])
        with self.assertRaises(CairnError) as refused:
            self.cairn.complete(i, {"town": "Lyon"})
        self.assertEqual((refused.exception.status, refused.exception.code), (400, "invalid_output"))
        done = self.cairn.complete(i, {"city": "Lyon"})
        self.assertEqual(done.output, '{"city":"Lyon"}')

    def test_fail_a_client_tool(self) -> None:
        _, i = self.paused("locator")
        done = self.cairn.fail(i, "location permission denied")
        self.assertIn("No location: ", done.output)
        self.assertIn("location permission denied", done.output)

    def test_review(self) -> None:
        _, i = self.paused("triage")
        self.assertEqual((i.kind, i.output["priority"]), ("review", "low"))
        again = self.cairn.reject(i, "it is rising")
        self.assertEqual(again.status, "paused")
        second = again.interrupts[0]
        self.assertEqual(second.output, {"priority": "high", "summary": "disk rising"})
        done = self.cairn.edit(second, {"priority": "high", "summary": "disk full by 6pm"})
        self.assertEqual(done.output, {"priority": "high", "summary": "disk full by 6pm"})

    def test_any_kind_from_its_ask(self) -> None:
        # One loop decides every kind from interrupt.ask, with no code per kind.
        for agent, action, value, want in [
            ("ops", "approve", {"environment": "staging"}, "staging"),
            ("planner", "answer", "staging", "Planned for staging."),
            ("locator", "complete", {"city": "Lyon"}, '{"city":"Lyon"}'),
            ("triage", "edit", {"priority": "high", "summary": "full"}, "full"),
        ]:
            _, i = self.paused(agent)
            self.assertTrue(i.ask.label and i.ask.text and i.ask.decider, i.ask)
            self.assertIn(action, [ch.action for ch in i.ask.choices])
            with self.assertRaises(ValueError) as refused:
                self.cairn.choose(i, "teleport")
            self.assertIn("not 'teleport'", str(refused.exception))
            done = self.cairn.choose(i, action, value)
            self.assertEqual(done.status, "completed", done)
            self.assertIn(want, str(done.output))

    def test_a_second_decision_is_a_conflict(self) -> None:
        s, i = self.paused("ops")
        self.cairn.approve(i)
        with self.assertRaises(CairnError) as late:
            self.cairn.reject(i, "too late")
        self.assertEqual(late.exception.status, 409)
        self.assertEqual(late.exception.code, "already_decided")
        self.assertIn("already decided: approve by", late.exception.message)
        self.assertEqual(self.cairn.get_session(s.id).status, "completed")

    def test_stale_seq_is_a_conflict(self) -> None:
        s, i = self.paused("ops")
        with self.assertRaises(CairnError) as stale:
            self.cairn.decide(s.id, s.seq - 1, [Decision.approve(i.id)])
        self.assertEqual((stale.exception.status, stale.exception.code), (409, "conflict"))
        self.assertEqual(self.cairn.get_session(s.id).status, "paused")


class Sessions(unittest.TestCase):
    def setUp(self) -> None:
        self.cairn = Client(server.url, timeout=30)

    def test_messages_cancel_and_listings(self) -> None:
        s = self.cairn.create_session("ops", "go", metadata={"ticket": "T-1"})
        self.assertEqual(s.metadata, {"ticket": "T-1"})
        cancelled = self.cairn.cancel(s.id)
        self.assertEqual(cancelled.status, "cancelled")
        again = self.cairn.send_message(s.id, "try again", seq=cancelled.seq)
        self.assertEqual(again.status, "paused")

        page = self.cairn.list_sessions(limit=1)
        self.assertEqual(len(page.sessions), 1)
        self.assertIsNotNone(page.next_cursor)
        ids = [x.id for x in self.cairn.sessions(status="paused", page_size=2)]
        self.assertIn(s.id, ids)
        self.assertEqual(len(ids), len(set(ids)))
        mine = list(self.cairn.sessions(agent="ops", page_size=2))
        self.assertIn(s.id, [x.id for x in mine])
        self.assertEqual({x.agent for x in mine}, {"ops"})

    def test_not_found(self) -> None:
        with self.assertRaises(CairnError) as missing:
            self.cairn.get_session("ses_nobody")
        self.assertEqual((missing.exception.status, missing.exception.code), (404, "not_found"))

    def test_unknown_agent(self) -> None:
        with self.assertRaises(CairnError) as bad:
            self.cairn.create_session("opps", "go")
        self.assertEqual(bad.exception.status, 400)
        self.assertIn('did you mean "ops"', bad.exception.message)

    def test_unreachable(self) -> None:
        with self.assertRaises(CairnError) as down:
            Client("http://127.0.0.1:9", timeout=5).health()
        self.assertEqual((down.exception.status, down.exception.code), (0, "unreachable"))

    def test_agents_and_me(self) -> None:
        agents = {a.name: a for a in self.cairn.agents()}
        self.assertEqual({t.name: t.kind for t in agents["locator"].tools}, {"get_location": "client"})
        deploy = agents["ops"].tools[0]
        self.assertEqual((deploy.approval, deploy.parameters["required"]), ("always", ["environment"]))
        self.assertEqual(self.cairn.me().auth, False)
        self.assertEqual(self.cairn.health(), "ok")

    def test_bad_callback_token(self) -> None:
        with self.assertRaises(CairnError) as bad:
            self.cairn.callback(server.url + "/v1/callbacks/cairn.cb.forged", output={"city": "Lyon"})
        self.assertIn(bad.exception.status, (400, 403))


class Events(unittest.TestCase):
    def setUp(self) -> None:
        self.cairn = Client(server.url, timeout=30)

    def test_follow_and_resume(self) -> None:
        s = self.cairn.create_session("ops", "go")
        stored = self.cairn.events(s.id)
        self.assertEqual([e.seq for e in stored], list(range(1, s.seq + 1)))
        self.assertEqual(stored[0].type, "session_started")
        record = self.cairn.audit(s.id)  # the paused session's record: chained and signed to its last event
        self.assertEqual((record.verified_seq, record.signed_seq, record.broken), (s.seq, s.seq, None))
        self.assertIsNotNone(record.checkpoint)
        self.assertTrue(record.summary.startswith("verified up to seq %d; signed checkpoint" % s.seq), record.summary)

        # Follow from the start; approve from another thread once paused.
        seen = []
        for ev in self.cairn.follow(s.id):
            seen.append(ev)
            if ev.type == "turn_paused":
                threading.Thread(target=self.cairn.approve, args=(s.interrupts[0],), daemon=True).start()
            if ev.type == "turn_completed":
                break
        seqs = [e.seq for e in seen]
        self.assertEqual(seqs, list(range(1, len(seen) + 1)), "every stored event once, in order")
        types = [e.type for e in seen]
        for want in ("approval_requested", "decision", "tool_started", "tool_result", "turn_completed"):
            self.assertIn(want, types)

        # Resume after a seq (what a reconnect sends as Last-Event-ID).
        tail = []
        for ev in self.cairn.follow(s.id, after=s.seq):
            tail.append(ev.seq)
            if ev.type == "turn_completed":
                break
        self.assertEqual(tail, seqs[s.seq:])
        self.assertEqual([e.seq for e in self.cairn.events(s.id, after=s.seq)], tail)

    def test_changes(self) -> None:
        got: "queue.Queue" = queue.Queue()
        opened = threading.Event()

        def watch() -> None:
            feed = self.cairn.changes()
            opened.set()
            for change in feed:
                got.put(change)

        threading.Thread(target=watch, daemon=True).start()
        opened.wait(5)
        s = self.cairn.create_session("planner", "go")
        while True:
            change = got.get(timeout=10)
            if change.type == "session" and change.session.id == s.id and change.session.status == "paused":
                self.assertEqual(change.session.interrupts[0].kind, "input")
                break


class Continuations(unittest.TestCase):
    def test_invoke_resume_once(self) -> None:
        cairn = Client(server.url, timeout=30)
        r = cairn.invoke("ops", input="go")
        self.assertEqual(r.status, "paused")
        self.assertTrue(r.continuation)
        done = cairn.invoke("ops", continuation=r.continuation, decisions=[Decision.approve(r.interrupts[0].id)])
        self.assertEqual((done.status, done.output), ("completed", '{"environment":"production"}'))
        with self.assertRaises(CairnError) as spent:
            cairn.invoke("ops", continuation=r.continuation, decisions=[Decision.approve(r.interrupts[0].id)])
        self.assertEqual((spent.exception.status, spent.exception.code), (409, "conflict"))
        self.assertEqual(spent.exception.result.output, done.output, "the 409 carries the first answer")


if __name__ == "__main__":
    unittest.main()
