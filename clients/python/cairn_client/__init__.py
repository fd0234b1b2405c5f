"""A client for Cairn's HTTP API, standard library only.

    from cairn_client import Client

    cairn = Client("http://localhost:8080")
    s = cairn.create_session("main", "Deploy the latest build to production.")
    if s.status == "paused":
        s = cairn.approve(s.interrupts[0])

See docs/clients.md.
"""

from ._client import CairnError, Client
from ._types import (
    Agent,
    AgentTool,
    Ask,
    CallbackReply,
    Change,
    Choice,
    Decision,
    Event,
    Interrupt,
    InterruptsPage,
    Me,
    PathStep,
    ProviderError,
    Remembered,
    Result,
    Session,
    SessionError,
    SessionsPage,
    StackFrame,
    Usage,
    parse_time,
)

__all__ = [
    "Agent",
    "AgentTool",
    "Ask",
    "CairnError",
    "CallbackReply",
    "Change",
    "Choice",
    "Client",
    "Decision",
    "Event",
    "Interrupt",
    "InterruptsPage",
    "Me",
    "PathStep",
    "ProviderError",
    "Remembered",
    "Result",
    "Session",
    "SessionError",
    "SessionsPage",
    "StackFrame",
    "Usage",
    "parse_time",
]
