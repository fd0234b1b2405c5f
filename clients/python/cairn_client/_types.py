"""The shapes of the Cairn HTTP API as dataclasses.

Each class mirrors a schema of api/openapi.json field for field;
tests/test_schema.py fails when they drift apart. Unknown fields in an
answer are ignored, so a newer server does not break an older client.
"""

from __future__ import annotations

import dataclasses
import datetime
import re
import typing
from dataclasses import dataclass, field
from typing import Any, Dict, List, Literal, Optional

# The API's enums, as its OpenAPI document lists them (tests/test_schema.py
# fails when they differ). A newer server may send a value not listed here.
Kind = Literal["approval", "input", "message", "review", "external", "client"]
Status = Literal["running", "paused", "completed", "failed", "cancelled"]
Action = Literal["approve", "reject", "answer", "edit", "complete", "fail"]
Mode = Literal["main", "tool", "interactive"]
CancelScope = Literal["top", "all"]
Decider = Literal["approver", "owner"]
Field = Literal["reason", "text", "content", "arguments", "output"]
Via = Literal["token", "oidc", "action_link", "callback"]
ApprovalStatus = Literal["pending", "approved", "rejected", "expired", "cancelled"]
PreviewFormat = Literal["text", "diff", "json"]
RuleScope = Literal["session", "agent", "tenant"]
EventType = Literal[
    "session_started", "user_message", "model_response", "approval_requested", "input_requested",
    "review_requested", "external_requested", "client_requested", "wait_expired", "decision",
    "approval_added", "interrupt_reminded", "interrupt_escalated", "tool_started", "tool_result", "frame_pushed", "frame_popped", "handoff", "agent_message",
    "output_rejected", "turn_paused", "turn_completed", "turn_failed", "turn_cancelled",
    "turn_interrupted", "session_forked", "definition_changed", "model_delta", "model_deltas_skipped",
]


def _empty() -> List[Any]:
    return []


_RFC3339 = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$")


def parse_time(value: Optional[str]) -> Optional[datetime.datetime]:
    """Parses an RFC 3339 time as Go writes it (up to nanoseconds, Z or an offset)."""
    if not value:
        return None
    m = _RFC3339.match(value)
    if m is None:
        raise ValueError(f"not an RFC 3339 time: {value!r}")
    base, frac, zone = m.groups()
    text = base + ("." + (frac + "000000")[:6] if frac else "") + ("+00:00" if zone == "Z" else zone)
    return datetime.datetime.fromisoformat(text)


def _convert(tp: Any, value: Any) -> Any:
    if value is None:
        return None
    origin = typing.get_origin(tp)
    if origin is typing.Union:  # Optional[X]
        inner = [a for a in typing.get_args(tp) if a is not type(None)]
        return _convert(inner[0], value) if len(inner) == 1 else value
    if origin in (list, List):
        (item,) = typing.get_args(tp)
        return [_convert(item, v) for v in value]
    if tp is datetime.datetime:
        return parse_time(value)
    if dataclasses.is_dataclass(tp):
        return from_dict(typing.cast(Any, tp), value)
    return value


T = typing.TypeVar("T")


def from_dict(cls: typing.Type[T], data: Dict[str, Any]) -> T:
    """Builds cls from a JSON object, converting nested objects and times."""
    hints = typing.get_type_hints(cls)
    kwargs = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        key = json_name(f)
        if key in data:
            kwargs[f.name] = _convert(hints[f.name], data[key])
    return cls(**kwargs)


def json_name(f: "dataclasses.Field[Any]") -> str:
    """The JSON key of a dataclass field: its name, or ``metadata["json"]``
    for a key Python reserves (``if`` is ``if_``)."""
    return str(f.metadata.get("json", f.name))


@dataclass
class PathStep:
    """One level of the nesting that led to an interrupt: the agent and the call it made."""

    agent: str = ""
    tool: str = ""
    call_id: str = ""


@dataclass
class Remote:
    """The task of a remote agent (over A2A) that asked an interrupt's question."""

    url: str = ""
    task_id: str = ""


@dataclass
class Choice:
    """One decision a person may make on an interrupt (see ``Ask``).

    ``field`` names the decision's field the choice takes (``reason``,
    ``text``, ``content``, ``arguments``, ``output``), if any; ``schema``
    is what that value must match, ``default`` where to start editing.
    """

    action: Optional[Action] = None
    label: str = ""
    field: Optional[Field] = None
    optional: bool = False
    schema: Any = None
    default: Any = None


