package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
)

// The audit trail names the actor (or says anonymous), shows the
// arguments a person approved (and, when they replaced them, what the model
// asked for), an answer's text, a result, and never prints <nil>.
func TestDescribeDecisions(t *testing.T) {
	for _, c := range []struct{ data, want string }{
		{`{"action":"answer","tool":"deploy","text":"staging","actor":{}}`, `answer deploy by anonymous answer "staging"`},
		{`{"action":"approve","tool":"deploy","arguments":{"env":"prod"},"arguments_sha256":"abcdef0123456789","actor":{"name":"ana","role":"approver"}}`, `approve deploy by ana (approver) with {"env":"prod"}`},
		{`{"action":"approve","tool":"deploy","arguments":{"env":"prod"},"new_arguments":{"env":"staging"},"actor":{"name":"ana","role":"approver"}}`, `approve deploy by ana (approver) with {"env":"staging"} (the model asked for {"env":"prod"})`},
		{`{"action":"reject","tool":"deploy","arguments":{"env":"prod"},"reason":"Friday","actor":{"name":"ana"}}`, `reject deploy by ana of {"env":"prod"}: Friday`},
		{`{"action":"complete","tool":"pipeline","arguments":{"ref":"main"},"output":{"status":"passed"},"actor":{"name":"callback","role":"callback"}}`, `complete pipeline by callback (callback) of {"ref":"main"} output {"status":"passed"}`},
		{`{"action":"reject","tool":"deploy","reason":"no","remember":"session","actor":{"name":"ci"}}`, "reject deploy by ci: no [remember session]"},
	} {
		got := describe(cairn.Event{Type: "decision", Data: json.RawMessage(c.data)})
		if got != c.want || strings.Contains(got, "<nil>") {
			t.Errorf("describe(%s) = %q, want %q", c.data, got, c.want)
		}
	}
	got := describe(cairn.Event{Type: "input_requested", Data: json.RawMessage(`{"interrupt":{"id":"int_1","question":"Which environment?"}}`)})
	if got != "int_1 Which environment?" {
		t.Errorf("input_requested: %q", got)
	}
}
