package local_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testkit/fakeopenai"
	"github.com/cairnhq/cairn/model/openai"
	"github.com/cairnhq/cairn/model/scripted"
)

// Text deltas arrive through Stream while the model is still answering.
func TestStreamDeliversDeltasBeforeTheResponseEnds(t *testing.T) {
	hold := make(chan struct{})
	fake := fakeopenai.Start(t, func(fakeopenai.Request) fakeopenai.Reply {
		return fakeopenai.Reply{Content: "Hello there, I am streaming.", Hold: hold}
	})
	m := openai.New("m", &openai.Options{BaseURL: fake.BaseURL(), APIKey: "k", Stream: true})
	r := runnerFor(t, []*cairn.Agent{{Name: "main", Model: m}}, nil)
	var types []string
	var text strings.Builder
	released := false
	for ev, err := range cairn.Stream(func(observe func(cairn.Event)) (*cairn.Session, error) {
		return r.Start(context.Background(), "main", "hi", &cairn.StartOptions{Observe: observe})
	}) {
		if err != nil {
			t.Fatal(err)
		}
		types = append(types, string(ev.Type))
		if ev.Type == cairn.EventModelDelta {
			var d struct{ Text string }
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				t.Fatal(err)
			}
			text.WriteString(d.Text)
			if !released {
				// The server is still holding the rest of its answer.
				if text.String() != "Hello " {
					t.Fatalf("first delta %q", text.String())
				}
				released = true
				close(hold)
			}
		}
	}
	got := strings.Join(types, " ")
	if !strings.HasPrefix(got, "session_started user_message model_delta") || !strings.HasSuffix(got, "model_response turn_completed") {
		t.Fatalf("events: %s", got)
	}
	if text.String() != "Hello there, I am streaming." {
		t.Fatalf("deltas spell %q", text.String())
	}
}

func TestStreamYieldsTheError(t *testing.T) {
	r := newRunner(t, deleteScript())
	var last error
	n := 0
	for _, err := range cairn.Stream(func(observe func(cairn.Event)) (*cairn.Session, error) {
		return r.Start(context.Background(), "nobody", "hi", &cairn.StartOptions{Observe: observe})
	}) {
		n++
		last = err
	}
	if n != 1 || cairn.ErrorCode(last) != "unknown_agent" {
		t.Fatalf("%d items, last error %v", n, last)
	}
}

// A scripted model sends text deltas only when it streams, as the
// providers do (config: stream: true).
func TestScriptedDeltasOnlyWhenStreaming(t *testing.T) {
	for _, stream := range []bool{false, true} {
		m := scripted.New(scripted.Reply{Text: "Hello there."})
		m.Stream = stream
		r := runnerFor(t, []*cairn.Agent{{Name: "main", Model: m}}, nil)
		deltas := 0
		for ev, err := range cairn.Stream(func(observe func(cairn.Event)) (*cairn.Session, error) {
			return r.Start(context.Background(), "main", "hi", &cairn.StartOptions{Observe: observe})
		}) {
			if err != nil {
				t.Fatal(err)
			}
			if ev.Type == cairn.EventModelDelta {
				deltas++
			}
		}
		r.Close()
		if (deltas > 0) != stream {
			t.Fatalf("stream %v: %d deltas", stream, deltas)
		}
	}
}
