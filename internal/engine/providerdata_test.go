package engine

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/session"
)

// A provider's data on an assistant message (thinking blocks, reasoning
// items, thought signatures) survives the log, a whole snapshot and a
// chunked one, unchanged.
func TestProviderDataSurvivesReplayAndSnapshots(t *testing.T) {
	t.Parallel()
	m := testMachine()
	st := &State{}
	var log []session.Event
	do := func(in Input) {
		log = append(log, step(t, m, st, in).Events...)
	}
	data := json.RawMessage(`[{"type":"thinking","thinking":"plan it","signature":"c2ln+/="},{"type":"redacted_thinking","data":"ZW5j"}]`)
	do(Start{SessionID: "s", Agent: "main", Text: "go"})
	reply := assistant(model.ToolCall{ID: "c1", Name: "deploy", Arguments: `{"env":"prod"}`})
	reply.Message.Provider = &model.ProviderData{Name: "anthropic", Data: data}
	do(ModelDone{Frame: "f1", Response: reply})

	kept := func(st *State) json.RawMessage {
		t.Helper()
		for _, msg := range st.Frames[0].Messages {
			if d := model.ProviderDataOf(msg, "anthropic"); d != nil {
				return d
			}
		}
		t.Fatal("no message keeps the provider data")
		return nil
	}
	replayed, err := Replay(log)
	if err != nil {
		t.Fatal(err)
	}
	whole, err := Snapshot(replayed)
	if err != nil {
		t.Fatal(err)
	}
	fromWhole, _, err := Restore(whole, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	parts, err := snapshotParts(replayed, 1) // every message in a sealed chunk
	if err != nil {
		t.Fatal(err)
	}
	if len(parts.Chunks) == 0 {
		t.Fatal("no chunk sealed")
	}
	fromParts, _, err := Restore(parts.Root, func(keys []string) ([][]byte, error) {
		out := make([][]byte, len(keys))
		for i, k := range keys {
			for _, c := range parts.Chunks {
				if c.Key == k {
					out[i] = c.Data
				}
			}
		}
		return out, nil
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string]*State{"live": st, "replayed": replayed, "whole snapshot": fromWhole, "chunked snapshot": fromParts} {
		if d := kept(got); !bytes.Equal(d, data) {
			t.Errorf("%s: provider data %s, want %s", name, d, data)
		}
	}
}
