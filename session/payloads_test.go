package session_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/session"
)

func TestDecodeEvent(t *testing.T) {
	t.Parallel()
	ev := session.Event{Seq: 4, Type: session.EventDecision, Data: json.RawMessage(
		`{"interrupt_id":"int_1","kind":"approval","call_id":"c1","tool":"deploy","action":"reject","reason":"not today","actor":{"name":"ana","role":"approver"}}`)}
	p, err := session.DecodeEvent(ev)
	d, ok := p.(*session.DecisionMade)
	if err != nil || !ok || d.Action != session.ActionReject || d.Kind != session.KindApproval || d.Actor.Name != "ana" || d.Reason != "not today" {
		t.Fatalf("decision: %#v, %v", p, err)
	}
	for typ, want := range map[session.EventType]session.Payload{
		session.EventApprovalRequested: &session.InterruptRequested{},
		session.EventInputRequested:    &session.InterruptRequested{},
		session.EventModelDelta:        &session.ModelDelta{},
		session.EventTurnInterrupted:   &session.TurnInterrupted{},
	} {
		if p, err := session.DecodeEvent(session.Event{Type: typ, Data: json.RawMessage(`{}`)}); err != nil || reflect.TypeOf(p) != reflect.TypeOf(want) {
			t.Errorf("%s: %T, %v", typ, p, err)
		}
	}
	if _, err := session.DecodeEvent(session.Event{Seq: 9, Type: "from_a_newer_server", Data: json.RawMessage(`{}`)}); err == nil || !strings.Contains(err.Error(), `unknown type "from_a_newer_server"`) {
		t.Fatalf("unknown type: %v", err)
	}
	if _, err := session.DecodeEvent(session.Event{Seq: 9, Type: session.EventToolResult, Data: json.RawMessage(`{"is_error":"yes"}`)}); err == nil || !strings.Contains(err.Error(), "event 9 (tool_result)") {
		t.Fatalf("data that does not fit: %v", err)
	}
}

// Whatever the bytes, DecodeEvent errs or decodes, and what it decodes
// encodes back to data that decodes the same.
func FuzzDecodeEvent(f *testing.F) {
	f.Add("decision", `{"action":"approve","actor":{"name":"a"}}`)
	f.Add("model_response", `{"message":{"role":"assistant","tool_calls":[{"id":"c","name":"x","arguments":"{}"}]}}`)
	f.Add("turn_paused", `{"interrupts":[{"id":"i","kind":"approval"}]}`)
	f.Add("tool_started", `{"arguments":{"a":1},"answers":[{"text":"x"}]}`)
	f.Fuzz(func(t *testing.T, typ, data string) {
		p, err := session.DecodeEvent(session.Event{Type: session.EventType(typ), Data: json.RawMessage(data)})
		if err != nil {
			return
		}
		again, err := json.Marshal(p)
		if err != nil {
			t.Fatalf("%s %s: decoded %#v does not encode: %v", typ, data, p, err)
		}
		q, err := session.DecodeEvent(session.Event{Type: session.EventType(typ), Data: again})
		if err != nil {
			t.Fatalf("%s: %s does not decode again: %v", typ, again, err)
		}
		if b, _ := json.Marshal(q); string(b) != string(again) {
			t.Fatalf("%s: %s then %s", typ, again, b)
		}
	})
}
