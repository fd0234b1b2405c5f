package a2aagent

import (
	"encoding/json"
	"testing"

	"github.com/cairnhq/cairn"
)

// A remote's status data part is untrusted: any JSON gives a Cairn
// interrupt to ask (an approval or a question, with an id) or none, never
// a panic.
func FuzzCairnPause(f *testing.F) {
	for _, seed := range []string{
		`{"interrupts":[{"id":"int_1","kind":"approval","path":[{"agent":"ops","tool":"deploy","call_id":"c1"}],"ask":{"text":"Run deploy?"}}],"seq":5}`,
		`{"interrupts":[{"id":"int_1","kind":"review"},{"id":"int_2","kind":"input","ask":{"text":"Which?"}}],"seq":2}`,
		`{"interrupts":[{"kind":"approval"}],"seq":1}`, `{"interrupts":[]}`, `{"seq":1}`, `[1,2]`, `"x"`, `null`,
		`{"interrupts":[{"id":"a","kind":"approval","path":"nope"}],"seq":1}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var v any
		if json.Unmarshal(data, &v) != nil {
			return
		}
		in, _ := cairnPause(v)
		if in == nil {
			return
		}
		if in.ID == "" || (in.Kind != cairn.KindApproval && in.Kind != cairn.KindInput) {
			t.Fatalf("%s: asked %+v", data, in)
		}
	})
}