@dataclass
class Ask:
    """How a person is asked about an interrupt, the same for every kind.

    Render any interrupt from it: ``label`` and ``subject`` for a heading,
    ``text`` to read (with the interrupt's ``arguments`` or ``output``),
    ``link`` to open, ``warning`` to check first, and a button per
    ``choices``; ``reply`` means the next message answers it. Decide with
    ``Client.choose``.
    """

    label: str = ""
    subject: str = ""
    text: str = ""
    link: str = ""
    decider: Optional[Decider] = None
    reply: bool = False
    warning: str = ""
    choices: List[Choice] = field(default_factory=_empty)


@dataclass
class Actor:
    """Who acted: a person (``via`` says how they signed in) or, with no ``via``, the program."""

    name: str = ""
    role: str = ""
    subject: str = ""
    issuer: str = ""
    groups: List[str] = field(default_factory=_empty)
    tenant: str = ""
    all_tenants: bool = False
    via: Optional[Via] = None
    override: bool = False


ExpiryAction = Literal["reject", "approve", "fail", "ask"]


@dataclass
class ScheduledStep:
    """A step of an interrupt's schedule: when it reminds or escalates, and when it fired (None: not yet)."""

    at: Optional[datetime.datetime] = None
    remind: bool = False
    escalate_to: List[str] = field(default_factory=_empty)
    hand_over: bool = False
    rule: str = ""
    fired_at: Optional[datetime.datetime] = None


@dataclass
class OnExpiry:
    """What happens at an approval's deadline with no decision, and the rule that chose it."""

    action: Optional[ExpiryAction] = None
    reason: str = ""
    question: str = ""
    rule: str = ""


@dataclass
class Approvers:
    """Who may approve a call: a member of ``groups``, ``count`` distinct people, not the requester."""

    groups: List[str] = field(default_factory=_empty)
    count: int = 0
    not_requester: bool = False


@dataclass
class ApprovalRule:
    """The calls for which ``condition`` (a CEL expression over args, or a rule's words) holds, and who approves them."""

    condition: str = ""
    groups: List[str] = field(default_factory=_empty)
    count: int = 0
    not_requester: bool = False


@dataclass
class Approval:
    """One person's approval of a call that needs several."""

    actor: Optional[Actor] = None
    at: Optional[datetime.datetime] = None


@dataclass
class Preview:
    """What an approval's call would do: its tool's dry run, computed before the pause.

    ``content`` is text (``format`` ``text`` or ``diff``: a unified diff)
    or a JSON value (``json``); ``error`` instead says why there is none
    (the dry run failed or timed out: it never blocks the decision).
    ``truncated`` says the content was cut.
    """

    format: Optional[PreviewFormat] = None
    content: Any = None
    truncated: bool = False
    error: str = ""


@dataclass
class SuggestedRule:
    """The standing rule a suggestion offers: a grant, and what it decides."""

    action: Optional[Action] = None
    tool: str = ""
    agent: str = ""
    scope: str = ""
    if_: str = field(default="", metadata={"json": "if"})
    duration: str = ""

    def grant(self) -> "RuleGrant":
        """The ``RuleGrant`` to send with an approval to take the suggestion."""
        return RuleGrant(scope=self.scope, if_=self.if_, duration=self.duration)


@dataclass
class Evidence:
    """What supports a suggestion: approvals of the call's shape by distinct people since a time."""

    approvals: int = 0
    people: int = 0
    since: Optional[datetime.datetime] = None


@dataclass
class Suggestion:
    """A standing rule the decision history supports (``Interrupt.suggestion``, docs/analytics.md)."""

    rule: Optional[SuggestedRule] = None
    evidence: Optional[Evidence] = None


@dataclass
class Interrupt:
    """Something a person (or a system) must decide before the session goes on.

    ``kind`` says which fields hold its text: ``message`` (approval,
    external), ``question`` (input), ``text`` (message, review).
    ``session_id`` and ``seq`` are filled in for every interrupt this client
    returns, so it can be decided on its own.
    """

    id: str = ""
    kind: Optional[Kind] = None
    path: List[PathStep] = field(default_factory=_empty)
    tool: str = ""
    arguments: Any = None
    message: str = ""
    preview: Optional[Preview] = None
    handle: str = ""
    result_schema: Any = None
    question: str = ""
    schema: Any = None
    url: str = ""
    text: str = ""
    remote: Optional[Remote] = None
    output: Any = None
    output_schema: Any = None
    in_doubt: bool = False
    idempotency_key: str = ""
    expires_at: Optional[datetime.datetime] = None
    schedule: List[ScheduledStep] = field(default_factory=_empty)
    on_expiry: Optional[OnExpiry] = None
    approvers: Optional[Approvers] = None
    required: int = 0
    approvals: List[Approval] = field(default_factory=_empty)
    requested_by: List[Actor] = field(default_factory=_empty)
    may_decide: Optional[bool] = None
    truncated: Optional[List[str]] = None
    ask: Optional[Ask] = None
    session_id: str = ""
    tenant: str = ""
    seq: int = 0
    paused_at: Optional[datetime.datetime] = None
    suggestion: Optional[Suggestion] = None


