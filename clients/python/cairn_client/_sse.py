"""A Server-Sent Events reader (the WHATWG event-stream format)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO, Iterator, List, Optional


@dataclass
class Message:
    """One dispatched SSE message."""

    event: str
    data: str
    id: Optional[str]


def read_messages(stream: IO[bytes]) -> Iterator[Message]:
    """Yields the messages of an event stream until it ends.

    Comment lines (keep-alives) are skipped; a message without data is not
    dispatched; ``id`` is the last id the stream set, as a reconnect sends
    it back in ``Last-Event-ID``.
    """
    event, last_id = "", None
    data: List[str] = []
    saw_id = False
    while True:
        raw = stream.readline()
        if not raw:
            return
        line = raw.decode("utf-8").rstrip("\r\n")
        if line == "":
            if data:
                yield Message(event or "message", "\n".join(data), last_id if saw_id else None)
            event, data, saw_id = "", [], False  # a new message
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "event":
            event = value
        elif name == "data":
            data.append(value)
        elif name == "id" and "\0" not in value:
            last_id, saw_id = value, True
