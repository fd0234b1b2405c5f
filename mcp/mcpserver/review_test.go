package mcpserver_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/model"
)

// A reviewed answer reaches an MCP client as an elicitation with the
// answer to edit: declining with a reason sends it back to the model,
// accepting with an edited answer lets the edit go.
func TestServedReviewByElicitation(t *testing.T) {
	var seen []string
	m := model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		seen = append(seen, req.Messages[len(req.Messages)-1].Content)
		return &model.Response{Message: model.Message{Content: `{"priority":"low"}`}}, nil
	})
	r, err := cairn.NewRunner([]*cairn.Agent{{Name: "triage", Model: m, Review: cairn.Always(),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"priority":{"enum":["low","high"]}},"required":["priority"]}`)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var asked []string
	cs := connectTo(t, r, func(ctx context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		asked = append(asked, req.Params.Message)
		if len(asked) == 1 {
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"action": "reject", "reason": "a disk at 95% is high"}}, nil
		}
		return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"action": "edit", "output": `{"priority":"high"}`}}, nil
	})
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "triage", Arguments: map[string]any{"input": "disk at 95%"}})
	if err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}
	if got := text(res); got != `{"priority":"high"}` {
		t.Fatalf("result %q", got)
	}
	if len(asked) != 2 || !strings.Contains(asked[0], "review.\n"+`{"priority":"low"}`) || len(seen) != 2 || !strings.Contains(seen[1], "a disk at 95% is high") {
		t.Fatalf("asked %q; the model saw %q", asked, seen)
	}
}
