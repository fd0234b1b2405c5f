package session

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/cairnhq/cairn/model"
)

// AppendPayload appends the JSON encoding/json writes for payload, for the
// payloads every turn records (session_started, user_message,
// model_response, tool_started, tool_result, turn_completed) and those
// every pause records (the interrupt's request, turn_paused) in their
// common form; ok is false for any other payload, or one with a field it
// leaves to a reflective encoder (metadata, an actor, a call, tools,
// provider data, answers, a wait, output JSON, arguments that are not
// compact and free of the characters encoding/json escapes, an interrupt
// with more than arguments and a message: appendRecorded), and b is then
// unchanged.
//
// Why by hand: the engine encodes several payloads a step, and the
// reflective encoders were a tenth of BenchmarkTurn. encoding/json stays
// the reference: TestAppendPayloadAgrees, FuzzAppendPayload,
// TestPausePayloadsEncodeAsEncodingJSON, and the engine's
// FuzzInputSequences, which compares every event it records.
func AppendPayload(b []byte, payload Payload) ([]byte, bool) {
	switch p := payload.(type) {
	case *SessionStarted:
		if len(p.Metadata) > 0 {
			return b, false
		}
		b = appendString(append(b, `{"session_id":`...), p.SessionID)
		if p.Nonce != "" {
			b = appendString(append(b, `,"nonce":`...), p.Nonce)
		}
		b = appendString(append(b, `,"agent":`...), p.Agent)
		b = appendString(append(b, `,"frame":`...), p.Frame)
		if p.Owner != "" {
			b = appendString(append(b, `,"owner":`...), p.Owner)
		}
		if p.Tenant != "" {
			b = appendString(append(b, `,"tenant":`...), p.Tenant)
		}
		if p.Definition != "" {
			b = appendString(append(b, `,"definition":`...), p.Definition)
		}
		return append(b, '}'), true
	case *UserMessage:
		if !p.Actor.IsZero() || p.Call != nil || len(p.Tools) > 0 {
			return b, false
		}
		return append(appendString(append(b, `{"text":`...), p.Text), '}'), true
	case *ModelResponse:
		m := &p.Message
		if m.Provider != nil {
			return b, false
		}
		b = appendString(append(b, `{"message":{"role":`...), string(m.Role))
		if m.Content != "" {
			b = appendString(append(b, `,"content":`...), m.Content)
		}
		if len(m.ToolCalls) > 0 {
			b = append(b, `,"tool_calls":[`...)
			for i, c := range m.ToolCalls {
				if i > 0 {
					b = append(b, ',')
				}
				b = appendString(append(b, `{"id":`...), c.ID)
				b = appendString(append(b, `,"name":`...), c.Name)
				b = append(appendString(append(b, `,"arguments":`...), c.Arguments), '}')
			}
			b = append(b, ']')
		}
		if m.ToolCallID != "" {
			b = appendString(append(b, `,"tool_call_id":`...), m.ToolCallID)
		}
		if m.IsError {
			b = append(b, `,"is_error":true`...)
		}
		if m.Agent != "" {
			b = appendString(append(b, `,"agent":`...), m.Agent)
		}
		return append(appendUsage(append(b, `},"usage":`...), p.Usage), '}'), true
	case *ToolStarted:
		if len(p.Answers) > 0 || p.WaitID != "" || !plainRaw(p.Arguments) {
			return b, false
		}
		b = appendString(append(b, `{"call_id":`...), p.CallID)
		b = appendString(append(b, `,"tool":`...), p.Tool)
		b = append(append(b, `,"arguments":`...), p.Arguments...)
		return append(appendString(append(b, `,"idempotency_key":`...), p.IdempotencyKey), '}'), true
	case *ToolResult:
		b = appendString(append(b, `{"call_id":`...), p.CallID)
		b = appendString(append(b, `,"tool":`...), p.Tool)
		b = appendString(append(b, `,"content":`...), p.Content)
		if p.IsError {
			b = append(b, `,"is_error":true`...)
		}
		return append(b, '}'), true
	case *TurnCompleted:
		if len(p.OutputJSON) > 0 {
			return b, false
		}
		return append(appendString(append(b, `{"output":`...), p.Output), '}'), true
	case *InterruptRequested:
		// As MarshalJSON writes it: the outer "interrupt" (recorded)
		// comes after the fields of the embedded struct.
		start := len(b)
		b = appendString(append(b, `{"call_id":`...), p.CallID)
		if p.Held {
			b = append(b, `,"held":true`...)
		}
		if len(p.State) > 0 || p.Asked {
			return b[:start], false
		}
		b, ok := appendRecorded(append(b, `,"interrupt":`...), &p.Interrupt)
		if !ok {
			return b[:start], false
		}
		return append(b, '}'), true
	case *TurnPaused:
		start := len(b)
		b = append(b, '{')
		if len(p.Created) > 0 {
			b = appendList(append(b, `"created":`...), p.Created, appendString)
			b = append(b, ',')
		}
		b = append(b, `"interrupts":`...)
		b, ok := appendInterruptList(b, p.Interrupts, false)
		if !ok {
			return b[:start], false
		}
		return append(b, '}'), true
	}
	return b, false
}

// appendRecorded appends in as the log and the stored summaries keep an
// interrupt (recorded: without its Ask) when it is in its common form: no
// preview, schema, question, output, schedule, approvers or approvals,
// arguments written as they are (plainRaw), a time encoding/json accepts.
// ok is false for any other, which the callers leave to the reflective
// encoder.
func appendRecorded(b []byte, in *Interrupt) ([]byte, bool) {
	if in.MayDecide != nil {
		return b, false
	}
	return appendInterrupt(b, in, false)
}

