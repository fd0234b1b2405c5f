"""The SSE reader against the event-stream format's corner cases."""

from __future__ import annotations

import io
import unittest

from cairn_client._sse import read_messages


class SSETest(unittest.TestCase):
    def read(self, raw: bytes):
        return [(m.event, m.data, m.id) for m in read_messages(io.BytesIO(raw))]

    def test_messages(self) -> None:
        raw = (
            b": keep-alive\n\n"
            b"id: 9\nevent: tool_started\ndata: {\"seq\":9}\n\n"
            b"event: model_delta\r\ndata:{\"seq\":0}\r\n\r\n"
            b"data: one\ndata: two\n\n"
            b"event: nothing\n\n"
            b"id: 10\ndata: cut off"
        )
        self.assertEqual(
            self.read(raw),
            [
                ("tool_started", '{"seq":9}', "9"),
                ("model_delta", '{"seq":0}', None),
                ("message", "one\ntwo", None),
            ],
            "a message without a blank line after it was never dispatched",
        )

    def test_ids_with_nul_are_ignored(self) -> None:
        self.assertEqual(self.read(b"id: 1\x002\ndata: x\n\n"), [("message", "x", None)])
