"""The Cairn HTTP API client."""

from __future__ import annotations

import datetime
import email.utils
import http.client
import json
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
import typing
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

from ._approval import F, Key, Message, require_approval
from ._sse import read_messages
from ._types import (
    Action,
    Analytics,
    Agent,
    AuditState,
    BulkResponse,
    CallApproval,
    CallbackReply,
    CancelScope,
    Change,
    Decision,
    Event,
    Interrupt,
    InterruptsPage,
    Me,
    Preview,
    Result,
    Rule,
    RuleGrant,
    Session,
    SessionsPage,
    from_dict,
)


class CairnError(Exception):
    """Every failure of a call: an error answer of the server, or no answer.

    ``status`` is the HTTP status (0 when no answer came), ``code`` the
    machine-readable code (``conflict``, ``already_decided``, ``not_found``,
    ``invalid_arguments``, ``session_busy``, ``stopping``, ``gone``, …; with
    status 0: ``unreachable`` when the server could not be reached,
    ``timeout`` when it did not answer within the client's timeout,
    ``connection`` when the connection broke mid-answer; ``invalid_response``
    for an answer that is not the JSON the API sends, with its start in
    ``message``) and ``message`` what went wrong and how to fix it. ``body``
    is the whole error answer: a spent continuation's 409 carries the
    earlier ``result``. ``retry_after`` is the server's Retry-After in
    seconds (a 503: nothing was recorded, send it again), else None.
    """

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        body: Optional[Dict[str, Any]] = None,
        retry_after: Optional[float] = None,
    ):
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.body = body or {}
        self.retry_after = retry_after

    @property
    def result(self) -> Optional[Result]:
        """The answer of the resume that spent a continuation (on its 409), if any."""
        r: Any = self.body.get("result")
        return from_dict(Result, typing.cast(Dict[str, Any], r)) if isinstance(r, dict) else None


