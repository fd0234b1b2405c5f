package server

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
)

// A client's result for one of its tools is untrusted input: one over
// maxClientResult fails the call, saying so, instead of reaching the model.
func TestAGUIToolResultsAreBounded(t *testing.T) {
	sess := &cairn.Session{ID: "s", Status: cairn.StatusPaused, Interrupts: []cairn.Interrupt{
		{ID: "int_1", Kind: cairn.KindClient, Tool: "show", Path: []cairn.PathStep{{Agent: "ui", Tool: "show", CallID: "c1"}}},
		{ID: "int_2", Kind: cairn.KindClient, Tool: "show", Path: []cairn.PathStep{{Agent: "ui", Tool: "show", CallID: "c2"}}},
	}}
	big, _ := json.Marshal(strings.Repeat("x", maxClientResult))
	ds := aguiToolResults(sess, []aguiMessage{
		{Role: "tool", ToolCallID: "c1", Content: big},
		{Role: "tool", ToolCallID: "c2", Content: json.RawMessage(`"ok"`)},
	})
	if len(ds) != 2 {
		t.Fatalf("%+v", ds)
	}
	byID := map[string]cairn.Decision{ds[0].InterruptID: ds[0], ds[1].InterruptID: ds[1]}
	if d := byID["int_1"]; d.Action != cairn.ActionFail || !strings.Contains(d.Reason, "more than the 262144") {
		t.Fatalf("the oversized result: %+v", d)
	}
	if d := byID["int_2"]; d.Action != cairn.ActionComplete || string(d.Output) != `"ok"` {
		t.Fatalf("the small one: %+v", d)
	}
}
