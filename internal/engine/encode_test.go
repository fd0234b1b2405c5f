package engine

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/session"
)

type loop struct {
	Next *loop  `json:"next,omitempty"`
	Tags []loop `json:"tags"`
}

type deep struct {
	ByName map[string][]*session.UserMessage `json:"by_name"`
}

// A payload type with omitzero anywhere inside, behind pointers, slices and
// maps, is found, cycles end, and each encodes as encoding/json does.
func TestPayloadEncodingKnowsOmitZero(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		v    any
		want bool
	}{
		{&session.UserMessage{Text: "hi"}, true},
		{&session.TurnCancelled{}, true},
		{&deep{ByName: map[string][]*session.UserMessage{"a": {{Text: "<b>"}}}}, true},
		{&session.ModelResponse{}, false},
		{&loop{Next: &loop{}}, false},
	} {
		if got := hasOmitZero(reflect.TypeOf(c.v), map[reflect.Type]bool{}); got != c.want {
			t.Errorf("%T: hasOmitZero = %v, want %v", c.v, got, c.want)
		}
		var e payloadEncoding
		got, err := e.marshal(c.v)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(c.v)
		if !bytes.Equal(got, want) {
			t.Errorf("%T: %s, encoding/json writes %s", c.v, got, want)
		}
	}
}

// canonicalArgs' shortcut for text without whitespace gives what the
// whole path (trim, json.Compact, keep invalid text) gives.
func FuzzCanonicalArgs(f *testing.F) {
	for _, s := range []string{"", " ", `{"a":1}`, `{"a": 1}`, `{"a":"b c"}`, `{"a":1`, "null", "\t{}\n", `{"a":"\u00e9"}`, `[1,2]`, "nope"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := s
		if trimmed := strings.TrimSpace(s); trimmed == "" {
			want = "{}"
		} else {
			var buf bytes.Buffer
			if json.Compact(&buf, []byte(trimmed)) == nil {
				want = buf.String()
			}
		}
		if got := canonicalArgs(s); got != want {
			t.Fatalf("canonicalArgs(%q) = %q, want %q", s, got, want)
		}
	})
}
