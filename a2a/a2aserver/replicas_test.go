package a2aserver_test

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/model/scripted"
	"github.com/cairnhq/cairn/store/sqlite"
)

// replica serves agent ops over A2A from its own runner on the SQLite
// file at path, as one of several processes sharing a store; deploy is
// the tool's body.
func replica(t *testing.T, path string, deploy func(context.Context) (string, error)) string {
	t.Helper()
	st, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	tool := cairn.NewTool(&cairn.Tool{Name: "deploy", Description: "Deploy.", Approval: cairn.Always()},
		func(ctx context.Context, a struct{}) (string, error) { return deploy(ctx) })
	ops := scripted.New(scripted.Reply{ToolCalls: []scripted.Call{{Name: "deploy", Arguments: `{}`}}}, scripted.Reply{Text: "done: {{.LastResult}}"})
	r, err := cairn.NewRunner([]*cairn.Agent{{Name: "ops", Model: ops, Tools: []*cairn.Tool{tool}}}, &cairn.RunnerOptions{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return mount(t, r, nil)
}

// A task started on one replica is read, decided and followed on
// another: the approval runs the tool once, and a subscriber on the first
// replica sees the task go on to completed with its artifact.
func TestTaskAcrossReplicas(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "cairn.db")
	var deploys atomic.Int32
	started, release := make(chan struct{}), make(chan struct{})
	deploy := func(ctx context.Context) (string, error) {
		deploys.Add(1)
		close(started)
		<-release
		return "deployed", nil
	}
	a, _ := client(t, replica(t, path, deploy))
	b, _ := client(t, replica(t, path, deploy))

	task := send(t, a, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("ship it"))})
	got, err := b.GetTask(ctx, &a2a.GetTaskRequest{ID: task.ID})
	if err != nil {
		t.Fatal(err)
	}
	ins, seq := pause(t, got)

	decided := make(chan *a2a.Task, 1)
	go func() {
		res, err := b.SendMessage(ctx, decide(task, seq, map[string]any{"interrupt_id": ins[0]["id"], "action": "approve"}))
		if err != nil {
			t.Error(err)
		}
		out, _ := res.(*a2a.Task)
		decided <- out
	}()
	<-started // the tool runs on b; a subscriber on a follows the task
	var states []a2a.TaskState
	var artifact string
	first := true
	for ev, err := range a.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: task.ID}) {
		if err != nil {
			t.Fatal(err)
		}
		if first {
			close(release)
			first = false
		}
		switch e := ev.(type) {
		case *a2a.Task:
			states = append(states, e.Status.State)
		case *a2a.TaskStatusUpdateEvent:
			states = append(states, e.Status.State)
		case *a2a.TaskArtifactUpdateEvent:
			artifact = e.Artifact.Parts[0].Text()
		}
	}
	if len(states) < 2 || states[0] != a2a.TaskStateWorking || states[len(states)-1] != a2a.TaskStateCompleted || artifact != "done: deployed" {
		t.Fatalf("the subscription on the other replica: states %v, artifact %q", states, artifact)
	}
	if out := <-decided; out == nil || out.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("the decision's answer: %+v", out)
	}
	if n := deploys.Load(); n != 1 {
		t.Fatalf("deploy ran %d times, want once", n)
	}
}
