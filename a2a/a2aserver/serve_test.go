package a2aserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/a2a/a2aserver"
	"github.com/cairnhq/cairn/internal/testkit/testwait"
	"github.com/cairnhq/cairn/model/scripted"
)

// opsServer serves an agent whose deploy waits for approval over A2A at
// /a2a/ops, and counts the deploys.
func opsServer(t *testing.T, opts *a2aserver.Options) (url string, deploys *atomic.Int32) {
	t.Helper()
	deploys = &atomic.Int32{}
	deploy := cairn.NewTool(&cairn.Tool{Name: "deploy", Description: "Deploy a service.", Approval: cairn.Always()},
		func(ctx context.Context, a struct {
			Service string `json:"service"`
		}) (string, error) {
			deploys.Add(1)
			return "deployed " + a.Service, nil
		})
	ops := scripted.New(scripted.Reply{ToolCalls: []scripted.Call{{Name: "deploy", Arguments: `{"service":"web"}`}}}, scripted.Reply{Text: "done: {{.LastResult}}"})
	runner, err := cairn.NewRunner([]*cairn.Agent{{Name: "ops", Model: ops, Tools: []*cairn.Tool{deploy}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { runner.Close() })
	return mount(t, runner, opts), deploys
}

// mount serves the runner's agent ops over A2A at /a2a/ops of a test
// server and returns that URL.
func mount(t *testing.T, r *cairn.Runner, opts *a2aserver.Options) string {
	t.Helper()
	h, err := a2aserver.New(r, "ops", opts)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/a2a/ops", h)
	mux.Handle("/a2a/ops/", h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL + "/a2a/ops"
}

// client discovers the agent at url by its card, as any A2A client does.
func client(t *testing.T, url string) (*a2aclient.Client, *a2a.AgentCard) {
	t.Helper()
	ctx := context.Background()
	card, err := agentcard.DefaultResolver.Resolve(ctx, url)
	if err != nil {
		t.Fatalf("resolving the agent card: %v", err)
	}
	c, err := a2aclient.NewFromCard(ctx, card)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Destroy() })
	return c, card
}

// pause reads an input-required task's interrupts and seq from its status
// message's data part.
func pause(t *testing.T, task *a2a.Task) (interrupts []map[string]any, seq int64) {
	t.Helper()
	if task.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("task %s is %s, want input-required", task.ID, task.Status.State)
	}
	for _, p := range task.Status.Message.Parts {
		d, ok := p.Content.(a2a.Data)
		if !ok {
			continue
		}
		raw, _ := json.Marshal(d.Value)
		var v struct {
			Interrupts []map[string]any `json:"interrupts"`
			Seq        int64            `json:"seq"`
		}
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatal(err)
		}
		return v.Interrupts, v.Seq
	}
	t.Fatalf("the input-required status has no data part: %+v", task.Status.Message)
	return nil, 0
}

func decide(task *a2a.Task, seq int64, decisions ...map[string]any) *a2a.SendMessageRequest {
	msg := a2a.NewMessageForTask(a2a.MessageRoleUser, task, a2a.NewDataPart(map[string]any{"decisions": decisions, "seq": seq}))
	return &a2a.SendMessageRequest{Message: msg}
}

// send sends req and answers the task it gets back.
func send(t *testing.T, c *a2aclient.Client, req *a2a.SendMessageRequest) *a2a.Task {
	t.Helper()
	res, err := c.SendMessage(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	task, ok := res.(*a2a.Task)
	if !ok {
		t.Fatalf("the answer is a %T, want a task", res)
	}
	return task
}

func TestApprovalOverA2A(t *testing.T) {
	ctx := context.Background()
	url, deploys := opsServer(t, nil)
	c, card := client(t, url)
	if card.Name != "ops" || !card.Capabilities.Streaming || card.SupportedInterfaces[0].URL != url {
		t.Fatalf("card: name %q, streaming %v, url %q; want ops, true, %s", card.Name, card.Capabilities.Streaming, card.SupportedInterfaces[0].URL, url)
	}
	if !strings.Contains(skillIDs(card), "ops.deploy") {
		t.Fatalf("card skills %s lack the deploy tool", skillIDs(card))
	}

	task := send(t, c, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("ship web"))})
	ins, seq := pause(t, task)
	if len(ins) != 1 || ins[0]["kind"] != "approval" || ins[0]["tool"] != "deploy" || ins[0]["may_decide"] != true {
		t.Fatalf("interrupts %v: want one approval of deploy the caller may decide", ins)
	}
	if deploys.Load() != 0 {
		t.Fatal("deploy ran before it was approved")
	}
	got, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: task.ID})
	if err != nil || got.Status.State != a2a.TaskStateInputRequired || got.ContextID != task.ContextID {
		t.Fatalf("GetTask: %v, %+v", err, got)
	}

	approve := map[string]any{"interrupt_id": ins[0]["id"], "action": "approve"}
	// A decision on a seq that is not the pause's is refused and changes nothing.
	_, err = c.SendMessage(ctx, decide(task, seq-1, approve))
	var a2aErr *a2a.Error
	if !errors.Is(err, a2a.ErrInvalidParams) || !errors.As(err, &a2aErr) || a2aErr.Details["cairn_code"] != "conflict" || !strings.Contains(err.Error(), "stale seq") {
		t.Fatalf("a stale seq: %v (%+v), want invalid params with cairn_code conflict", err, a2aErr)
	}
	if deploys.Load() != 0 {
		t.Fatal("a refused decision ran the tool")
	}

	done := send(t, c, decide(task, seq, approve))
	if done.Status.State != a2a.TaskStateCompleted || len(done.Artifacts) != 1 || done.Artifacts[0].Parts[0].Text() != "done: deployed web" {
		t.Fatalf("after approval: %s, artifacts %+v", done.Status.State, done.Artifacts)
	}
	// The same approval again is refused: the task is done and deploy ran once.
	if _, err := c.SendMessage(ctx, decide(task, seq, approve)); err == nil {
		t.Fatal("a second approval was taken")
	}
	if n := deploys.Load(); n != 1 {
		t.Fatalf("deploy ran %d times, want once", n)
	}
}

