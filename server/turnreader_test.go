package server

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/session"
)

// textSink keeps the text a turn reader shows.
type textSink struct{ deltas []string }

func (s *textSink) textDelta(d string)                     { s.deltas = append(s.deltas, d) }
func (s *textSink) modelDone([]shownCall)                  {}
func (s *textSink) approval(string, cairn.Interrupt, bool) {}
func (s *textSink) result(string, string, bool, bool)      {}

// A front end shows each reply's text exactly once: streamed, whole, or,
// when the stream skipped the rest of its deltas, the beginning streamed
// and the rest from the model_response.
func TestTurnReaderCompletesSkippedText(t *testing.T) {
	delta := func(text string) cairn.Event {
		data, _ := json.Marshal(map[string]string{"text": text})
		return cairn.Event{Type: cairn.EventModelDelta, Data: data}
	}
	response := func(content string) cairn.Event {
		data, _ := json.Marshal(map[string]any{"message": map[string]any{"content": content}})
		return cairn.Event{Seq: 9, Type: session.EventModelResponse, Data: data}
	}
	skipped := cairn.Event{Type: cairn.EventModelDeltasSkipped, Data: []byte(`{"reason":"behind"}`)}
	for _, c := range []struct {
		name   string
		events []cairn.Event
		want   string
	}{
		{"streamed", []cairn.Event{delta("Deployed "), delta("build 1042."), response("Deployed build 1042.")}, "Deployed |build 1042."},
		{"whole", []cairn.Event{response("Deployed build 1042.")}, "Deployed build 1042."},
		{"skipped", []cairn.Event{delta("Deployed "), skipped, response("Deployed build 1042.")}, "Deployed |build 1042."},
		{"joined", []cairn.Event{skipped, response("Deployed build 1042.")}, "Deployed build 1042."},
		{"rewritten", []cairn.Event{delta("Deploy "), response("Deployed build 1042.")}, "Deploy "},
		{"two replies", []cairn.Event{delta("One."), response("One."), delta("Tw"), skipped, response("Two.")}, "One.|Tw|o."},
	} {
		sink := &textSink{}
		r := newTurnReader(sink)
		for _, ev := range c.events {
			r.observe(ev)
		}
		if got := strings.Join(sink.deltas, "|"); got != c.want {
			t.Errorf("%s: shown %q, want %q", c.name, got, c.want)
		}
	}
}
