"""require_approval against a real `cairn serve`: the function runs once, after a person approves."""

from __future__ import annotations

import asyncio
import threading
import time
import unittest
import uuid
from typing import Any, Dict, List

from cairn_client import CairnRejected, Client, Interrupt, require_approval

from .server import Server

server: Server


def setUpModule() -> None:
    global server
    server = Server()


def tearDownModule() -> None:
    server.stop()


class RequireApproval(unittest.TestCase):
    def setUp(self) -> None:
        self.cairn = Client(server.url, timeout=90)
        self.ran: List[Dict[str, Any]] = []

    def waiting(self, tool: str, kind: str = "approval") -> Interrupt:
        """The pending interrupt of tool, as the inbox lists it (a person's view)."""
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            for i in self.cairn.pending(kind=kind):
                if i.tool == tool:
                    return i
            time.sleep(0.05)  # elapsed time: the decorated call asks from another thread
        self.fail(f"no pending {kind} of {tool}")

    def in_thread(self, fn: Any, *args: Any, **kwargs: Any) -> Dict[str, Any]:
        out: Dict[str, Any] = {}

        def run() -> None:
            try:
                out["value"] = fn(*args, **kwargs)
            except BaseException as err:  # noqa: BLE001 - handed to the test
                out["error"] = err

        t = threading.Thread(target=run)
        t.start()
        out["thread"] = t
        return out

    def test_runs_once_with_the_edited_arguments(self) -> None:
        tool = "refund_" + uuid.uuid4().hex[:8]

        @self.cairn.require_approval(tool=tool, message="Refund {amount} EUR on order {order}?")
        def refund(order: str, amount: int) -> Dict[str, Any]:
            self.ran.append({"order": order, "amount": amount})
            return {"refunded": amount}

        call = self.in_thread(refund, "A-17", amount=120)
        i = self.waiting(tool)
        self.assertEqual((i.message, i.arguments), ("Refund 120 EUR on order A-17?", {"order": "A-17", "amount": 120}))
        self.assertEqual(self.ran, [])  # nothing runs before the decision
        self.cairn.approve(i, arguments={"order": "A-17", "amount": 100})
        call["thread"].join(30)
        self.assertEqual(call.get("value"), {"refunded": 100}, call.get("error"))
        self.assertEqual(self.ran, [{"order": "A-17", "amount": 100}])
        # The result is recorded: the request's session completed with it.
        a = self.cairn.get_approval(i.session_id)
        self.assertEqual((a.status, a.edited, a.result and a.result.output), ("approved", True, {"refunded": 100}))
        self.assertEqual(self.cairn.get_session(i.session_id).status, "completed")

    def test_a_rejection_raises_with_the_reason(self) -> None:
        tool = "drop_" + uuid.uuid4().hex[:8]

        @require_approval(self.cairn, tool=tool)
        def drop(table: str) -> None:
            self.ran.append({"table": table})

        call = self.in_thread(drop, table="users")
        self.cairn.reject(self.waiting(tool), reason="not in production")
        call["thread"].join(30)
        err = call.get("error")
        self.assertIsInstance(err, CairnRejected)
        assert isinstance(err, CairnRejected)
        self.assertEqual((err.status, err.reason), ("rejected", "not in production"))
        self.assertEqual(self.ran, [])

    def test_a_restarted_caller_finds_its_request_and_never_runs_twice(self) -> None:
        tool = "pay_" + uuid.uuid4().hex[:8]
        key = "invoice-" + uuid.uuid4().hex[:8]
        # The first process asked, then died while the request was pending.
        first = self.cairn.request_approval(tool, {"invoice": "I-9"}, idempotency_key=key)
        self.assertEqual(first.status, "pending")

        @self.cairn.require_approval(tool=tool, idempotency_key=lambda args: key)
        def pay(invoice: str) -> str:
            self.ran.append({"invoice": invoice})
            return "paid " + invoice

        # The restarted process calls again: the same request, not a second one.
        call = self.in_thread(pay, "I-9")
        i = self.waiting(tool)
        self.assertEqual(i.session_id, first.id)
        self.cairn.approve(i)
        call["thread"].join(30)
        self.assertEqual(call.get("value"), "paid I-9", call.get("error"))
        # Restarted again after it ran: the recorded result, no second run.
        self.assertEqual(pay("I-9"), "paid I-9")
        self.assertEqual(self.ran, [{"invoice": "I-9"}])
        self.assertEqual([p for p in self.cairn.pending() if p.tool == tool], [])

    def test_async_functions_and_errors_are_recorded(self) -> None:
        tool = "rotate_" + uuid.uuid4().hex[:8]

        @self.cairn.require_approval(tool=tool)
        async def rotate(service: str) -> str:
            await asyncio.sleep(0)
            self.ran.append({"service": service})
            raise ValueError("the vault is sealed")

        call = self.in_thread(asyncio.run, rotate("billing"))
        i = self.waiting(tool)
        self.cairn.approve(i)
        call["thread"].join(30)
        self.assertIsInstance(call.get("error"), ValueError)
        a = self.cairn.get_approval(i.session_id)
        self.assertEqual(a.result and a.result.error, "ValueError: the vault is sealed")
        self.assertEqual(self.ran, [{"service": "billing"}])

    def test_positional_only_parameters_are_refused(self) -> None:
        with self.assertRaises(TypeError):
            @self.cairn.require_approval()
            def f(x: int, /) -> None: ...


if __name__ == "__main__":
    unittest.main()
