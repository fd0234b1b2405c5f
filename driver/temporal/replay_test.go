package temporal_test

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.temporal.io/sdk/worker"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
	ctemporal "github.com/cairnhq/cairn/driver/temporal"
	"github.com/cairnhq/cairn/internal/testkit/temporaltest"
	"github.com/cairnhq/cairn/model/scripted"
	"github.com/cairnhq/cairn/store"
)

// -temporal.record runs the scenarios below on a Temporal dev server and
// writes their histories to testdata/histories; TestReplayRecordedHistories
// replays the committed ones against the current code, so a change that
// makes the workflow take other steps for the same history fails CI.
var record = flag.Bool("temporal.record", false, "record the workflow histories in testdata/histories (needs the Temporal CLI)")

// replayAgents are the agents the histories were recorded with.
func replayAgents() []*cairn.Agent {
	deploy := cairn.NewTool(&cairn.Tool{Name: "deploy", Description: "Deploy.", Approval: cairn.Always()},
		func(ctx context.Context, a deployArgs) (string, error) { return "deployed to " + a.Env, nil })
	hurry := cairn.NewTool(&cairn.Tool{Name: "hurry", Description: "Hurry.", Approval: cairn.Always(), ApprovalTTL: time.Second},
		func(ctx context.Context, a struct{}) (string, error) { return "hurried", nil })
	return []*cairn.Agent{
		{Name: "ops", Model: scripted.New(
			scripted.Reply{ToolCalls: []scripted.Call{{Name: "deploy", Arguments: `{"env":"prod"}`}, {Name: "deploy", Arguments: `{"env":"staging"}`}}},
			scripted.Reply{Text: "{{.LastResult}}"}), Tools: []*cairn.Tool{deploy}},
		{Name: "hasty", Model: scripted.New(
			scripted.Reply{ToolCalls: []scripted.Call{{Name: "hurry", Arguments: `{}`}}},
			scripted.Reply{Text: "{{.LastResult}}"}), Tools: []*cairn.Tool{hurry}},
	}
}

// histories are the recorded scenarios: a parallel batch decided in two
// steps (one rejected, one approved), then a second user message; and an
// approval that expires on its timer.
var histories = map[string]func(t *testing.T, d *ctemporal.Driver){
	"batch-reject-approve-message": func(t *testing.T, d *ctemporal.Driver) {
		ctx := context.Background()
		s, err := d.Start(ctx, driver.Start{ID: "batch-reject-approve-message", Agent: "ops", Input: "ship both"}, false)
		if err != nil || len(s.Interrupts) != 2 {
			t.Fatalf("start: %v %+v", err, s)
		}
		if s, err = d.Resume(ctx, s.ID, driver.Decide{Seq: s.Seq, Decisions: []cairn.Decision{{InterruptID: s.Interrupts[1].ID, Action: cairn.ActionReject, Reason: "not staging"}}, Actor: cairn.Actor{Name: "ana"}}); err != nil {
			t.Fatal(err)
		}
		if s, err = d.Resume(ctx, s.ID, driver.Decide{Seq: s.Seq, Decisions: []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove}}, Actor: cairn.Actor{Name: "ana"}}); err != nil || s.Status != cairn.StatusCompleted {
			t.Fatalf("approve: %v %+v", err, s)
		}
		if s, err = d.Send(ctx, s.ID, driver.Message{Text: "again"}); err != nil || s.Status != cairn.StatusPaused {
			t.Fatalf("message: %v %+v", err, s)
		}
	},
	"expiry": func(t *testing.T, d *ctemporal.Driver) {
		ctx := context.Background()
		s, err := d.Start(ctx, driver.Start{ID: "expiry", Agent: "hasty", Input: "hurry"}, false)
		if err != nil || s.Status != cairn.StatusPaused {
			t.Fatalf("start: %v %+v", err, s)
		}
		time.Sleep(2 * time.Second) // elapsed time: the approval's TTL runs out in the recorded history
	},
}

func TestRecordHistories(t *testing.T) {
	if !*record {
		t.Skip("records only with -temporal.record")
	}
	addr := temporaltest.Server(t)
	c, err := ctemporal.Dial(context.Background(), ctemporal.ClientOptions{HostPort: addr, Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close) // after the worker stops
	startWorker(t, c, "record", newRunner(t, replayAgents(), &cairn.RunnerOptions{Store: store.NewMemory()}))
	d := ctemporal.NewDriver(c, "record")
	for name, scenario := range histories {
		scenario(t, d)
		h := history(t, c, name)
		b, err := protojson.MarshalOptions{Indent: "  "}.Marshal(h)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join("testdata", "histories"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join("testdata", "histories", name+".json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d events", name, len(h.Events))
	}
}

// TestReplayRecordedHistories replays every recorded history against the
// current workflow code: a nondeterministic change fails here.
func TestReplayRecordedHistories(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "histories", "*.json"))
	if len(files) < len(histories) {
		t.Fatalf("%d recorded histories, want %d: run go test ./driver/temporal -run TestRecordHistories -temporal.record", len(files), len(histories))
	}
	replayer := worker.NewWorkflowReplayer()
	ctemporal.RegisterWorkflow(replayer, newRunner(t, replayAgents(), &cairn.RunnerOptions{Store: store.NewMemory()}), nil)
	for _, f := range files {
		if err := replayer.ReplayWorkflowHistoryFromJSONFile(nil, f); err != nil {
			t.Errorf("%s does not replay: %v", filepath.Base(f), err)
		}
	}
}
