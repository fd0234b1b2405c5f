package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cairnhq/cairn/model"
)

// stdlibStored is the session as encoding/json writes MarshalStored's
// shape: the reference for its bytes.
func stdlibStored(s Session) ([]byte, error) { return json.Marshal(s.storedShape()) }

// randomText is text of any kind a session holds: plain, HTML, control
// characters, U+2028/9, other Unicode, invalid UTF-8.
func randomText(r *rand.Rand) string {
	pieces := []string{"", "a", "deploy", " ", "<", ">", "&", `"`, `\`, "/", "\x00", "\x1f", "\x7f", "\b", "\f", "\n", "\r", "\t",
		"\u2028", "\u2029", "é", "日本", "😀", "\xff", "\xe2\x80", "\xed\xa0\x80", "\ufffd", "ses_0193"}
	var b []byte
	for range r.IntN(6) {
		b = append(b, pieces[r.IntN(len(pieces))]...)
	}
	return string(b)
}

func randomTime(r *rand.Rand) time.Time {
	zones := []*time.Location{time.UTC, time.FixedZone("", 0), time.FixedZone("X", 5*3600+1800), time.FixedZone("", -150),
		time.FixedZone("", -23*3600-3599), time.Local}
	if r.IntN(50) == 0 { // offsets time.Time.MarshalJSON refuses
		zones = []*time.Location{time.FixedZone("", 24*3600), time.FixedZone("", -25*3600)}
	}
	const first, last = -62135596800, 253402300799 // years 0 and 9999
	sec := first + r.Int64N(last-first)
	if r.IntN(50) == 0 { // years it refuses
		sec = last + 1 + r.Int64N(1e12)
	}
	return time.Unix(sec, r.Int64N(1_000_000_000)).In(zones[r.IntN(len(zones))])
}

// randomSession is a session of any shape: mostly ones appendSimple
// writes, some with a field it leaves to the reflective encoder.
func randomSession(r *rand.Rand) Session {
	s := Session{ID: randomText(r), Nonce: randomText(r), Agent: randomText(r), Status: Status(randomText(r)), Seq: r.Int64() - r.Int64(),
		Output: randomText(r), Request: randomText(r), Owner: randomText(r), Tenant: randomText(r), LeaseOwner: randomText(r),
		Usage:     model.Usage{InputTokens: r.Int64() - r.Int64(), OutputTokens: r.Int64N(1000)},
		CreatedAt: randomTime(r), UpdatedAt: randomTime(r)}
	if r.IntN(3) == 0 {
		at := randomTime(r)
		s.LeaseExpiresAt = &at
	}
	if r.IntN(2) == 0 {
		s.Definition = &DefinitionVersion{Hash: randomText(r), Current: r.IntN(2) == 0}
	}
	switch r.IntN(3) {
	case 0:
		s.Interrupts = []Interrupt{}
	case 1:
		s.Stack = []StackFrame{}
		s.Remembered = []Remembered{}
	}
	for range r.IntN(3) {
		s.Stack = append(s.Stack, StackFrame{Agent: randomText(r), Mode: Mode(randomText(r))})
	}
	for range r.IntN(3) {
		s.Remembered = append(s.Remembered, Remembered{Agent: randomText(r), Tool: randomText(r), Action: Action(randomText(r)), Reason: randomText(r)})
	}
	switch r.IntN(24) { // one field the fast path does not write, a quarter of the time
	case 0:
		s.Error = &Failure{Code: "model_error", Message: randomText(r)}
	case 1:
		s.Interrupts = []Interrupt{{ID: randomText(r), Kind: KindApproval, Tool: "deploy", Arguments: json.RawMessage(`{}`)}}
	case 2:
		s.Metadata = map[string]any{randomText(r): randomText(r)}
	case 3:
		s.OutputJSON = json.RawMessage(`{"a":1}`)
	case 4:
		s.Truncated = []string{"output"}
	case 5:
		s.ForkedFrom = &ForkOrigin{SessionID: randomText(r)}
	case 6:
		s.Metadata = map[string]any{} // empty: omitted, so the fast path takes it
	}
	return s
}

// TestAppendSimpleAgrees: MarshalJSON and MarshalStored, which write most
// sessions by hand (appendSimple), write what encoding/json writes, byte
// for byte, and fail where it fails, over 10,000 random sessions; most of
// them take the hand-written path.
func TestAppendSimpleAgrees(t *testing.T) {
	r := rand.New(rand.NewPCG(46, 2))
	simple := 0
	for i := range 10_000 {
		s := randomSession(r)
		_, ok := s.appendSimple(nil, false)
		if ok {
			simple++
		}
		for _, c := range []struct {
			name      string
			got, want func(Session) ([]byte, error)
		}{{"MarshalJSON", Session.MarshalJSON, stdlibJSON}, {"MarshalStored", Session.MarshalStored, stdlibStored}} {
			got, gotErr := c.got(s)
			want, wantErr := c.want(s)
			if wantErr != nil && !ok {
				// A time encoding/json refuses (a year past 9999) is left
				// to the reflective encoder, which writes it as before.
				continue
			}
			if (gotErr != nil) != (wantErr != nil) || !bytes.Equal(got, want) {
				t.Fatalf("session %d, %s: %v %v\n got: %s\nwant: %s", i, c.name, gotErr, wantErr, got, want)
			}
		}
	}
	if simple < 6_000 {
		t.Fatalf("only %d of 10,000 sessions took the hand-written path", simple)
	}
}

// FuzzAppendSimple: the same comparison with fuzzed text and times.
func FuzzAppendSimple(f *testing.F) {
	f.Add("deploy <prod> & \"all\"", "\u2028\xff", int64(1764300000), int64(123), 3600)
	f.Add("", "\x00\x1f\x7f", int64(-62135596800), int64(0), -150)
	f.Add("é", "", int64(253402300799), int64(999999999), 86399)
	f.Add("a", "b", int64(253402300800), int64(1), 0)
	f.Fuzz(func(t *testing.T, text, other string, sec, nsec int64, offset int) {
		at := time.Unix(sec, nsec).In(time.FixedZone(other, offset))
		s := Session{ID: text, Nonce: other, Agent: text, Status: Status(other), Seq: sec, Output: text, Request: other,
			Stack: []StackFrame{{Agent: text, Mode: Mode(other)}}, Remembered: []Remembered{{Agent: other, Tool: text, Reason: other}},
			Owner: text, LeaseOwner: other, LeaseExpiresAt: &at, Usage: model.Usage{InputTokens: nsec, OutputTokens: sec},
			CreatedAt: at, UpdatedAt: at.Add(time.Duration(nsec))}
		if _, ok := s.appendSimple(nil, false); !ok {
			return // a time encoding/json refuses: as in TestAppendSimpleAgrees
		}
		for _, stored := range []bool{false, true} {
			got, gotErr := s.MarshalJSON()
			want, wantErr := stdlibJSON(s)
			if stored {
				got, gotErr = s.MarshalStored()
				want, wantErr = stdlibStored(s)
			}
			if (gotErr != nil) != (wantErr != nil) || !bytes.Equal(got, want) {
				t.Fatalf("stored=%v: %v %v\n got: %s\nwant: %s", stored, gotErr, wantErr, got, want)
			}
		}
	})
}

// ExampleSession_MarshalJSON shows a session as the API writes it.
func ExampleSession_MarshalJSON() {
	at := time.Date(2026, 11, 28, 9, 30, 0, 0, time.UTC)
	s := Session{ID: "ses_1", Agent: "main", Status: StatusCompleted, Seq: 7, Output: "done <ok>",
		Stack: []StackFrame{{Agent: "main", Mode: ModeMain}}, Remembered: []Remembered{}, Interrupts: []Interrupt{},
		Usage: model.Usage{InputTokens: 4, OutputTokens: 1}, CreatedAt: at, UpdatedAt: at}
	b, _ := s.MarshalJSON()
	fmt.Println(string(b))
	// Output:
	// {"id":"ses_1","agent":"main","status":"completed","seq":7,"output":"done \u003cok\u003e","error":null,"interrupts":[],"stack":[{"agent":"main","mode":"main"}],"remembered":[],"usage":{"input_tokens":4,"output_tokens":1},"created_at":"2026-11-28T09:30:00Z","updated_at":"2026-11-28T09:30:00Z"}
}
