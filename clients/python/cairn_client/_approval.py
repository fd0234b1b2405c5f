"""Approvals of your own code's calls: the ``require_approval`` decorator."""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import typing
from typing import Any, Callable, Dict, Optional, TypeVar, Union

from ._types import CallApproval

if typing.TYPE_CHECKING:
    from ._client import Client

F = TypeVar("F", bound=Callable[..., Any])

def _poll(client: "Client") -> str:
    """How long one GET /v1/approvals/{id}?wait= waits: the server's limit
    (60 s), within the client's own timeout."""
    return f"{max(1, min(60, int(client.timeout) - 5))}s"


class CairnRejected(Exception):
    """The call was not approved: rejected (``reason`` says why), expired or cancelled.

    ``approval`` is the request as it ended.
    """

    def __init__(self, approval: CallApproval):
        self.approval = approval
        self.status = approval.status or ""
        self.reason = approval.reason or self.status
        super().__init__(f"{approval.tool} was {self.status}: {self.reason}")


Message = Union[str, Callable[[Dict[str, Any]], str], None]
Key = Union[str, Callable[[Dict[str, Any]], str], None]


def require_approval(
    client: "Client",
    tool: Optional[str] = None,
    message: Message = None,
    schema: Optional[Dict[str, Any]] = None,
    expires_in: Optional[str] = None,
    idempotency_key: Key = None,
    metadata: Optional[Dict[str, Any]] = None,
) -> Callable[[F], F]:
    """Wraps a function (sync or async) so that it runs only after a person approves the call.

    Each call asks Cairn (POST /v1/approvals) with the call's arguments by
    name, waits for the decision, and runs the function with the approved
    arguments (an approver may have edited them); a rejection, an expiry or
    a cancellation raises ``CairnRejected``. What the function returned (or
    raised) is recorded as the request's result. ``message`` is what the
    approver reads: a ``str.format`` template over the arguments, or a
    function of them. ``idempotency_key`` (a string or a function of the
    arguments) names the request: a caller that restarts and calls again
    with the same key finds the same request, and once its result is
    recorded gets that result back instead of running the function twice.
    """

    def wrap(fn: F) -> F:
        sig = inspect.signature(fn)
        for p in sig.parameters.values():
            if p.kind in (p.VAR_POSITIONAL, p.POSITIONAL_ONLY):
                raise TypeError(f"require_approval: {fn.__name__}'s parameter {p.name} has no name to approve it by; use named parameters")
        name = tool or fn.__name__

        def ask(args: Any, kwargs: Any) -> CallApproval:
            bound = sig.bind(*args, **kwargs)
            bound.apply_defaults()
            arguments: Dict[str, Any] = {}
            for k, v in bound.arguments.items():
                if sig.parameters[k].kind == inspect.Parameter.VAR_KEYWORD:
                    arguments.update(v)
                else:
                    arguments[k] = v
            text = message(arguments) if callable(message) else message.format(**arguments) if message else None
            key = idempotency_key(arguments) if callable(idempotency_key) else idempotency_key
            a = client.request_approval(name, arguments, message=text, schema=schema, expires_in=expires_in,
                                        idempotency_key=key, metadata=metadata)
            while a.status == "pending":
                a = client.get_approval(a.id, wait=_poll(client))
            if a.status != "approved":
                raise CairnRejected(a)
            return a

        def recorded(a: CallApproval) -> Any:
            # The function ran for this approval already (a caller that
            # restarted): its result, never a second run.
            assert a.result is not None
            if a.result.error:
                raise RuntimeError(f"{name} failed when it ran for approval {a.id}: {a.result.error}")
            return a.result.output

        def record(a: CallApproval, value: Any = None, error: Optional[BaseException] = None) -> None:
            if error is not None:
                client.record_result(a.id, error=f"{type(error).__name__}: {error}")
                return
            try:
                json.dumps(value)
                out = value
            except (TypeError, ValueError):
                out = repr(value)
            client.record_result(a.id, output=out)

        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def run_async(*args: Any, **kwargs: Any) -> Any:
                a = await asyncio.get_running_loop().run_in_executor(None, ask, args, kwargs)
                if a.result is not None:
                    return recorded(a)
                try:
                    value = await fn(**dict(a.arguments or {}))
                except BaseException as err:
                    await asyncio.get_running_loop().run_in_executor(None, functools.partial(record, a, error=err))
                    raise
                await asyncio.get_running_loop().run_in_executor(None, record, a, value)
                return value

            return typing.cast(F, run_async)

        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            a = ask(args, kwargs)
            if a.result is not None:
                return recorded(a)
            try:
                value = fn(**dict(a.arguments or {}))
            except BaseException as err:
                record(a, error=err)
                raise
            record(a, value)
            return value

        return typing.cast(F, run)

    return wrap
