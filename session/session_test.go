package session

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/cairnhq/cairn/model"
)

// stdlibJSON is the session as encoding/json writes it: what
// Session.MarshalJSON wrote before it took a faster encoder, and must
// still write byte for byte (summaries are compared and stored).
func stdlibJSON(s Session) ([]byte, error) { return json.Marshal(s.shape()) }

// fuzzSession fills every kind of field a summary has from a few fuzzed
// values: text a model or user wrote (any bytes: HTML, control characters,
// invalid UTF-8), raw JSON a tool or model gave, numbers of any size.
func fuzzSession(text, raw string, n float64, withOutput bool) Session {
	at := time.Date(2026, 11, 27, 1, 2, 3, 456789000, time.UTC)
	s := Session{
		ID: "ses_" + text, Agent: "main", Status: StatusPaused, Seq: int64(len(text)),
		Output: text, Request: text, Owner: text, LeaseOwner: text, LeaseExpiresAt: &at,
		Error: &Failure{Code: "model_error", Message: text, Provider: &model.ProviderError{Message: text, Status: 500}},
		Interrupts: []Interrupt{{ID: "i" + text, Kind: KindApproval, Path: []PathStep{{Agent: text}}, Tool: "deploy",
			Arguments: json.RawMessage(raw), Message: text, Question: text, Schema: json.RawMessage(raw), ExpiresAt: &at,
			Truncated: []string{"arguments"}}},
		Stack:      []StackFrame{{Agent: "main", Mode: ModeMain}},
		Remembered: []Remembered{{Agent: "main", Tool: text, Action: ActionReject, Reason: text}},
		Metadata:   map[string]any{"n": n, text: []any{n, text, nil, true}, "z": map[string]any{text: n}},
		Usage:      model.Usage{InputTokens: int64(n), OutputTokens: math.MaxInt64},
		CreatedAt:  at, UpdatedAt: at.Add(time.Duration(len(raw))),
		Truncated: []string{"output"},
	}
	if withOutput {
		s.OutputJSON = json.RawMessage(raw)
	}
	return s
}

// FuzzSessionJSON: Session.MarshalJSON writes exactly what encoding/json
// writes. Raw JSON that is not JSON cannot reach a summary (arguments,
// outputs and results are decoded or validated before the engine records
// them); given some anyway, MarshalJSON fails or writes valid JSON, never
// broken JSON (where encoding/json refuses trailing bytes, as in "0 0",
// the faster encoder keeps the first value).
func FuzzSessionJSON(f *testing.F) {
	f.Add("deploy <prod> & \"all\"", `{"env": "prod", "n": [1, 2.5e-7, 1e21]}`, 1.5, true)
	f.Add("\u2028\u2029\x00\x1f\x7f é \xff\xfe", ` [ "<a>" , null ] `, 1e-7, false)
	f.Add("", "null", 0.0, true)
	f.Add("a", "", math.Copysign(0, -1), true)
	f.Add("b", "{", 123456789012345678.0, true)
	f.Add("c", `"\u00e9\ud800"`, math.MaxFloat64, true)
	f.Fuzz(func(t *testing.T, text, raw string, n float64, withOutput bool) {
		if math.IsNaN(n) || math.IsInf(n, 0) {
			n = 0 // neither encoder writes these; both refuse them
		}
		s := fuzzSession(text, raw, n, withOutput)
		want, wantErr := stdlibJSON(s)
		got, gotErr := s.MarshalJSON()
		if !json.Valid([]byte(raw)) {
			if gotErr == nil && !json.Valid(got) {
				t.Fatalf("MarshalJSON wrote invalid JSON: %s", got)
			}
			return
		}
		if (wantErr != nil) != (gotErr != nil) {
			t.Fatalf("encoding/json: %v; MarshalJSON: %v", wantErr, gotErr)
		}
		if wantErr == nil && !bytes.Equal(got, want) {
			t.Fatalf("MarshalJSON differs from encoding/json\n got: %s\nwant: %s", got, want)
		}
	})
}
