package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/model/scripted"
	"github.com/cairnhq/cairn/server"
)

// The official A2A JavaScript SDK (@a2a-js/sdk 1.3, server/testdata/
// clients/a2a.mjs) is the independent check of the A2A door: it discovers
// the card, sees input-required with the interrupt, approves with a data
// part and gets completed with the artifact, is refused a stale seq and a
// second approval, and does the same over a stream. Each deploy runs once.
func TestA2AWithTheJavaScriptSDK(t *testing.T) {
	var deploys atomic.Int32
	deploy := cairn.NewTool(&cairn.Tool{Name: "deploy", Description: "Deploy a service.", Approval: cairn.Always()},
		func(ctx context.Context, a struct {
			Service string `json:"service"`
		}) (string, error) {
			deploys.Add(1)
			return "deployed " + a.Service, nil
		})
	script := []scripted.Reply{{ToolCalls: []scripted.Call{{Name: "deploy", Arguments: `{"service":"web"}`}}}, {Text: "done: {{.LastResult}}"}}
	ops := scripted.New(append(script, script...)...)
	r, err := cairn.NewRunner([]*cairn.Agent{{Name: "ops", Model: ops, Tools: []*cairn.Tool{deploy}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	srv := httptest.NewServer(server.New(r, &server.Options{A2A: []string{"ops"}, Tokens: []server.Token{
		{Name: "ada", Secret: "approver-token-ada-012345", Role: server.RoleApprover},
	}}))
	defer srv.Close()

	out := nodeClient(t, "a2a.mjs", "@a2a-js/sdk", nil, srv.URL+"/a2a/ops/", "approver-token-ada-012345")
	steps := map[string]map[string]any{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var step map[string]any
		if err := json.Unmarshal(sc.Bytes(), &step); err != nil {
			t.Fatalf("%v: %s", err, sc.Bytes())
		}
		steps[step["step"].(string)] = step
	}
	t.Logf("%s", out)
	card := steps["card"]
	if card["name"] != "ops" || card["streaming"] != true || card["url"] != srv.URL+"/a2a/ops" || !strings.Contains(jsonOf(card["skills"]), "ops.deploy") || jsonOf(card["security"]) != `["bearer"]` {
		t.Errorf("the card as the SDK read it: %v", card)
	}
	paused := steps["paused"]
	ins, _ := paused["interrupts"].([]any)
	if paused["state"] != "TASK_STATE_INPUT_REQUIRED" || len(ins) != 1 || ins[0].(map[string]any)["kind"] != "approval" || ins[0].(map[string]any)["tool"] != "deploy" {
		t.Errorf("the pause as the SDK read it: %v", paused)
	}
	if !strings.Contains(paused["text"].(string), "deploy") {
		t.Errorf("the pause's text part %q does not say what is asked", paused["text"])
	}
	if e := steps["stale"]["error"].(string); !strings.Contains(e, "seq") {
		t.Errorf("a stale seq: %q, want a refusal naming the seq", e)
	}
	if a := steps["approved"]; a["state"] != "TASK_STATE_COMPLETED" || a["artifact"] != "done: deployed web" {
		t.Errorf("after the approval: %v", a)
	}
	if e := steps["again"]["error"].(string); e == "" {
		t.Error("a second approval was taken")
	}
	if steps["get"]["state"] != "TASK_STATE_COMPLETED" {
		t.Errorf("getTask: %v", steps["get"])
	}
	stream := steps["stream"]
	if jsonOf(stream["paused"]) != `["task:TASK_STATE_WORKING","statusUpdate:TASK_STATE_INPUT_REQUIRED"]` ||
		jsonOf(stream["resumed"]) != `["task:TASK_STATE_WORKING","statusUpdate:TASK_STATE_WORKING","artifactUpdate","statusUpdate:TASK_STATE_COMPLETED"]` ||
		stream["artifact"] != "done: deployed web" {
		t.Errorf("the streams: %v", stream)
	}
	if n := deploys.Load(); n != 2 {
		t.Errorf("deploy ran %d times for two approved tasks, want 2", n)
	}
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