@dataclass
class ProviderError:
    """What a model provider answered when a model call failed."""

    provider: str = ""
    model: str = ""
    status: int = 0
    request_id: str = ""
    attempts: int = 0
    message: str = ""
    code: str = ""


@dataclass
class SessionError:
    """Why a session failed."""

    code: str = ""
    message: str = ""
    provider: Optional[ProviderError] = None


@dataclass
class StackFrame:
    """An agent on the session's stack (the root first)."""

    agent: str = ""
    mode: Optional[Mode] = None


@dataclass
class Remembered:
    """A decision the session remembers for later calls of a tool."""

    agent: str = ""
    tool: str = ""
    action: Optional[Action] = None
    reason: str = ""


@dataclass
class Usage:
    """Tokens the session's model calls used."""

    input_tokens: int = 0
    output_tokens: int = 0


@dataclass
class ForkOrigin:
    """Where a fork comes from: the session and the seq its copy ends at."""

    session_id: str = ""
    seq: int = 0


@dataclass
class DefinitionVersion:
    """The version of its agent a session runs under.

    ``hash`` is the content hash of the agent's definition (instructions,
    tools with their schemas and approval policies, the agents it reaches);
    ``current`` says whether it is the one deployed now. A paused session
    whose definition is not current resumes under its own, or under the
    new one with a ``definition_changed`` event when its agent says
    ``on_new_version: latest``.
    """

    hash: str = ""
    current: bool = False


@dataclass
class Session:
    """A conversation with an agent and where it stands.

    ``status`` is running, paused, completed, failed or cancelled; ``seq``
    is the last event's number, which a decision must quote. ``request`` is
    the user's last message: what the session is working on.
    """

    id: str = ""
    nonce: str = ""
    agent: str = ""
    status: Optional[Status] = None
    seq: int = 0
    output: Any = None
    error: Optional[SessionError] = None
    request: str = ""
    interrupts: List[Interrupt] = field(default_factory=_empty)
    stack: List[StackFrame] = field(default_factory=_empty)
    remembered: List[Remembered] = field(default_factory=_empty)
    metadata: Optional[Dict[str, Any]] = None
    owner: str = ""
    tenant: str = ""
    lease_owner: str = ""
    lease_expires_at: Optional[datetime.datetime] = None
    usage: Optional[Usage] = None
    created_at: Optional[datetime.datetime] = None
    updated_at: Optional[datetime.datetime] = None
    forked_from: Optional[ForkOrigin] = None
    definition: Optional[DefinitionVersion] = None
    truncated: Optional[List[str]] = None
    output_text: str = ""

    def __post_init__(self) -> None:
        for i in self.interrupts or []:
            i.session_id = i.session_id or self.id
            i.seq = i.seq or self.seq


@dataclass
class SessionsPage:
    """A page of sessions, most recently updated first."""

    sessions: List[Session] = field(default_factory=_empty)
    next_cursor: Optional[str] = None


@dataclass
class InterruptsPage:
    """A page of the approval inbox, most recently paused first."""

    interrupts: List[Interrupt] = field(default_factory=_empty)
    next_cursor: Optional[str] = None


@dataclass
class Event:
    """One entry of a session's event log (see docs/http-api.md, Events).

    Streamed text deltas (``model_delta``) and ``model_deltas_skipped``
    have seq 0: they are never stored.
    """

    seq: int = 0
    type: Optional[EventType] = None
    time: Optional[datetime.datetime] = None
    frame: str = ""
    agent: str = ""
    data: Any = None
    hash: str = ""
    prev: str = ""


@dataclass
class AgentTool:
    """A tool as an agent sees it: what a client needs to show a call and build a form."""

    name: str = ""
    description: str = ""
    parameters: Any = None
    kind: str = ""
    agent: str = ""
    runs: str = ""
    approval: str = ""
    confirmation: str = ""
    idempotent: bool = False
    approval_ttl: str = ""
    timeout: str = ""
    result_schema: Any = None
    wait_timeout: str = ""
    approvers: Optional[Approvers] = None
    approval_rules: List[ApprovalRule] = field(default_factory=_empty)


