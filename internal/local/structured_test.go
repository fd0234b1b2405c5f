package local_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testkit/check"
	"github.com/cairnhq/cairn/internal/testkit/fakeanthropic"
	"github.com/cairnhq/cairn/internal/testkit/fakegemini"
	"github.com/cairnhq/cairn/internal/testkit/fakeopenai"
	"github.com/cairnhq/cairn/internal/testkit/fakeresponses"
	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/model/anthropic"
	"github.com/cairnhq/cairn/model/gemini"
	"github.com/cairnhq/cairn/model/openai"
)

type triage struct {
	Priority string `json:"priority" enum:"low,high"`
	Summary  string `json:"summary" jsonschema:"one line"`
}

// answering is a model that gives these final answers in turn and keeps
// every request it got.
func answering(answers ...string) (model.Model, func() []*model.Request) {
	var mu sync.Mutex
	var reqs []*model.Request
	m := model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		mu.Lock()
		defer mu.Unlock()
		reqs = append(reqs, req)
		return &model.Response{Message: model.Message{Content: answers[min(len(reqs), len(answers))-1]}}, nil
	})
	return m, func() []*model.Request { mu.Lock(); defer mu.Unlock(); return reqs }
}

// A structured final answer: the model is asked for the schema, an answer
// that is not JSON or does not match is sent back with why (the model sees
// it), and the matching one is the session's output, as JSON and typed.
func TestStructuredAnswerIsCheckedAndSentBack(t *testing.T) {
	schema, err := cairn.SchemaFor[triage]()
	if err != nil {
		t.Fatal(err)
	}
	m, requests := answering("It looks urgent.", `{"priority":"urgent","summary":"db down"}`, `{"priority": "high", "summary": "db down"}`)
	r := runnerFor(t, []*cairn.Agent{{Name: "triage", Model: m, OutputSchema: schema}}, nil)
	s := check.NoErr(t)(r.Start(context.Background(), "triage", "The database is down", nil))
	if s.Status != cairn.StatusCompleted || string(s.OutputJSON) != `{"priority":"high","summary":"db down"}` {
		t.Fatalf("%s %s %+v", s.Status, s.OutputJSON, s.Error)
	}
	got, err := cairn.OutputAs[triage](s)
	if err != nil || got != (triage{Priority: "high", Summary: "db down"}) {
		t.Fatalf("OutputAs: %+v %v", got, err)
	}
	reqs := requests()
	if len(reqs) != 3 || string(reqs[0].OutputSchema) != string(schema) {
		t.Fatalf("%d requests; the first asked for %s", len(reqs), reqs[0].OutputSchema)
	}
	second, third := reqs[1].Messages, reqs[2].Messages
	if last := second[len(second)-1]; last.Role != model.RoleUser || !strings.Contains(last.Content, "not a JSON value") {
		t.Fatalf("the model was not told its answer was not JSON: %+v", last)
	}
	if last := third[len(third)-1]; !strings.Contains(last.Content, "/priority") {
		t.Fatalf("the model was not told which field failed: %+v", last)
	}
	var rejected int
	for _, ev := range check.Events(t)(r.Events(context.Background(), s.ID, 0)) {
		if ev.Type == cairn.EventOutputRejected {
			rejected++
		}
	}
	if rejected != 2 {
		t.Fatalf("%d output_rejected events, want 2", rejected)
	}
	// Over HTTP (the session's JSON form): output is the value, output_text the text.
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var wire struct {
		Output     map[string]any `json:"output"`
		OutputText string         `json:"output_text"`
	}
	if err := json.Unmarshal(b, &wire); err != nil || wire.Output["priority"] != "high" || wire.OutputText != `{"priority": "high", "summary": "db down"}` {
		t.Fatalf("JSON form: %s (%v)", b, err)
	}
	var back cairn.Session
	if err := json.Unmarshal(b, &back); err != nil || string(back.OutputJSON) != string(s.OutputJSON) || back.Output != s.Output {
		t.Fatalf("JSON round trip: %+v %v", back, err)
	}
	// A stored session reads back the same.
	if stored := check.NoErr(t)(r.Session(context.Background(), s.ID)); string(stored.OutputJSON) != string(s.OutputJSON) {
		t.Fatalf("stored output %s", stored.OutputJSON)
	}
}