func skillIDs(card *a2a.AgentCard) string {
	var ids []string
	for _, s := range card.Skills {
		ids = append(ids, s.ID)
	}
	return strings.Join(ids, ",")
}

func TestStreamingApprovalOverA2A(t *testing.T) {
	ctx := context.Background()
	url, deploys := opsServer(t, nil)
	c, _ := client(t, url)

	var events []a2a.Event
	for ev, err := range c.SendStreamingMessage(ctx, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("ship web"))}) {
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, ev)
	}
	first, ok := events[0].(*a2a.Task)
	if !ok || first.Status.State != a2a.TaskStateWorking {
		t.Fatalf("the stream's first event is %#v, want the working task", events[0])
	}
	last, ok := events[len(events)-1].(*a2a.TaskStatusUpdateEvent)
	if !ok || last.Status.State != a2a.TaskStateInputRequired || last.TaskID != first.ID {
		t.Fatalf("the stream's last event is %#v, want input-required of %s", events[len(events)-1], first.ID)
	}
	ins, seq := pause(t, &a2a.Task{ID: last.TaskID, Status: last.Status})

	var states []string
	var artifact string
	task := &a2a.Task{ID: first.ID, ContextID: first.ContextID}
	for ev, err := range c.SendStreamingMessage(ctx, decide(task, seq, map[string]any{"interrupt_id": ins[0]["id"], "action": "approve"})) {
		if err != nil {
			t.Fatal(err)
		}
		switch e := ev.(type) {
		case *a2a.Task:
			states = append(states, "task:"+string(e.Status.State))
		case *a2a.TaskStatusUpdateEvent:
			states = append(states, string(e.Status.State))
		case *a2a.TaskArtifactUpdateEvent:
			artifact = e.Artifact.Parts[0].Text()
		}
	}
	want := "task:TASK_STATE_WORKING,TASK_STATE_WORKING,TASK_STATE_COMPLETED"
	if strings.Join(states, ",") != want || artifact != "done: deployed web" {
		t.Fatalf("the decision's stream: %v, artifact %q; want %s and the answer", states, artifact, want)
	}
	if n := deploys.Load(); n != 1 {
		t.Fatalf("deploy ran %d times, want once", n)
	}

	// Subscribing to a task that is done gives its state and ends.
	var sub []a2a.Event
	for ev, err := range c.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: first.ID}) {
		if err != nil {
			t.Fatal(err)
		}
		sub = append(sub, ev)
	}
	if len(sub) != 1 || sub[0].(*a2a.Task).Status.State != a2a.TaskStateCompleted {
		t.Fatalf("subscribe to a completed task: %#v", sub)
	}
}

func TestCancelOverA2A(t *testing.T) {
	ctx := context.Background()
	url, deploys := opsServer(t, nil)
	c, _ := client(t, url)
	task := send(t, c, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("ship web"))})
	_, seq := pause(t, task)
	got, err := c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: task.ID})
	if err != nil || got.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("cancel: %v, %+v", err, got)
	}
	if _, err := c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: task.ID}); !errors.Is(err, a2a.ErrTaskNotCancelable) {
		t.Fatalf("cancelling again: %v, want task not cancelable", err)
	}
	if _, err := c.SendMessage(ctx, decide(task, seq, map[string]any{"interrupt_id": "x", "action": "approve"})); !errors.Is(err, a2a.ErrUnsupportedOperation) {
		t.Fatalf("deciding on a canceled task: %v, want unsupported operation", err)
	}
	if _, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: "no-such-task"}); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Fatalf("an unknown task: %v, want task not found", err)
	}
	if deploys.Load() != 0 {
		t.Fatal("a canceled deploy ran")
	}
}