// appendInterrupt is appendRecorded, and with withAsk the interrupt as
// Interrupt.MarshalJSON writes it: its may_decide, if set, and its Ask.
func appendInterrupt(b []byte, in *Interrupt, withAsk bool) ([]byte, bool) {
	if in.Preview != nil || in.Handle != "" || len(in.ResultSchema) > 0 || in.Question != "" || len(in.Schema) > 0 || in.URL != "" ||
		in.Text != "" || in.Remote != nil || len(in.Output) > 0 || len(in.OutputSchema) > 0 || len(in.Schedule) > 0 || in.OnExpiry != nil ||
		in.Approvers != nil || in.Required != 0 || len(in.Approvals) > 0 || len(in.RequestedBy) > 0 ||
		len(in.Truncated) > 0 || len(in.Arguments) > 0 && !plainRaw(in.Arguments) || in.ExpiresAt != nil && !jsonTime(*in.ExpiresAt) {
		return b, false
	}
	start := len(b)
	b = appendString(append(b, `{"id":`...), in.ID)
	b = appendString(append(b, `,"kind":`...), string(in.Kind))
	b = appendList(append(b, `,"path":`...), in.Path, func(b []byte, p PathStep) []byte {
		b = appendString(append(b, `{"agent":`...), p.Agent)
		b = appendString(append(b, `,"tool":`...), p.Tool)
		return append(appendString(append(b, `,"call_id":`...), p.CallID), '}')
	})
	if in.Tool != "" {
		b = appendString(append(b, `,"tool":`...), in.Tool)
	}
	if len(in.Arguments) > 0 {
		b = append(append(b, `,"arguments":`...), in.Arguments...)
	}
	if in.Message != "" {
		b = appendString(append(b, `,"message":`...), in.Message)
	}
	b = strconv.AppendBool(append(b, `,"in_doubt":`...), in.InDoubt)
	if in.IdempotencyKey != "" {
		b = appendString(append(b, `,"idempotency_key":`...), in.IdempotencyKey)
	}
	if in.ExpiresAt == nil {
		b = append(b, `,"expires_at":null`...)
	} else {
		b = appendTime(append(b, `,"expires_at":`...), *in.ExpiresAt)
	}
	if in.MayDecide != nil {
		b = strconv.AppendBool(append(b, `,"may_decide":`...), *in.MayDecide)
	}
	if withAsk {
		ask := in.Ask()
		var ok bool
		if b, ok = appendAsk(append(b, `,"ask":`...), &ask); !ok {
			return b[:start], false
		}
	}
	return append(b, '}'), true
}

// appendAsk appends a as encoding/json writes it; ok is false when a
// choice's schema or default is not written as it is (plainRaw).
func appendAsk(b []byte, a *Ask) ([]byte, bool) {
	b = appendString(append(b, `{"label":`...), a.Label)
	if a.Subject != "" {
		b = appendString(append(b, `,"subject":`...), a.Subject)
	}
	b = appendString(append(b, `,"text":`...), a.Text)
	if a.Link != "" {
		b = appendString(append(b, `,"link":`...), a.Link)
	}
	b = appendString(append(b, `,"decider":`...), string(a.Decider))
	if a.Reply {
		b = append(b, `,"reply":true`...)
	}
	if a.Warning != "" {
		b = appendString(append(b, `,"warning":`...), a.Warning)
	}
	if len(a.Choices) > 0 {
		b = append(b, `,"choices":[`...)
		for i, c := range a.Choices {
			if len(c.Schema) > 0 && !plainRaw(c.Schema) || len(c.Default) > 0 && !plainRaw(c.Default) {
				return b, false
			}
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(append(b, `{"action":`...), string(c.Action))
			b = appendString(append(b, `,"label":`...), c.Label)
			if c.Field != "" {
				b = appendString(append(b, `,"field":`...), string(c.Field))
			}
			if c.Optional {
				b = append(b, `,"optional":true`...)
			}
			if len(c.Schema) > 0 {
				b = append(append(b, `,"schema":`...), c.Schema...)
			}
			if len(c.Default) > 0 {
				b = append(append(b, `,"default":`...), c.Default...)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	return append(b, '}'), true
}

// appendInterruptList is appendInterrupt for a list (recorded, or with
// their Asks), null when nil; ok is false when any interrupt is not in its
// common form.
func appendInterruptList(b []byte, ins []Interrupt, withAsk bool) ([]byte, bool) {
	if ins == nil {
		return append(b, "null"...), true
	}
	b = append(b, '[')
	for i := range ins {
		if i > 0 {
			b = append(b, ',')
		}
		var ok bool
		if withAsk {
			b, ok = appendInterrupt(b, &ins[i], true)
		} else {
			b, ok = appendRecorded(b, &ins[i])
		}
		if !ok {
			return b, false
		}
	}
	return append(b, ']'), true
}

func appendUsage(b []byte, u model.Usage) []byte {
	b = strconv.AppendInt(append(b, `{"input_tokens":`...), u.InputTokens, 10)
	return append(strconv.AppendInt(append(b, `,"output_tokens":`...), u.OutputTokens, 10), '}')
}

// plainRaw reports whether encoding/json writes raw as it is: valid JSON
// with nothing its compaction removes (white space) or its HTML escaping
// changes (<, >, &, U+2028, U+2029). The engine's canonical arguments
// mostly are; any doubt leaves them to encoding/json.
func plainRaw(raw json.RawMessage) bool {
	return len(raw) > 0 && !bytes.ContainsAny(raw, " \t\n\r<>&\u2028\u2029") && json.Valid(raw)
}
