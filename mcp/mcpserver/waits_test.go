package mcpserver_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/mcp/mcpserver"
	"github.com/cairnhq/cairn/model"
)

// A call the client runs is not elicited: the tool's result lists it as a
// structured result, and the MCP client completes it with cairn_resume
// (action complete, with the output), which runs the session on.
func TestServedClientToolCompletedWithResume(t *testing.T) {
	m := model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		if l := req.Messages[len(req.Messages)-1]; l.Role == model.RoleTool {
			return &model.Response{Message: model.Message{Content: "You are in " + l.Content}}, nil
		}
		return &model.Response{Message: model.Message{ToolCalls: []model.ToolCall{{ID: "c1", Name: "get_location", Arguments: `{}`}}}}, nil
	})
	locate := cairn.ClientTool(&cairn.Tool{Name: "get_location", ResultSchema: json.RawMessage(`{"type":"object","required":["city"]}`)})
	r, err := cairn.NewRunner([]*cairn.Agent{{Name: "weather", Model: m, Tools: []*cairn.Tool{locate}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	elicited := 0
	cs := connectTo(t, r, func(ctx context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		elicited++
		return &sdk.ElicitResult{Action: "cancel"}, nil
	})
	ctx := context.Background()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "weather", Arguments: map[string]any{"input": "where am I?"}})
	if err != nil || res.IsError || elicited != 0 {
		t.Fatalf("call: %v %+v (elicited %d)", err, res, elicited)
	}
	sc, _ := res.StructuredContent.(map[string]any)
	ins, _ := sc["interrupts"].([]any)
	if len(ins) != 1 || !strings.Contains(text(res), "Run tool get_location with {} yourself") {
		t.Fatalf("the paused result: %s %v", text(res), sc)
	}
	in := ins[0].(map[string]any)
	if in["kind"] != "client" {
		t.Fatalf("interrupt %v", in)
	}
	res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: mcpserver.ResumeTool, Arguments: map[string]any{"session_id": sc["session_id"],
		"decisions": []any{map[string]any{"interrupt_id": in["id"], "action": "complete", "output": map[string]any{"city": "Lyon"}}}}})
	if err != nil || res.IsError || text(res) != `You are in {"city":"Lyon"}` {
		t.Fatalf("resume: %v %s", err, text(res))
	}
}
