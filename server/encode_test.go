package server

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/cairnhq/cairn/session"
)

// A session answer is written without encoding/json's Encoder; the bytes
// are the Encoder's (as the server set it up: no HTML escaping of its
// own), for sessions plain and odd: HTML, U+2028, invalid UTF-8, spaced
// raw JSON, interrupts with the caller's may_decide, output JSON.
func TestSessionAnswerIsTheEncoders(t *testing.T) {
	at := time.Date(2026, 11, 29, 2, 30, 0, 123456789, time.UTC)
	yes := true
	sessions := []*session.Session{
		{ID: "ses_1", Agent: "main", Status: session.StatusCompleted, Seq: 7, Output: "done <b>&</b> \u2028 \xff",
			Stack: []session.StackFrame{{Agent: "main", Mode: session.ModeMain}}, Remembered: []session.Remembered{}, CreatedAt: at, UpdatedAt: at},
		{ID: "ses_2", Agent: "main", Status: session.StatusPaused, Seq: 4, CreatedAt: at, UpdatedAt: at.In(time.FixedZone("", 5400)),
			Interrupts: []session.Interrupt{{ID: "int_1", Kind: session.KindApproval, Tool: "deploy", Arguments: json.RawMessage(`{"env": "prod <1>"}`),
				Message: "Deploy <prod>?", MayDecide: &yes, ExpiresAt: &at}},
			Metadata: map[string]any{"b": 1, "a": "<x>"}},
		{ID: "ses_3", Agent: "main", Status: session.StatusCompleted, OutputJSON: json.RawMessage(`{ "n" : [1, 2] }`), Output: `{"n":[1,2]}`,
			CreatedAt: at, UpdatedAt: at},
	}
	for _, s := range sessions {
		rec := httptest.NewRecorder()
		got, ok := encodeJSON(rec, s)
		if !ok {
			t.Fatalf("%s: not encoded", s.ID)
		}
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want.Bytes()) {
			t.Errorf("%s:\n got: %s\nwant: %s", s.ID, got, want.Bytes())
		}
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s: content type %q", s.ID, ct)
		}
	}
}