// A model that never matches fails the turn after the retries, with
// invalid_output, instead of looping.
func TestStructuredAnswerGivesUp(t *testing.T) {
	schema, err := cairn.SchemaFor[triage]()
	if err != nil {
		t.Fatal(err)
	}
	m, requests := answering("no")
	r := runnerFor(t, []*cairn.Agent{{Name: "triage", Model: m, OutputSchema: schema, OutputRetries: 1}}, nil)
	s := check.NoErr(t)(r.Start(context.Background(), "triage", "?", nil))
	if s.Status != cairn.StatusFailed || s.Error.Code != "invalid_output" || len(requests()) != 2 {
		t.Fatalf("%s %+v after %d calls", s.Status, s.Error, len(requests()))
	}
	if _, err := cairn.NewRunner([]*cairn.Agent{{Name: "x", Model: m, OutputSchema: []byte(`{"type": 5}`)}}, nil); err == nil || !strings.Contains(err.Error(), `agent "x": output schema`) {
		t.Fatalf("a bad schema: %v", err)
	}
}

// Every provider is asked for the schema its own way (a JSON schema
// response format; Anthropic's output_config), and its answer becomes the
// session's structured output.
func TestEveryProviderIsAskedForTheSchema(t *testing.T) {
	schema, err := cairn.SchemaFor[triage]()
	if err != nil {
		t.Fatal(err)
	}
	const answer = `{"priority":"low","summary":"disk at 80%"}`
	var asked string
	chat := fakeopenai.Start(t, func(r fakeopenai.Request) fakeopenai.Reply {
		asked = string(r.ResponseFormat)
		return fakeopenai.Reply{Content: answer}
	})
	claude := fakeanthropic.Start(t, func(r fakeanthropic.Request) fakeanthropic.Reply {
		asked = string(r.OutputConfig)
		return fakeanthropic.Reply{Text: answer}
	})
	resp := fakeresponses.Start(t, func(r fakeresponses.Request) fakeresponses.Reply {
		asked = string(r.Text)
		return fakeresponses.Reply{Text: answer}
	})
	gem := fakegemini.Start(t, func(r fakegemini.Request) fakegemini.Reply {
		asked = r.GenerationConfig.ResponseMimeType + " " + string(r.GenerationConfig.ResponseJSONSchema)
		return fakegemini.Reply{Text: answer}
	})
	for _, c := range []struct {
		name string
		m    model.Model
		want string
	}{
		{"openai", openai.New("gpt", &openai.Options{BaseURL: chat.BaseURL(), APIKey: "k"}), `"type":"json_schema"`},
		{"openai-responses", openai.NewResponses("o4", &openai.ResponsesOptions{Options: openai.Options{BaseURL: resp.BaseURL(), APIKey: "k"}}), `"type":"json_schema"`},
		{"anthropic", anthropic.New("claude", &anthropic.Options{BaseURL: claude.URL, APIKey: "k"}), `"type":"json_schema"`},
		{"gemini", gemini.New("gemini", &gemini.Options{BaseURL: gem.URL, APIKey: "k"}), "application/json {"},
	} {
		t.Run(c.name, func(t *testing.T) {
			asked = ""
			r := runnerFor(t, []*cairn.Agent{{Name: "triage", Model: c.m, OutputSchema: schema}}, nil)
			s := check.NoErr(t)(r.Start(context.Background(), "triage", "disk?", nil))
			if s.Status != cairn.StatusCompleted || string(s.OutputJSON) != answer {
				t.Fatalf("%s %s %+v", s.Status, s.OutputJSON, s.Error)
			}
			if !strings.Contains(asked, c.want) || !strings.Contains(asked, `"priority"`) {
				t.Fatalf("the request asked for %s", asked)
			}
		})
	}
}

// Cancelling a session whose answer waits for review ends the review: the
// next message starts a turn whose answer is reviewed afresh, not the old
// one.
func TestCancelEndsAReview(t *testing.T) {
	ctx := context.Background()
	schema, err := cairn.SchemaFor[triage]()
	if err != nil {
		t.Fatal(err)
	}
	m, _ := answering(`{"priority":"low","summary":"first"}`, `{"priority":"high","summary":"second"}`)
	r := runnerFor(t, []*cairn.Agent{{Name: "triage", Model: m, OutputSchema: schema, Review: cairn.Always()}}, nil)
	s := check.NoErr(t)(r.Start(ctx, "triage", "one", nil))
	first := s.Interrupts[0].ID
	s = check.NoErr(t)(r.Cancel(ctx, s.ID, cairn.CancelAll, nil))
	if s.Status != cairn.StatusCancelled || len(s.Interrupts) != 0 {
		t.Fatalf("after the cancel: %+v", s)
	}
	s = check.NoErr(t)(r.Send(ctx, s.ID, "two", 0, nil))
	if s.Status != cairn.StatusPaused || len(s.Interrupts) != 1 || s.Interrupts[0].ID == first || !strings.Contains(string(s.Interrupts[0].Output), "second") {
		t.Fatalf("the next turn: %+v", s)
	}
}
