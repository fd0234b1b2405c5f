package a2aserver_test

import (
	"context"
	"fmt"
	"net/http/httptest"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/a2a/a2aserver"
	"github.com/cairnhq/cairn/model/scripted"
)

// Serve an agent over A2A: its deploy waits for approval, so the task
// turns input-required; the caller approves with a data part and gets
// the answer as the task's artifact.
func ExampleNew() {
	ctx := context.Background()
	deploy := cairn.NewTool(&cairn.Tool{Name: "deploy", Description: "Deploy.", Approval: cairn.Always()},
		func(ctx context.Context, a struct{}) (string, error) { return "deployed", nil })
	ops := scripted.New(scripted.Reply{ToolCalls: []scripted.Call{{Name: "deploy", Arguments: `{}`}}}, scripted.Reply{Text: "ops: {{.LastResult}}"})
	runner, _ := cairn.NewRunner([]*cairn.Agent{{Name: "ops", Model: ops, Tools: []*cairn.Tool{deploy}}}, nil)
	defer runner.Close()
	h, _ := a2aserver.New(runner, "ops", nil)
	srv := httptest.NewServer(h)
	defer srv.Close()

	// Any A2A client: here the official Go SDK's.
	card, _ := agentcard.DefaultResolver.Resolve(ctx, srv.URL)
	client, _ := a2aclient.NewFromCard(ctx, card)
	res, _ := client.SendMessage(ctx, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("ship it"))})
	task := res.(*a2a.Task)
	fmt.Println(task.Status.State)

	pause := task.Status.Message.Parts[1].Data().(map[string]any) // {"interrupts": […], "seq": N}
	in := pause["interrupts"].([]any)[0].(map[string]any)
	approve := a2a.NewDataPart(map[string]any{"seq": pause["seq"], "decisions": []any{map[string]any{"interrupt_id": in["id"], "action": "approve"}}})
	res, _ = client.SendMessage(ctx, &a2a.SendMessageRequest{Message: a2a.NewMessageForTask(a2a.MessageRoleUser, task, approve)})
	done := res.(*a2a.Task)
	fmt.Println(done.Status.State, done.Artifacts[0].Parts[0].Text())
	// Output:
	// TASK_STATE_INPUT_REQUIRED
	// TASK_STATE_COMPLETED ops: deployed
}
