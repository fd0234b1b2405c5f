package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/model/scripted"
	"github.com/cairnhq/cairn/server"
)

// bearer is an A2A client interceptor that sends a Cairn token.
type bearer struct {
	a2aclient.PassthroughInterceptor
	token string
}

func (b bearer) Before(ctx context.Context, req *a2aclient.Request) (context.Context, any, error) {
	req.ServiceParams.Append("Authorization", "Bearer "+b.token)
	return ctx, nil, nil
}

// Over A2A a caller is an actor like any other: the card is public and
// names the bearer scheme, the endpoint takes the API's tokens, a user's
// task is not another user's, and the runner's decision point says who
// decides (an approver; not the user who asked).
func TestA2AThroughTheServer(t *testing.T) {
	ctx := context.Background()
	var deploys atomic.Int32
	deploy := cairn.NewTool(&cairn.Tool{Name: "deploy", Description: "Deploy.", Approval: cairn.Always()},
		func(ctx context.Context, a struct{}) (string, error) { deploys.Add(1); return "deployed", nil })
	ops := scripted.New(scripted.Reply{ToolCalls: []scripted.Call{{Name: "deploy", Arguments: `{}`}}}, scripted.Reply{Text: "done"})
	r, err := cairn.NewRunner([]*cairn.Agent{{Name: "ops", Model: ops, Tools: []*cairn.Tool{deploy}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	srv := httptest.NewServer(server.New(r, &server.Options{A2A: []string{"ops"}, Tokens: []server.Token{
		{Name: "uma", Secret: "user-token-uma-0123456789", Role: server.RoleUser},
		{Name: "ulf", Secret: "user-token-ulf-0123456789", Role: server.RoleUser},
		{Name: "ada", Secret: "approver-token-ada-012345", Role: server.RoleApprover},
	}}))
	defer srv.Close()
	url := srv.URL + "/a2a/ops"

	card, err := agentcard.DefaultResolver.Resolve(ctx, url)
	if err != nil {
		t.Fatalf("the card needs no token: %v", err)
	}
	if _, ok := card.SecuritySchemes["bearer"]; !ok || len(card.SecurityRequirements) != 1 || card.SupportedInterfaces[0].URL != url {
		t.Fatalf("card: schemes %v, requirements %v, url %s", card.SecuritySchemes, card.SecurityRequirements, card.SupportedInterfaces[0].URL)
	}
	resp, err := http.Post(url, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a request without a token: %d, want 401", resp.StatusCode)
	}
	as := func(token string) *a2aclient.Client {
		c, err := a2aclient.NewFromCard(ctx, card, a2aclient.WithCallInterceptors(bearer{token: token}))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	uma, ulf, ada := as("user-token-uma-0123456789"), as("user-token-ulf-0123456789"), as("approver-token-ada-012345")

	res, err := uma.SendMessage(ctx, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("ship it"))})
	if err != nil {
		t.Fatal(err)
	}
	task := res.(*a2a.Task)
	sess, err := r.Session(ctx, string(task.ID))
	if err != nil || sess.Owner != "uma" || task.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("the task's session: %v, owner %q, state %s", err, sess.Owner, task.Status.State)
	}
	if _, err := ulf.GetTask(ctx, &a2a.GetTaskRequest{ID: task.ID}); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Fatalf("another user reads the task: %v, want task not found", err)
	}
	approve := a2a.NewDataPart(map[string]any{"seq": sess.Seq, "decisions": []any{map[string]any{"interrupt_id": sess.Interrupts[0].ID, "action": "approve"}}})
	if _, err := uma.SendMessage(ctx, &a2a.SendMessageRequest{Message: a2a.NewMessageForTask(a2a.MessageRoleUser, task, approve)}); !errors.Is(err, a2a.ErrUnauthorized) {
		t.Fatalf("the user who asked approves: %v, want permission denied", err)
	}
	if mayDecide(t, ada, task) != true || mayDecide(t, uma, task) != false {
		t.Fatal("may_decide does not follow the decision point")
	}
	res, err = ada.SendMessage(ctx, &a2a.SendMessageRequest{Message: a2a.NewMessageForTask(a2a.MessageRoleUser, task, approve)})
	if err != nil || res.(*a2a.Task).Status.State != a2a.TaskStateCompleted {
		t.Fatalf("the approver approves: %v", err)
	}
	if deploys.Load() != 1 {
		t.Fatalf("deploy ran %d times", deploys.Load())
	}
	events, err := r.Events(ctx, string(task.ID), 0)
	if err != nil {
		t.Fatal(err)
	}
	decided := 0
	for _, ev := range events {
		if ev.Type == cairn.EventDecision {
			decided++
			var d struct {
				Actor struct {
					Name string `json:"name"`
				} `json:"actor"`
			}
			_ = json.Unmarshal(ev.Data, &d)
			if d.Actor.Name != "ada" {
				t.Fatalf("the decision's actor is %q, want ada: %s", d.Actor.Name, ev.Data)
			}
		}
	}
	if decided != 1 {
		t.Fatalf("%d decision events, want 1", decided)
	}
}

// mayDecide is what the task's input-required status tells c of its one
// interrupt.
func mayDecide(t *testing.T, c *a2aclient.Client, task *a2a.Task) any {
	t.Helper()
	got, err := c.GetTask(context.Background(), &a2a.GetTaskRequest{ID: task.ID})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range got.Status.Message.Parts {
		if d, ok := p.Content.(a2a.Data); ok {
			ins := d.Value.(map[string]any)["interrupts"].([]any)
			return ins[0].(map[string]any)["may_decide"]
		}
	}
	t.Fatal("no data part")
	return nil
}

// With an OpenID Provider configured, the card names it too: a client
// may sign in there and send the ID token.
func TestA2ACardNamesTheOpenIDProvider(t *testing.T) {
	r, err := cairn.NewRunner([]*cairn.Agent{{Name: "ops", Model: scripted.New(scripted.Reply{Text: "hi"})}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	srv := httptest.NewServer(server.New(r, &server.Options{A2A: []string{"ops"}, OIDC: &server.OIDC{Issuer: "https://id.example.org/", ClientID: "cairn"}}))
	defer srv.Close()
	card, err := agentcard.DefaultResolver.Resolve(context.Background(), srv.URL+"/a2a/ops")
	if err != nil {
		t.Fatal(err)
	}
	oidc, ok := card.SecuritySchemes["oidc"].(a2a.OpenIDConnectSecurityScheme)
	if !ok || oidc.OpenIDConnectURL != "https://id.example.org/.well-known/openid-configuration" || len(card.SecurityRequirements) != 2 {
		t.Fatalf("the card's security: %+v, %+v", card.SecuritySchemes, card.SecurityRequirements)
	}
}
