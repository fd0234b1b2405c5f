"""The dataclasses match api/openapi.json, the document the server serves.

A field the server adds, renames or retypes fails here, so the client
cannot drift from the API silently.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import pathlib
import typing
import unittest

import cairn_client as c

DOC = json.loads((pathlib.Path(__file__).resolve().parents[3] / "api" / "openapi.json").read_text())
SCHEMAS = DOC["components"]["schemas"]


def resolve(schema: dict) -> dict:
    """Follows a $ref to its component."""
    ref = schema.get("$ref")
    return SCHEMAS[ref.rsplit("/", 1)[-1]] if ref else schema


def prop(schema: dict, *path: str) -> dict:
    """Walks properties (and array items) down path, through $refs."""
    for name in path:
        schema = resolve(resolve(schema)["properties"][name])
        if "array" in _types(schema):
            schema = resolve(schema["items"])
    return schema


def _types(schema: dict) -> list:
    t = schema.get("type", [])
    return t if isinstance(t, list) else [t]


# Each dataclass and the schema it mirrors.
PAIRS = [
    (c.Session, SCHEMAS["Session"]),
    (c.SessionsPage, SCHEMAS["SessionsPage"]),
    (c.Interrupt, prop(SCHEMAS["InterruptsPage"], "interrupts")),
    (c.InterruptsPage, SCHEMAS["InterruptsPage"]),
    (c.PathStep, prop(SCHEMAS["Session"], "interrupts", "path")),
    (c.Ask, prop(SCHEMAS["Session"], "interrupts", "ask")),
    (c.Choice, prop(SCHEMAS["Session"], "interrupts", "ask", "choices")),
    (c.SessionError, prop(SCHEMAS["Session"], "error")),
    (c.ProviderError, prop(SCHEMAS["Session"], "error", "provider")),
    (c.StackFrame, prop(SCHEMAS["Session"], "stack")),
    (c.Remembered, prop(SCHEMAS["Session"], "remembered")),
    (c.Usage, prop(SCHEMAS["Session"], "usage")),
    (c.Event, prop(SCHEMAS["EventsBody"], "events")),
    (c.Agent, prop(SCHEMAS["AgentsBody"], "agents")),
    (c.AgentTool, prop(SCHEMAS["AgentsBody"], "agents", "tools")),
    (c.Result, SCHEMAS["Result"]),
    (c.Me, SCHEMAS["MeBody"]),
    (c.CallbackReply, SCHEMAS["CallbackReply"]),
    (c.AuditState, SCHEMAS["AuditBody"]),
    (c.ScheduledStep, prop(SCHEMAS["Session"], "interrupts", "schedule")),
    (c.OnExpiry, prop(SCHEMAS["Session"], "interrupts", "on_expiry")),
    (c.Break, prop(SCHEMAS["AuditBody"], "broken")),
    (c.Checkpoint, prop(SCHEMAS["AuditBody"], "checkpoint")),
    (c.Decision, prop(SCHEMAS["DecisionsRequest"], "decisions")),
    (c.CallApproval, SCHEMAS["CallApproval"]),
    (c.CallResult, prop(SCHEMAS["CallApproval"], "result")),
    (c.Preview, SCHEMAS["Preview"]),
    (c.ForkOrigin, prop(SCHEMAS["Session"], "forked_from")),
    (c.DefinitionVersion, prop(SCHEMAS["Session"], "definition")),
    (c.BulkResponse, SCHEMAS["BulkResponse"]),
    (c.BulkResult, prop(SCHEMAS["BulkResponse"], "results")),
    (c.ErrorBody, prop(SCHEMAS["BulkResponse"], "results", "error")),
    (c.Rule, SCHEMAS["Rule"]),
    (c.Suggestion, prop(SCHEMAS["InterruptsPage"], "interrupts", "suggestion")),
    (c.SuggestedRule, prop(SCHEMAS["InterruptsPage"], "interrupts", "suggestion", "rule")),
    (c.Evidence, prop(SCHEMAS["InterruptsPage"], "interrupts", "suggestion", "evidence")),
    (c.Analytics, SCHEMAS["Analytics"]),
    (c.AnalyticsRow, prop(SCHEMAS["Analytics"], "rows")),
    (c.Quantiles, prop(SCHEMAS["Analytics"], "rows", "time_to_decision_ms")),
    (c.RuleGrant, prop(SCHEMAS["DecisionsRequest"], "decisions", "rule")),
]

# Schemas whose fields are a subset of a dataclass's: the listings' shorter
# shapes, the interrupt of a session (no session_id, seq, paused_at).
SUBSETS = [
    (c.Session, prop(SCHEMAS["SessionsPage"], "sessions")),
    (c.Interrupt, prop(SCHEMAS["Session"], "interrupts")),
    (c.Interrupt, prop(SCHEMAS["Result"], "interrupts")),
]


def compatible(tp: typing.Any, schema: dict) -> bool:
    """Whether a field's Python type can hold what the schema allows."""
    if "anyOf" in schema:  # null or a reference
        (schema,) = [s for s in schema["anyOf"] if s.get("type") != "null"]
    schema = resolve(schema)
    if tp is typing.Any:
        return True
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    if typing.get_origin(tp) is typing.Union:
        return len(args) == 1 and compatible(args[0], schema)
    types = [t for t in _types(schema) if t != "null"]
    if not types:  # any JSON value
        return False
    (t,) = types
    if typing.get_origin(tp) is typing.Literal:
        # An enum: exactly the values the document lists (from the Go lists).
        return t == "string" and list(typing.get_args(tp)) == schema.get("enum")
    if typing.get_origin(tp) is list:
        return t == "array" and compatible(args[0], schema["items"])
    if schema.get("format") == "date-time":
        return tp is datetime.datetime
    want = {"string": str, "integer": int, "boolean": bool, "number": float}.get(t)
    if want is not None:
        return tp is want
    if t == "object":
        return dataclasses.is_dataclass(tp) or typing.get_origin(tp) is dict
    return False


class SchemaTest(unittest.TestCase):
    def test_fields_match_the_openapi_document(self) -> None:
        for cls, schema in PAIRS:
            with self.subTest(cls=cls.__name__):
                names = {c._types.json_name(f): f.name for f in dataclasses.fields(cls)}
                self.assertEqual(set(names), set(schema["properties"]), f"{cls.__name__} vs api/openapi.json")
                hints = typing.get_type_hints(cls)
                for name, sub in schema["properties"].items():
                    self.assertTrue(compatible(hints[names[name]], sub), f"{cls.__name__}.{name}: {hints[names[name]]} cannot hold {sub}")

    def test_listing_shapes_fit(self) -> None:
        for cls, schema in SUBSETS:
            with self.subTest(cls=cls.__name__):
                fields = {c._types.json_name(f) for f in dataclasses.fields(cls)}
                self.assertLessEqual(set(schema["properties"]), fields)

    def test_unknown_fields_are_ignored(self) -> None:
        s = c._types.from_dict(c.Session, {"id": "ses_1", "seq": 3, "brand_new": 1,
                                           "interrupts": [{"id": "int_1", "kind": "approval", "path": []}],
                                           "created_at": "2026-11-26T20:11:46.449629339Z"})
        self.assertEqual((s.id, s.interrupts[0].session_id, s.interrupts[0].seq), ("ses_1", "ses_1", 3))
        self.assertEqual(s.created_at.microsecond, 449629)
        self.assertEqual(s.created_at.utcoffset(), datetime.timedelta(0))
