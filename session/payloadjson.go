package session

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/cairnhq/cairn/model"
)

// AppendPayload appends the JSON encoding/json writes for payload, for the
// payloads every turn records (session_started, user_message,
// model_response, tool_started, tool_result, turn_completed) in their
// common form; ok is false for any other payload, or one with a field it
// leaves to a reflective encoder (metadata, an actor, a call, tools,
// provider data, answers, a wait, output JSON, arguments that are not
// compact and free of the characters encoding/json escapes), and b is
// then unchanged.
//
// Why by hand: the engine encodes several payloads a step, and the
// reflective encoders were a tenth of BenchmarkTurn. encoding/json stays
// the reference: TestAppendPayloadAgrees, FuzzAppendPayload, and the
// engine's FuzzInputSequences, which compares every event it records.
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
	}
	return b, false
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