@dataclass
class Agent:
    """A configured agent and its tools."""

    name: str = ""
    tools: List[AgentTool] = field(default_factory=_empty)
    direct: bool = False


@dataclass
class Result:
    """The answer of a stateless run (POST /v1/agents/{agent}/invoke).

    ``continuation`` is the token to resume with while it is paused.
    """

    status: Optional[Status] = None
    output: str = ""
    interrupts: List[Interrupt] = field(default_factory=_empty)
    error: Optional[SessionError] = None
    continuation: str = ""


@dataclass
class Me:
    """Who the server takes the caller to be (``display_name``: in words, for a sign-in through an identity provider)."""

    name: str = ""
    display_name: str = ""
    role: str = ""
    tenant: str = ""
    all_tenants: bool = False
    auth: bool = False


@dataclass
class Checkpoint:
    """A signed statement that a session's log up to ``seq`` ends in ``hash`` (docs/audit.md)."""

    seq: int = 0
    hash: str = ""
    at: Optional[datetime.datetime] = None
    key: str = ""
    sig: str = ""


@dataclass
class Break:
    """Where a session's record breaks: the first event not as recorded, and why."""

    session: str = ""
    seq: int = 0
    what: str = ""


@dataclass
class AuditState:
    """What a session's record proves: how far its chain holds and its last signed checkpoint.

    ``summary`` says it in a line ("verified up to seq 42; signed checkpoint
    at seq 42, 2026-11-28 12:03:00 UTC by key k1").
    """

    session: str = ""
    events: int = 0
    verified_seq: int = 0
    broken: Optional[Break] = None
    checkpoint: Optional[Checkpoint] = None
    signed_seq: int = 0
    unchained: int = 0
    summary: str = ""


@dataclass
class CallbackReply:
    """Where a session went after a callback completed its call."""

    session_id: str = ""
    status: Optional[Status] = None


@dataclass
class Change:
    """An item of the cross-session feed (GET /v1/events).

    ``type`` is ``session`` (``session`` holds it, as a listing would) or
    ``resync`` (changes may have been missed: read the listings again).
    """

    type: str = ""
    session: Optional[Session] = None


@dataclass
class RuleGrant:
    """Turns a decision into a standing rule (``Decision.rule``, docs/rules.md).

    Later calls of the same tool that ``if_`` (a CEL condition over
    ``args``; JSON ``if``) matches are decided the same way, without
    asking, within ``scope`` (default ``agent``), for ``duration`` (``72h``,
    ``30d``; default 30 days or the tool's maximum).
    """

    scope: str = ""
    if_: str = field(default="", metadata={"json": "if"})
    duration: str = ""

    def to_dict(self) -> Dict[str, Any]:
        """The grant as the API takes it (empty fields left out)."""
        out = {"scope": self.scope, "if": self.if_, "duration": self.duration}
        return {k: v for k, v in out.items() if v}


@dataclass
class Rule:
    """A standing rule (``GET /v1/rules``): it decides matching calls of a tool for its grantor."""

    id: str = ""
    tool: str = ""
    agent: str = ""
    action: Optional[Action] = None
    if_: str = field(default="", metadata={"json": "if"})
    scope: str = ""
    session_id: str = ""
    interrupt_id: str = ""
    tenant: str = ""
    reason: str = ""
    granted_by: Optional[Actor] = None
    granted_at: Optional[datetime.datetime] = None
    expires_at: Optional[datetime.datetime] = None
    uses: int = 0
    revoked_at: Optional[datetime.datetime] = None
    revoked_by: Optional[Actor] = None


