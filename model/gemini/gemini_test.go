package gemini_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testkit/fakegemini"
	"github.com/cairnhq/cairn/internal/testkit/providertest"
	"github.com/cairnhq/cairn/model/gemini"
	"github.com/cairnhq/cairn/store/sqlite"
)

type deployArgs struct {
	Env string `json:"env"`
}

// signingFake thinks and makes two parallel calls, the first signed; it
// answers their results, and refuses, as the API does, a follow-up whose
// calls lost their thought signature.
func signingFake(t *testing.T) *fakegemini.Server {
	return fakegemini.Start(t, func(r fakegemini.Request) fakegemini.Reply {
		if res := r.Responses(); len(res) > 0 {
			var outs []string
			for _, fr := range res {
				outs = append(outs, fmt.Sprint(fr.Response["output"]))
			}
			sort.Strings(outs)
			return fakegemini.Reply{Text: "Done: " + strings.Join(outs, ", ")}
		}
		return fakegemini.Reply{Thought: "Deploy both, in parallel.", ToolCalls: []fakegemini.Call{
			{Name: "deploy", Args: map[string]any{"env": "prod"}},
			{Name: "deploy", Args: map[string]any{"env": "staging"}}}}
	})
}

func geminiRunner(t *testing.T, path, baseURL string, stream bool, runs *atomic.Int32) *cairn.Runner {
	t.Helper()
	st, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	m := gemini.New("gemini-test", &gemini.Options{BaseURL: baseURL, APIKey: "k", Stream: stream, Thinking: &gemini.Thinking{BudgetTokens: 2048}})
	deploy := cairn.NewTool(&cairn.Tool{Name: "deploy", Description: "Deploy.", Approval: cairn.Always()},
		func(ctx context.Context, a deployArgs) (string, error) {
			runs.Add(1)
			return "deployed to " + a.Env, nil
		})
	r, err := cairn.NewRunner([]*cairn.Agent{{Name: "ops", Instructions: "Be brief.", Model: m, Tools: []*cairn.Tool{deploy}}}, &cairn.RunnerOptions{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// Two parallel calls paused for approval: a new runner on the same file (a
// restart) approves both and sends the model's turn back with its thought
// signature, and the API accepts; with the kept parts stripped from the
// stored events, the API refuses and the turn fails with its error.
func TestThoughtSignaturesSurviveAPauseAndARestart(t *testing.T) {
	for _, stream := range []bool{false, true} {
		for _, strip := range []bool{false, true} {
			t.Run(fmt.Sprintf("stream=%v/stripped=%v", stream, strip), func(t *testing.T) {
				ctx := context.Background()
				fake := signingFake(t)
				path := filepath.Join(t.TempDir(), "cairn.db")
				var runs atomic.Int32
				first := geminiRunner(t, path, fake.URL, stream, &runs)
				s, err := first.Start(ctx, "ops", "Ship it everywhere", nil)
				if err != nil || s.Status != cairn.StatusPaused || len(s.Interrupts) != 2 {
					t.Fatalf("start: %v %+v", err, s)
				}
				req := fake.Requests()[0]
				if req.GenerationConfig.ThinkingConfig == nil || *req.GenerationConfig.ThinkingConfig.ThinkingBudget != 2048 || req.SystemInstruction == nil || len(req.Tools) != 1 {
					t.Fatalf("the first request: %+v", req)
				}
				first.Close()
				if strip {
					providertest.StripProviderData(t, path)
				}

				second := geminiRunner(t, path, fake.URL, stream, &runs)
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
						!strings.Contains(done.Error.Provider.Message, "missing a thought_signature") {
						t.Fatalf("without the signature the API must refuse: %+v %+v", done, done.Error)
					}
					return
				}
				if done.Status != cairn.StatusCompleted || done.Output != "Done: deployed to prod, deployed to staging" || runs.Load() != 2 {
					t.Fatalf("resume: %+v %+v, runs %d", done, done.Error, runs.Load())
				}
				if done.Usage.OutputTokens != 22 { // (7 + 4 thinking) per call, two calls
					t.Fatalf("usage %+v", done.Usage)
				}
				follow := fake.Requests()[1].Contents
				model := follow[len(follow)-2]
				if model.Role != "model" || model.Parts[0].Thought != true || model.Parts[1].FunctionCall == nil || model.Parts[1].ThoughtSignature == "" {
					t.Fatalf("the model turn sent back: %+v", model)
				}
			})
		}
	}
}

// Errors come back as *model.ProviderError with the API's status and message.
func TestGeminiErrorsAreProviderErrors(t *testing.T) {
	zero := 0
	m := gemini.New("gemini-test", &gemini.Options{BaseURL: "http://127.0.0.1:1", APIKey: "k", MaxRetries: &zero})
	r, err := cairn.NewRunner([]*cairn.Agent{{Name: "a", Model: m}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	s, err := r.Start(context.Background(), "a", "hi", nil)
	if err != nil || s.Status != cairn.StatusFailed || s.Error.Provider == nil || s.Error.Provider.Provider != "gemini" {
		t.Fatalf("%v %+v", err, s)
	}
}

// Streaming: each chunk's text reaches the turn's observer as a delta;
// thoughts do not.
func TestGeminiStreamsTextDeltas(t *testing.T) {
	fake := fakegemini.Start(t, func(r fakegemini.Request) fakegemini.Reply {
		return fakegemini.Reply{Thought: "Greet.", Text: "one two three"}
	})
	m := gemini.New("gemini-test", &gemini.Options{BaseURL: fake.URL, APIKey: "k", Stream: true})
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
