package a2aserver

import (
	"errors"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// A caller's data part is untrusted: any bytes give a checked decision
// list or an invalid-params error, never a panic.
func FuzzReadDecisions(f *testing.F) {
	for _, seed := range []string{
		`{"decisions":[{"interrupt_id":"int_1","action":"approve"}],"seq":5}`,
		`{"decisions":[{"interrupt_id":"int_1","action":"reject","reason":"no"}],"seq":5}`,
		`{"decisions":[],"seq":1}`, `{"seq":1}`, `{"decisions":[{"action":"approve"}],"seq":1}`,
		`{"decisions":[{"interrupt_id":"a","action":"approve","arguments":{"x":1}}],"seq":1,"extra":true}`,
		`null`, `[]`, `{"seq":"1"}`, `{} {}`, ``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := readDecisions(data, 7)
		if err != nil {
			if !errors.Is(err, a2a.ErrInvalidParams) {
				t.Fatalf("%q: %v is not invalid params", data, err)
			}
			return
		}
		if d.Seq == nil || len(d.Decisions) == 0 {
			t.Fatalf("%q: taken without a seq or a decision: %+v", data, d)
		}
		for _, x := range d.Decisions {
			if x.InterruptID == "" {
				t.Fatalf("%q: a decision without an interrupt was taken", data)
			}
		}
	})
}