@dataclass
class Decision:
    """A decision on one interrupt. Build it with the class methods."""

    interrupt_id: str = ""
    action: Optional[Action] = None
    arguments: Any = None
    reason: str = ""
    text: str = ""
    content: Any = None
    output: Any = None
    remember: str = ""
    rule: Optional[RuleGrant] = None

    @classmethod
    def approve(cls, interrupt_id: str, arguments: Any = None, remember: str = "", rule: Optional[RuleGrant] = None) -> "Decision":
        """Approves a call, with replacement ``arguments`` if given (checked against the tool's schema);
        with ``rule``, also the tool's later matching calls (a standing rule)."""
        return cls(interrupt_id=interrupt_id, action="approve", arguments=arguments, remember=remember, rule=rule)

    @classmethod
    def reject(cls, interrupt_id: str, reason: str = "", remember: str = "", rule: Optional[RuleGrant] = None) -> "Decision":
        """Rejects a call (the model sees ``reason``), or sends a reviewed answer back;
        with ``rule``, also the tool's later matching calls (a standing rule)."""
        return cls(interrupt_id=interrupt_id, action="reject", reason=reason, remember=remember, rule=rule)

    @classmethod
    def answer(cls, interrupt_id: str, text: str) -> "Decision":
        """Answers a question (an ``input`` interrupt)."""
        return cls(interrupt_id=interrupt_id, action="answer", text=text)

    @classmethod
    def edit(cls, interrupt_id: str, output: Any) -> "Decision":
        """Replaces a reviewed answer (a ``review`` interrupt) with ``output``."""
        return cls(interrupt_id=interrupt_id, action="edit", output=output)

    @classmethod
    def complete(cls, interrupt_id: str, output: Any) -> "Decision":
        """Completes an ``external`` or ``client`` call with its result."""
        return cls(interrupt_id=interrupt_id, action="complete", output=output)

    @classmethod
    def fail(cls, interrupt_id: str, reason: str) -> "Decision":
        """Fails an ``external`` or ``client`` call; the model sees ``reason``."""
        return cls(interrupt_id=interrupt_id, action="fail", reason=reason)

    def to_dict(self) -> Dict[str, Any]:
        """The decision as the API takes it (empty fields left out)."""
        out: Dict[str, Any] = {"interrupt_id": self.interrupt_id, "action": self.action}
        for name in ("arguments", "reason", "text", "content", "output", "remember"):
            value = getattr(self, name)
            if value is not None and value != "":
                out[name] = value
        if self.rule is not None:
            out["rule"] = self.rule.to_dict()
        return out


@dataclass
class ErrorBody:
    """An error as the API answers it: its ``code`` and ``message``."""

    code: str = ""
    message: str = ""


@dataclass
class BulkResult:
    """What a bulk decision did to one call.

    ``status`` is what the session's decisions endpoint would have
    answered: 200 decided (``session_status`` is where the session stands
    now); 400, 403, 404, 409 (``already_decided``: someone decided it
    first), 410 refused, with ``error``; 503 busy, nothing recorded.
    """

    session_id: str = ""
    interrupt_id: str = ""
    status: int = 0
    error: Optional[ErrorBody] = None
    session_status: Optional[Status] = None


@dataclass
class BulkResponse:
    """A result per call of a bulk decision, and its ``batch`` id (on each decision event it made)."""

    results: List[BulkResult] = field(default_factory=_empty)
    batch: str = ""


@dataclass
class CallResult:
    """What an approved function did: its ``output`` (any JSON value), or the ``error`` it ended with."""

    output: Any = None
    error: str = ""


@dataclass
class CallApproval:
    """An approval request for a call your own code makes (POST /v1/approvals).

    ``status`` is ``pending`` until a person (or the expiry) decides:
    ``approved`` (run it with ``arguments``, maybe edited: ``edited``),
    ``rejected`` or ``expired`` (``reason``), ``cancelled``. ``interrupt`` is
    what it waits on: the approval, then your result. ``result`` is what
    you recorded.
    """

    id: str = ""
    session_id: str = ""
    status: Optional[ApprovalStatus] = None
    tool: str = ""
    arguments: Any = None
    edited: bool = False
    interrupt: Optional[Interrupt] = None
    reason: str = ""
    owner: str = ""
    actor: Optional[Actor] = None
    result: Optional[CallResult] = None
    metadata: Optional[Dict[str, Any]] = None
    created_at: Optional[datetime.datetime] = None
    expires_at: Optional[datetime.datetime] = None
    decided_at: Optional[datetime.datetime] = None


@dataclass
class Quantiles:
    """A median and a 90th percentile, in milliseconds."""

    p50: int = 0
    p90: int = 0


@dataclass
class AnalyticsRow:
    """One tool's, agent's or approver's approval figures (docs/analytics.md)."""

    key: str = ""
    pending: int = 0
    decisions: int = 0
    approved: int = 0
    rejected: int = 0
    edited: int = 0
    expired: int = 0
    by_rule: int = 0
    time_to_decision_ms: Optional[Quantiles] = None
    fast_approvals: int = 0
    longest_streak: int = 0


@dataclass
class Analytics:
    """The approval process's figures (``GET /v1/analytics``)."""

    by: str = ""
    since: Optional[datetime.datetime] = None
    until: Optional[datetime.datetime] = None
    read_time_ms: int = 0
    rows: List[AnalyticsRow] = field(default_factory=_empty)