class Client:
    """A client of one Cairn server.

    ``base_url`` is where ``cairn serve`` listens (``http://localhost:8080``);
    ``token`` is a bearer token when the server has ``auth``. ``timeout`` (in
    seconds) bounds each request; a decision or a new session answers after
    the turn it starts, so leave room for the model. ``retries`` (default 0)
    sends a request again, up to that many times, when the server answers
    503 (``session_busy``, ``stopping``: nothing was recorded), after its
    Retry-After or an exponential backoff from ``backoff`` seconds, capped
    at 30; any other failure is raised at once.
    """

    def __init__(
        self,
        base_url: str = "http://localhost:8080",
        token: Optional[str] = None,
        timeout: float = 300.0,
        retries: int = 0,
        backoff: float = 0.5,
    ):
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff

    # Sessions

    def create_session(
        self, agent: str, input: str, metadata: Optional[Dict[str, Any]] = None, wait: bool = True
    ) -> Session:
        """Starts a session with the user's first message.

        Answers after the first turn ends or pauses, or at once (status
        ``running``) with ``wait=False``.
        """
        body: Dict[str, Any] = {"agent": agent, "input": input}
        if metadata is not None:
            body["metadata"] = metadata
        if not wait:
            body["wait"] = False
        return from_dict(Session, self._call("POST", "/v1/sessions", body))

    def get_session(self, session_id: str) -> Session:
        """Reads a session, every value whole."""
        return from_dict(Session, self._call("GET", self._path("/v1/sessions/{}", session_id)))

    def list_sessions(
        self,
        status: Optional[str] = None,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
        agent: Optional[str] = None,
    ) -> SessionsPage:
        """One page of sessions, most recently updated first (long values cut: see ``truncated``);
        ``status`` and ``agent`` keep those only."""
        q = _query(status=status, agent=agent, limit=limit, cursor=cursor)
        return from_dict(SessionsPage, self._call("GET", "/v1/sessions" + q))

    def sessions(self, status: Optional[str] = None, page_size: int = 100, agent: Optional[str] = None) -> Iterator[Session]:
        """Every session (of that status, of that agent), walking the pages."""
        cursor = None
        while True:
            page = self.list_sessions(status=status, limit=page_size, cursor=cursor, agent=agent)
            yield from page.sessions
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    def send_message(self, session_id: str, text: str, seq: Optional[int] = None) -> Session:
        """Sends the user's next message to the top of the session's stack; answers after the turn."""
        body: Dict[str, Any] = {"text": text}
        if seq is not None:
            body["seq"] = seq
        return from_dict(Session, self._call("POST", self._path("/v1/sessions/{}/messages", session_id), body))

    def fork(self, session_id: str, seq: int = 0) -> Session:
        """Starts a new session from a point where this one paused or waited for a message.

        ``seq`` names the event (0: the latest such point); the fork's log is a
        copy up to there (nothing runs again) and ``forked_from`` says so. Decide
        it differently, or send it another message; the original is not changed.
        A seq that is no such point is ``CairnError`` 400 ``not_a_fork_point``.
        """
        return from_dict(Session, self._call("POST", self._path("/v1/sessions/{}/fork", session_id), {"seq": seq}))

    def cancel(self, session_id: str, scope: CancelScope = "all") -> Session:
        """Cancels the turn (``all``) or pops the top interactive agent (``top``)."""
        return from_dict(Session, self._call("POST", self._path("/v1/sessions/{}/cancel", session_id), {"scope": scope}))

    # Decisions

    def decide(self, session_id: str, seq: int, decisions: Iterable[Decision]) -> Session:
        """Answers interrupts of a paused session and answers after the resumed turn.

        ``seq`` is the session's seq when you decided: if the session moved
        on since, nothing changes and ``CairnError`` 409 ``conflict`` is
        raised (``already_decided`` names who decided first).
        """
        body = {"seq": seq, "decisions": [d.to_dict() for d in decisions]}
        return from_dict(Session, self._call("POST", self._path("/v1/sessions/{}/decisions", session_id), body))

    def preview(self, interrupt: Interrupt, arguments: Any = None) -> Preview:
        """Computes the preview (the tool's dry run) of a pending approval's call with edited ``arguments``.

        Nothing is decided or recorded; the arguments are checked as a
        decision's (``CairnError`` 400 ``invalid_arguments``), and the caller
        must be one who may approve the call. ``interrupt.preview`` is the
        one computed before the pause, with the call's own arguments.
        """
        path = self._path("/v1/sessions/{}/interrupts/{}/preview", interrupt.session_id, interrupt.id)
        return from_dict(Preview, self._call("POST", path, {"arguments": arguments}))

    def approve(self, interrupt: Interrupt, arguments: Any = None, remember: str = "", rule: Optional[RuleGrant] = None) -> Session:
        """Approves an interrupt's call, with replacement ``arguments`` if given; ``rule`` grants a standing rule."""
        return self._decide_one(interrupt, Decision.approve(interrupt.id, arguments, remember, rule))

    def reject(self, interrupt: Interrupt, reason: str = "", remember: str = "", rule: Optional[RuleGrant] = None) -> Session:
        """Rejects an interrupt's call (or a reviewed answer); the model sees ``reason``; ``rule`` grants a standing rule."""
        return self._decide_one(interrupt, Decision.reject(interrupt.id, reason, remember, rule))

    # Standing rules and analytics

    def analytics(
        self,
        by: str = "tool",
        since: Optional[datetime.datetime] = None,
        until: Optional[datetime.datetime] = None,
        read_time: str = "",
    ) -> Analytics:
        """The approval figures of the caller's tenant, a row per ``tool``, ``agent`` or ``approver``."""
        q = {"by": by}
        for name, at in (("since", since), ("until", until)):
            if at is not None:
                q[name] = at.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        if read_time:
            q["read_time"] = read_time
        return from_dict(Analytics, self._call("GET", "/v1/analytics?" + urllib.parse.urlencode(q)))

    def rules(self, tool: str = "", all: bool = False) -> List[Rule]:
        """The standing rules of the caller's tenant: live ones, or every one with ``all``."""
        q = {k: v for k, v in (("tool", tool), ("all", "true" if all else "")) if v}
        path = "/v1/rules" + ("?" + urllib.parse.urlencode(q) if q else "")
        rules: List[Dict[str, Any]] = self._call("GET", path)["rules"] or []
        return [from_dict(Rule, r) for r in rules]

    def revoke_rule(self, rule_id: str) -> Rule:
        """Revokes a standing rule at once, on every server sharing the store; returns it revoked."""
        return from_dict(Rule, self._call("DELETE", self._path("/v1/rules/{}", rule_id)))

    def answer(self, interrupt: Interrupt, text: str) -> Session:
        """Answers a question."""
        return self._decide_one(interrupt, Decision.answer(interrupt.id, text))

    def edit(self, interrupt: Interrupt, output: Any) -> Session:
        """Replaces a reviewed answer; it must fit the agent's output schema."""
        return self._decide_one(interrupt, Decision.edit(interrupt.id, output))

    def complete(self, interrupt: Interrupt, output: Any) -> Session:
        """Completes an ``external`` or ``client`` call with its result."""
        return self._decide_one(interrupt, Decision.complete(interrupt.id, output))

    def fail(self, interrupt: Interrupt, reason: str) -> Session:
        """Fails an ``external`` or ``client`` call; the model sees ``reason``."""
        return self._decide_one(interrupt, Decision.fail(interrupt.id, reason))

    def choose(self, interrupt: Interrupt, action: Action, value: Any = None) -> Session:
        """Makes one of the interrupt's choices (``interrupt.ask.choices``), whatever its kind.

        ``value`` is what the choice's field takes (a reason, a text answer,
        edited arguments, an answer object, an output); leave it out for a
        choice that takes nothing. A choice the interrupt does not offer
        raises ``ValueError`` naming those it does, and sends nothing.
        """
        offered = interrupt.ask.choices if interrupt.ask else []
        choice = next((ch for ch in offered if ch.action == action), None)
        if choice is None:
            names = ", ".join(str(ch.action) for ch in offered) or "no decision (reply with send_message)"
            raise ValueError(f"{interrupt.kind} {interrupt.id} takes {names}, not {action!r}")
        body: Dict[str, Any] = {"interrupt_id": interrupt.id, "action": action}
        if value is not None:
            if not choice.field:
                raise ValueError(f"{action} takes nothing more; leave value out")
            body[choice.field] = value
        elif choice.field and not choice.optional:
            raise ValueError(f"{action} needs its {choice.field}")
        if not interrupt.session_id:
            raise ValueError("the interrupt names no session: decide it with decide(session_id, seq, [...])")
        return from_dict(Session, self._call("POST", self._path("/v1/sessions/{}/decisions", interrupt.session_id),
                                             {"seq": interrupt.seq, "decisions": [body]}))

    def _decide_one(self, interrupt: Interrupt, decision: Decision) -> Session:
        if not interrupt.session_id:
            raise ValueError("the interrupt names no session: decide it with decide(session_id, seq, [...])")
        return self.decide(interrupt.session_id, interrupt.seq, [decision])

    def decide_many(self, decisions: Iterable[Tuple[str, Decision]]) -> BulkResponse:
        """Decides many pending calls across sessions in one request (``POST /v1/decisions``).

        ``decisions`` are ``(session_id, Decision)`` pairs. Each call is
        decided as through its session's decisions, at its current seq; its
        result says what happened (``BulkResult.status``), and one call's
        failure does not stop the others. A call someone decided first is
        ``409 already_decided``, never decided twice.
        """
        body = {"decisions": [{"session_id": sid, **d.to_dict()} for sid, d in decisions]}
        return from_dict(BulkResponse, self._call("POST", "/v1/decisions", body))

    def decide_selected(
        self,
        action: Action,
        *,
        tool: str = "",
        agent: str = "",
        kind: str = "",
        session_ids: Sequence[str] = (),
        reason: str = "",
        limit: int = 0,
    ) -> BulkResponse:
        """Approves or rejects every pending call that matches (those you may decide), newest first.

        ``tool``, ``agent`` (the agent making the call), ``kind`` (default
        ``approval``) and ``session_ids`` select; ``limit`` bounds them
        (default 100, at most 1000); ``reason`` goes with a rejection.
        """
        select: Dict[str, Any] = {}
        for key, value in (("tool", tool), ("agent", agent), ("kind", kind)):
            if value:
                select[key] = value
        if session_ids:
            select["session_ids"] = list(session_ids)
        body: Dict[str, Any] = {"select": select, "action": action}
        if reason:
            body["reason"] = reason
        if limit:
            body["limit"] = limit
        return from_dict(BulkResponse, self._call("POST", "/v1/decisions", body))

    # The inbox

    def list_interrupts(
        self, kind: Union[str, List[str], None] = None, limit: Optional[int] = None, cursor: Optional[str] = None
    ) -> InterruptsPage:
        """One page of pending interrupts across sessions, most recently paused first.

        ``kind`` keeps those kinds only (``"approval"``, ``["external", "client"]``).
        """
        if isinstance(kind, (list, tuple)):
            kind = ",".join(kind)
        q = _query(status="pending", kind=kind, limit=limit, cursor=cursor)
        return from_dict(InterruptsPage, self._call("GET", "/v1/interrupts" + q))

    def pending(self, kind: Union[str, List[str], None] = None, page_size: int = 100) -> Iterator[Interrupt]:
        """Every pending interrupt, walking the pages."""
        cursor = None
        while True:
            page = self.list_interrupts(kind=kind, limit=page_size, cursor=cursor)
            yield from page.interrupts
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    # Events

    def events(self, session_id: str, after: int = 0) -> List[Event]:
        """The session's stored events with a seq greater than ``after``."""
        path = self._path("/v1/sessions/{}/events", session_id) + _query(after=after or None)
        events: List[Dict[str, Any]] = self._call("GET", path)["events"] or []
        return [from_dict(Event, e) for e in events]

    def audit(self, session_id: str) -> AuditState:
        """What the session's record proves: how far its chain of event hashes holds, and its last signed checkpoint."""
        return from_dict(AuditState, self._call("GET", self._path("/v1/sessions/{}/audit", session_id)))

    def follow(self, session_id: str, after: int = 0, reconnect: bool = True) -> Iterator[Event]:
        """Follows the session's events live: the stored ones after ``after``, then each as it is recorded.

        The iterator never ends on its own (a session can always go on):
        break out of it. When the stream ends (the server's idle timeout, a
        restart, a dropped connection) it reconnects with ``Last-Event-ID``,
        so no stored event is missed or repeated; text deltas (seq 0) of a
        reply in flight may be. ``reconnect=False`` ends the iterator instead.
        """
        last = after
        failures = 0
        while True:
            headers = {"Accept": "text/event-stream"}
            if last:
                headers["Last-Event-ID"] = str(last)
            try:
                with self._open("GET", self._path("/v1/sessions/{}/events", session_id), headers=headers) as resp:
                    failures = 0
                    for msg in read_messages(resp):
                        ev = from_dict(Event, _decode(msg.data, "an event"))
                        if msg.id is not None:
                            last = int(msg.id)
                        yield ev
            except (CairnError, OSError, http.client.HTTPException) as err:
                # Reconnect only when the connection failed, never on an
                # error answer (404, 429, …): that would not go away.
                if isinstance(err, CairnError) and err.status != 0:
                    raise
                if not reconnect or failures >= 5:
                    if isinstance(err, CairnError):
                        raise
                    raise _no_answer("", "GET", self.base_url + self._path("/v1/sessions/{}/events", session_id), err) from err
                failures += 1
                time.sleep(0.1 * 2**failures)
                continue
            if not reconnect:
                return

    def changes(self) -> Iterator[Change]:
        """Follows every session (GET /v1/events): a ``session`` change each time one's status or
        pending interrupts may have changed, a ``resync`` when changes may have been missed.

        Open it first, then read the listings: no change falls between.
        The iterator ends when the server closes the stream.
        """
        try:
            with self._open("GET", "/v1/events", headers={"Accept": "text/event-stream"}) as resp:
                for msg in read_messages(resp):
                    if msg.event == "session":
                        yield Change("session", from_dict(Session, _decode(msg.data, "a change")))
                    else:
                        yield Change(msg.event)
        except (OSError, http.client.HTTPException) as err:
            raise _no_answer("", "GET", self.base_url + "/v1/events", err) from err

    # Agents, stateless runs, callbacks

    def agents(self) -> List[Agent]:
        """The configured agents and their tools."""
        agents: List[Dict[str, Any]] = self._call("GET", "/v1/agents")["agents"] or []
        return [from_dict(Agent, a) for a in agents]

    def invoke(
        self,
        agent: str,
        input: Optional[str] = None,
        continuation: Optional[str] = None,
        decisions: Optional[Iterable[Decision]] = None,
    ) -> Result:
        """Runs a turn with nothing kept on the server: start with ``input``; resume a
        paused result with its ``continuation`` and ``decisions``. A continuation resumes once."""
        body: Dict[str, Any] = {}
        if input is not None:
            body["input"] = input
        if continuation is not None:
            body["continuation"] = continuation
        if decisions is not None:
            body["decisions"] = [d.to_dict() for d in decisions]
        return from_dict(Result, self._call("POST", self._path("/v1/agents/{}/invoke", agent), body))

    def callback(self, url: str, output: Any = None, error: Optional[str] = None) -> CallbackReply:
        """Completes a waiting call through the signed URL its tool was given
        (``CAIRN_CALLBACK_URL``), with ``output`` or an ``error`` text. The URL is the credential."""
        body: Dict[str, Any] = {"error": error} if error is not None else {"output": output}
        return from_dict(CallbackReply, self._call("POST", url, body, auth=False))

    # Approvals of your own code's calls

    def request_approval(
        self,
        tool: str,
        arguments: Optional[Dict[str, Any]] = None,
        message: Optional[str] = None,
        schema: Optional[Dict[str, Any]] = None,
        expires_in: Optional[str] = None,
        idempotency_key: Optional[str] = None,
        metadata: Optional[Dict[str, Any]] = None,
    ) -> CallApproval:
        """Asks a person to approve a call your code makes (POST /v1/approvals); answers it ``pending``.

        The same ``idempotency_key`` again answers the same request.
        ``expires_in`` is a duration like ``"1h"``.
        """
        body: Dict[str, Any] = {"tool": tool, "arguments": arguments or {}}
        for k, v in (("message", message), ("schema", schema), ("expires_in", expires_in),
                     ("idempotency_key", idempotency_key), ("metadata", metadata)):
            if v:
                body[k] = v
        return from_dict(CallApproval, self._call("POST", "/v1/approvals", body))

    def get_approval(self, approval_id: str, wait: Optional[str] = None) -> CallApproval:
        """Reads an approval request; with ``wait`` (like ``"30s"``, at most 60s) answers once it is decided or the wait ends."""
        path = self._path("/v1/approvals/{}", approval_id) + _query(wait=wait)
        return from_dict(CallApproval, self._call("GET", path))

    def record_result(self, approval_id: str, output: Any = None, error: Optional[str] = None) -> CallApproval:
        """Records what the approved function did: its ``output``, or an ``error`` text. Once."""
        body: Dict[str, Any] = {"error": error} if error is not None else {"output": output}
        return from_dict(CallApproval, self._call("POST", self._path("/v1/approvals/{}/result", approval_id), body))

    def require_approval(
        self,
        tool: Optional[str] = None,
        message: Message = None,
        schema: Optional[Dict[str, Any]] = None,
        expires_in: Optional[str] = None,
        idempotency_key: Key = None,
        metadata: Optional[Dict[str, Any]] = None,
    ) -> Callable[[F], F]:
        """A decorator: the function runs only after a person approves the call (see ``cairn_client.require_approval``)."""
        return require_approval(self, tool=tool, message=message, schema=schema, expires_in=expires_in,
                                idempotency_key=idempotency_key, metadata=metadata)

    def me(self) -> Me:
        """Who the server takes this client's token to be."""
        return from_dict(Me, self._call("GET", "/v1/me"))

    def health(self) -> str:
        """The server's status (``ok``)."""
        return self._call("GET", "/healthz")["status"]

    # Plumbing

    @staticmethod
    def _path(template: str, *parts: str) -> str:
        return template.format(*(urllib.parse.quote(p, safe="") for p in parts))

    def _open(self, method: str, path: str, body: Any = None, headers: Optional[Dict[str, str]] = None, auth: bool = True):
        url = path if path.startswith(("http://", "https://")) else self.base_url + path
        data = None
        hdrs = {"Accept": "application/json", "User-Agent": "cairn-client-python/0.1"}
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            hdrs["Content-Type"] = "application/json"
        if auth and self.token:
            hdrs["Authorization"] = "Bearer " + self.token
        hdrs.update(headers or {})
        req = urllib.request.Request(url, data=data, method=method, headers=hdrs)
        attempt = 0
        while True:
            try:
                return urllib.request.urlopen(req, timeout=self.timeout)
            except urllib.error.HTTPError as err:
                try:
                    raw = err.read()
                except (OSError, http.client.HTTPException):
                    raw = b""
                err.close()
                failure = _error_from(err.code, raw, _retry_after(err.headers.get("Retry-After")))
            except urllib.error.URLError as err:
                if isinstance(err.reason, (TimeoutError, socket.timeout)):
                    raise _no_answer("timeout", method, url, err.reason) from err
                raise CairnError(0, "unreachable", f"{method} {url}: {err.reason}") from err
            except (OSError, http.client.HTTPException) as err:
                raise _no_answer("", method, url, err) from err
            if failure.status != 503 or attempt >= self.retries:
                raise failure from None
            attempt += 1
            time.sleep(min(failure.retry_after if failure.retry_after is not None else self.backoff * 2 ** (attempt - 1), 30.0))

    def _call(self, method: str, path: str, body: Any = None, auth: bool = True) -> Any:
        resp = self._open(method, path, body, auth=auth)
        try:
            with resp:
                raw = resp.read()
        except (OSError, http.client.HTTPException) as err:
            raise _no_answer("", method, resp.geturl(), err) from err
        if not raw:
            return {}
        try:
            return json.loads(raw)
        except ValueError:
            raise CairnError(
                resp.status,
                "invalid_response",
                f"{method} {resp.geturl()}: the answer is not JSON: {_excerpt(raw)}",
            ) from None


