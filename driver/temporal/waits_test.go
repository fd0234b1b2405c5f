package temporal

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/model/scripted"
	"github.com/cairnhq/cairn/store"
)

// waitFixture is a fixture whose agent's tool finishes later: each run
// gets a callback URL and returns Pending; its wait has an hour, and a
// missed deadline starts it once more, then fails it.
func waitFixture(t *testing.T) (*fixture, *atomic.Int32) {
	f := &fixture{t: t, store: store.NewMemory()}
	var starts atomic.Int32
	pipeline := cairn.NewTool(&cairn.Tool{Name: "run_pipeline", Wait: &cairn.Wait{Timeout: time.Hour, OnTimeout: cairn.OnTimeoutRetry, Retries: 1}},
		func(ctx context.Context, _ struct{}) (string, error) {
			if _, err := cairn.CallbackURL(ctx); err != nil { // signed in the activity, with the store's key
				return "", err
			}
			starts.Add(1)
			return "", cairn.Pending("run", "started")
		})
	m := scripted.New(scripted.Reply{ToolCalls: []scripted.Call{{Name: "run_pipeline", Arguments: `{}`}}}, scripted.Reply{Text: "CI: {{.LastResult}}"})
	f.start(&cairn.Agent{Name: "ops", Model: m, Tools: []*cairn.Tool{pipeline}})
	return f, &starts
}

// On the workflow, a completion is an update (the first wins; the same
// completion again is refused) and a wait's deadline is a durable timer:
// the retry starts the tool once more, the next deadline fails the call.
func TestWaitsOnTheWorkflow(t *testing.T) {
	t.Run("completed", func(t *testing.T) {
		f, starts := waitFixture(t)
		var first, again *outcome
		f.run("ses_wait1", func() {
			s := f.session("ses_wait1")
			if s.Status != cairn.StatusPaused || len(s.Interrupts) != 1 || s.Interrupts[0].Kind != cairn.KindExternal {
				t.Errorf("mirror after the first turn: %+v", s)
				return
			}
			d := []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionComplete, Output: json.RawMessage(`"passed"`)}}
			first = f.update(UpdateDecide, DecideArgs{Seq: s.Seq, Decisions: d})
			again = f.update(UpdateDecide, DecideArgs{Seq: s.Seq, Decisions: d})
		})
		if first == nil || first.err != nil || first.result == nil || first.result.Output != "CI: passed" {
			t.Fatalf("the completion: %+v", first)
		}
		if again.rejected == nil && again.err == nil {
			t.Fatalf("the second completion won too: %+v", again)
		}
		if starts.Load() != 1 {
			t.Fatalf("the tool started %d times", starts.Load())
		}
	})
	t.Run("deadline", func(t *testing.T) {
		f, starts := waitFixture(t)
		f.env.RegisterDelayedCallback(f.env.CancelWorkflow, 3*time.Hour)
		f.env.ExecuteWorkflow(WorkflowName, params{Start: &engine.Start{SessionID: "ses_wait2", Agent: "ops", Text: "ship it"}})
		s := f.session("ses_wait2")
		if s.Status != cairn.StatusCompleted || !strings.Contains(s.Output, "did not finish by") || starts.Load() != 2 {
			t.Fatalf("after two deadlines: %s %q, started %d times", s.Status, s.Output, starts.Load())
		}
	})
}
