package openai_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testkit/fakeresponses"
	"github.com/cairnhq/cairn/internal/testkit/providertest"
	"github.com/cairnhq/cairn/model/openai"
	"github.com/cairnhq/cairn/store/sqlite"
)

type deployArgs struct {
	Env string `json:"env"`
}

// reasoningFake reasons before two parallel calls and answers their
// results; like the API, it refuses a follow-up whose calls lost their
// reasoning item, or whose encrypted content (store false) is missing.
func reasoningFake(t *testing.T) *fakeresponses.Server {
	return fakeresponses.Start(t, func(r fakeresponses.Request) fakeresponses.Reply {
		var results []string
		for _, it := range r.Input {
			if it.Type == "function_call_output" {
				results = append(results, it.OutputText())
			}
		}
		if len(results) > 0 {
			return fakeresponses.Reply{Reasoning: "Both went out.", Text: "Done: " + strings.Join(results, ", ")}
		}
		return fakeresponses.Reply{Reasoning: "Deploy to both, in parallel.", ToolCalls: []fakeresponses.Call{
			{CallID: "call_1", Name: "deploy", Arguments: `{"env":"staging"}`},
			{CallID: "call_2", Name: "deploy", Arguments: `{"env":"prod"}`}}}
	})
}

func responsesRunner(t *testing.T, path, baseURL string, stream, sdk bool, runs *atomic.Int32) *cairn.Runner {
	t.Helper()
	st, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	m := openai.NewResponses("o4-mini", &openai.ResponsesOptions{Options: openai.Options{BaseURL: baseURL, APIKey: "sk-test", Stream: stream, SDK: sdk},
		ReasoningEffort: "medium"})
	deploy := cairn.NewTool(&cairn.Tool{Name: "deploy", Description: "Deploy.", Approval: cairn.Always()},
		func(ctx context.Context, a deployArgs) (string, error) {
			runs.Add(1)
			return "deployed to " + a.Env, nil
		})
	r, err := cairn.NewRunner([]*cairn.Agent{{Name: "ops", Model: m, Tools: []*cairn.Tool{deploy}}}, &cairn.RunnerOptions{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// Two parallel calls paused for approval, store false: a new runner on the
// same file (a restart) approves both, sends the encrypted reasoning back
// before the calls, and the API accepts; stripped from the stored events,
// the API refuses the follow-up and the turn fails with its error.
func TestResponsesReasoningSurvivesAPauseAndARestart(t *testing.T) {
	// Both paths (lean and SDK) meet the strict fake; the stripped case
	// tests the engine's store, so once is enough for the SDK path.
	for _, c := range []struct {
		stream, strip, sdk bool
	}{{false, false, false}, {false, true, false}, {true, false, false}, {true, true, false}, {false, false, true}, {true, false, true}} {
		stream, strip, sdk := c.stream, c.strip, c.sdk
		{
			t.Run(fmt.Sprintf("stream=%v/stripped=%v/sdk=%v", stream, strip, sdk), func(t *testing.T) {
				ctx := context.Background()
				fake := reasoningFake(t)
				path := filepath.Join(t.TempDir(), "cairn.db")
				var runs atomic.Int32
				first := responsesRunner(t, path, fake.BaseURL(), stream, sdk, &runs)
				s, err := first.Start(ctx, "ops", "Ship it everywhere", nil)
				if err != nil || s.Status != cairn.StatusPaused || len(s.Interrupts) != 2 {
					t.Fatalf("start: %v %+v", err, s)
				}
				req := fake.Requests()[0]
				if req.Store == nil || *req.Store || len(req.Include) != 1 || req.Include[0] != "reasoning.encrypted_content" || req.Reasoning.Effort != "medium" {
					t.Fatalf("the first request: store %v, include %v, reasoning %+v", req.Store, req.Include, req.Reasoning)
				}
				first.Close()
				if strip {
					providertest.StripProviderData(t, path)
				}

				second := responsesRunner(t, path, fake.BaseURL(), stream, sdk, &runs)
				var approve []cairn.Decision
				for _, in := range s.Interrupts {
					approve = append(approve, cairn.Decision{InterruptID: in.ID, Action: cairn.ActionApprove})
				}
				done, err := second.Resume(ctx, s.ID, s.Seq, approve, nil)
				if err != nil {
					t.Fatal(err)
				}
				if strip {
					if done.Status != cairn.StatusFailed || done.Error.Provider == nil || done.Error.Provider.Status != 400 ||
						!strings.Contains(done.Error.Provider.Message, "without its required 'reasoning' item") {
						t.Fatalf("without the reasoning the API must refuse: %+v %+v", done, done.Error)
					}
					return
				}
				if done.Status != cairn.StatusCompleted || done.Output != "Done: deployed to staging, deployed to prod" || runs.Load() != 2 {
					t.Fatalf("resume: %+v %+v, runs %d", done, done.Error, runs.Load())
				}
				follow := fake.Requests()[1].Input
				var types []string
				for _, it := range follow {
					types = append(types, cmp.Or(it.Type, it.Role))
				}
				if got := strings.Join(types, " "); got != "user reasoning function_call function_call function_call_output function_call_output" {
					t.Fatalf("the follow-up's items: %s", got)
				}
				if done.Usage.OutputTokens != 18 { // 9 per call, two calls
					t.Fatalf("usage %+v, want the two calls' output tokens", done.Usage)
				}
			})
		}
	}
}

// The request the adapter builds: tools not strict (Cairn's schemas need not
// list every property as required), instructions, parallel calls.
func TestResponsesRequestShape(t *testing.T) {
	var got fakeresponses.Request
	fake := fakeresponses.Start(t, func(r fakeresponses.Request) fakeresponses.Reply {
		got = r
		return fakeresponses.Reply{Text: "hi"}
	})
	m := openai.NewResponses("gpt-5", &openai.ResponsesOptions{Options: openai.Options{BaseURL: fake.BaseURL(), APIKey: "k"}})
	deploy := cairn.NewTool(&cairn.Tool{Name: "deploy", Description: "Deploy."},
		func(ctx context.Context, a deployArgs) (string, error) { return "", nil })
	r, err := cairn.NewRunner([]*cairn.Agent{{Name: "ops", Instructions: "Be brief.", Model: m, Tools: []*cairn.Tool{deploy}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	s, err := r.Start(context.Background(), "ops", "hello", nil)
	if err != nil || s.Output != "hi" {
		t.Fatalf("%v %+v", err, s)
	}
	var tool struct {
		Type, Name string
		Strict     *bool
	}
	if err := json.Unmarshal(got.Tools[0], &tool); err != nil {
		t.Fatal(err)
	}
	if got.Instructions != "Be brief." || tool.Type != "function" || tool.Name != "deploy" || tool.Strict == nil || *tool.Strict {
		t.Fatalf("instructions %q, tool %+v", got.Instructions, tool)
	}
}

// Streaming: the reply's text reaches the turn's observer as deltas, in
// order, and the recorded answer is the whole text.
func TestResponsesStreamsTextDeltas(t *testing.T) {
	for _, sdk := range []bool{false, true} {
		t.Run(fmt.Sprintf("sdk=%v", sdk), func(t *testing.T) { streamsTextDeltas(t, sdk) })
	}
}

func streamsTextDeltas(t *testing.T, sdk bool) {
	fake := fakeresponses.Start(t, func(r fakeresponses.Request) fakeresponses.Reply {
		return fakeresponses.Reply{Reasoning: "Greet.", Text: "one two three"}
	})
	m := openai.NewResponses("o4-mini", &openai.ResponsesOptions{Options: openai.Options{BaseURL: fake.BaseURL(), APIKey: "k", Stream: true, SDK: sdk}})
	r, err := cairn.NewRunner([]*cairn.Agent{{Name: "a", Model: m}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	s, deltas, err := providertest.Streamed(context.Background(), r, "a", "hi")
	if err != nil || s.Output != "one two three" || strings.Join(deltas, "|") != "one |two |three" {
		t.Fatalf("%v %q, deltas %q", err, s.Output, deltas)
	}
}