def _query(**params: Any) -> str:
    kept = {k: v for k, v in params.items() if v is not None and v != ""}
    return "?" + urllib.parse.urlencode(kept) if kept else ""


def _error_from(status: int, raw: bytes, retry_after: Optional[float] = None) -> CairnError:
    try:
        body = json.loads(raw)
        err = body["error"]
        return CairnError(status, err.get("code", ""), err.get("message", ""), body, retry_after)
    except (ValueError, KeyError, TypeError, AttributeError):
        return CairnError(status, "http_error", _excerpt(raw) or f"HTTP {status}", retry_after=retry_after)


def _decode(data: str, what: str) -> Any:
    """A stream message's JSON; CairnError invalid_response when it is not JSON."""
    try:
        return json.loads(data)
    except ValueError:
        raise CairnError(0, "invalid_response", f"{what} in the stream is not JSON: {_excerpt(data.encode())}") from None


def _no_answer(code: str, method: str, url: str, err: BaseException) -> CairnError:
    """A CairnError for a request that got no (whole) answer: timed out, or the connection broke."""
    if not code:
        code = "timeout" if isinstance(err, (TimeoutError, socket.timeout)) else "connection"
    what = {"timeout": "no answer in time", "connection": "the connection broke"}.get(code, code)
    return CairnError(0, code, f"{method} {url}: {what}: {err}")


def _retry_after(value: Optional[str]) -> Optional[float]:
    """Retry-After in seconds (a number of seconds, or an HTTP date), or None."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _excerpt(raw: bytes, limit: int = 200) -> str:
    """The start of an answer's body, as text, for an error message."""
    text = raw.decode("utf-8", "replace").strip()
    return text if len(text) <= limit else text[:limit] + "…"
