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
    Action,
    Actor,
    Agent,
    AgentTool,
    Approval,
    ApprovalRule,
    Approvers,
    Ask,
    AuditState,
    Break,
    CallbackReply,
    CancelScope,
    Change,
    Checkpoint,
    Choice,
    Decider,
    Decision,
    Event,
    EventType,
    Field,
    Interrupt,
    InterruptsPage,
    Kind,
    Me,
    Mode,
    PathStep,
    ProviderError,
    Remembered,
    Result,
    Session,
    SessionError,
    SessionsPage,
    StackFrame,
    Status,
    Usage,
    Via,
    parse_time,
)

__all__ = [
    "Action",
    "Actor",
    "Agent",
    "AgentTool",
    "Approval",
    "ApprovalRule",
    "Approvers",
    "Ask",
    "AuditState",
    "Break",
    "CairnError",
    "CallbackReply",
    "CancelScope",
    "Change",
    "Checkpoint",
    "Choice",
    "Decider",
    "Client",
    "Decision",
    "Event",
    "EventType",
    "Field",
    "Interrupt",
    "InterruptsPage",
    "Kind",
    "Me",
    "Mode",
    "PathStep",
    "ProviderError",
    "Remembered",
    "Result",
    "Session",
    "SessionError",
    "SessionsPage",
    "StackFrame",
    "Status",
    "Usage",
    "Via",
    "parse_time",
]