func TestRefusedMessagesOverA2A(t *testing.T) {
	ctx := context.Background()
	url, _ := opsServer(t, nil)
	c, _ := client(t, url)
	for name, msg := range map[string]*a2a.Message{
		"agent role": a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart("hi")),
		"no text":    a2a.NewMessage(a2a.MessageRoleUser, a2a.NewDataPart(map[string]any{"x": 1})),
		"file part":  a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hi"), a2a.NewFileURLPart("http://x/y", "text/plain")),
	} {
		if _, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: msg}); !errors.Is(err, a2a.ErrInvalidParams) {
			t.Errorf("%s: %v, want invalid params", name, err)
		}
	}
	task := send(t, c, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("ship web"))})
	ins, seq := pause(t, task)
	for name, data := range map[string]map[string]any{
		"no seq":        {"decisions": []any{map[string]any{"interrupt_id": ins[0]["id"], "action": "approve"}}},
		"unknown field": {"decisions": []any{map[string]any{"interrupt_id": ins[0]["id"], "action": "approve"}}, "seq": seq, "sequence": 1},
		"no decisions":  {"decisions": []any{}, "seq": seq},
	} {
		msg := a2a.NewMessageForTask(a2a.MessageRoleUser, task, a2a.NewDataPart(data))
		if _, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: msg}); !errors.Is(err, a2a.ErrInvalidParams) {
			t.Errorf("%s: %v, want invalid params", name, err)
		}
	}
	// Text does not approve: an approval takes a data part.
	msg := a2a.NewMessageForTask(a2a.MessageRoleUser, task, a2a.NewTextPart("yes"))
	if _, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: msg}); !errors.Is(err, a2a.ErrInvalidParams) {
		t.Errorf("text on an approval: %v, want invalid params", err)
	}
	got, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: task.ID})
	if _, now := pause(t, got); err != nil || now != seq {
		t.Fatalf("refused messages changed the task: seq %d, want %d (%v)", now, seq, err)
	}
}

// The same message sent again (a retry after a lost answer) is the same
// task, not a second one; another message is another task.
func TestTheSameMessageIsTheSameTask(t *testing.T) {
	url, _ := opsServer(t, nil)
	c, _ := client(t, url)
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("ship web"))
	first := send(t, c, &a2a.SendMessageRequest{Message: msg})
	again := send(t, c, &a2a.SendMessageRequest{Message: msg})
	if again.ID != first.ID || again.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("the message sent again: task %s (%s), want %s", again.ID, again.Status.State, first.ID)
	}
	other := send(t, c, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("ship web"))})
	if other.ID == first.ID {
		t.Fatal("another message was taken as the same task")
	}
}

// configuration.returnImmediately answers the new task at once, working;
// its turn goes on and GetTask shows it pause.
func TestReturnImmediately(t *testing.T) {
	ctx := context.Background()
	url, _ := opsServer(t, nil)
	c, _ := client(t, url)
	task := send(t, c, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("ship web")),
		Config: &a2a.SendMessageConfig{ReturnImmediately: true}})
	if task.Status.State != a2a.TaskStateWorking {
		t.Fatalf("returned at once: %s, want working", task.Status.State)
	}
	testwait.For(t, 5*time.Second, "the detached task to pause", func() bool {
		got, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: task.ID})
		return err == nil && got.Status.State == a2a.TaskStateInputRequired
	})
}

// The interrupts go out as the API writes them: an argument's number
// past float64's precision stays whole on the wire.
func TestPauseKeepsNumbersWhole(t *testing.T) {
	deploy := cairn.NewTool(&cairn.Tool{Name: "pay", Description: "Pay.", Approval: cairn.Always()},
		func(ctx context.Context, a struct {
			Cents int64 `json:"cents"`
		}) (string, error) {
			return "paid", nil
		})
	m := scripted.New(scripted.Reply{ToolCalls: []scripted.Call{{Name: "pay", Arguments: `{"cents":123456789012345678}`}}}, scripted.Reply{Text: "done"})
	r, err := cairn.NewRunner([]*cairn.Agent{{Name: "ops", Model: m, Tools: []*cairn.Tool{deploy}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	url := mount(t, r, nil)
	body := `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"pay"}]}}}`
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(b), `"cents":123456789012345678`) || !strings.Contains(string(b), "TASK_STATE_INPUT_REQUIRED") {
		t.Fatalf("the pause on the wire:\n%s", b)
	}
}
