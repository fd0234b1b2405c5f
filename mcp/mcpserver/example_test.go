package mcpserver_test

import (
	"context"
	"fmt"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/mcp/mcpserver"
	"github.com/cairnhq/cairn/model/scripted"
)

// Serve an agent as an MCP tool: its deploy waits for approval, which the
// MCP client gives by answering the elicitation form.
func ExampleNew() {
	ctx := context.Background()
	deploy := cairn.NewTool(&cairn.Tool{Name: "deploy", Description: "Deploy.", Approval: cairn.Always()},
		func(ctx context.Context, a struct{}) (string, error) { return "deployed", nil })
	ops := scripted.New(scripted.Reply{ToolCalls: []scripted.Call{{Name: "deploy", Arguments: `{}`}}}, scripted.Reply{Text: "ops: {{.LastResult}}"})
	runner, _ := cairn.NewRunner([]*cairn.Agent{{Name: "ops", Model: ops, Tools: []*cairn.Tool{deploy}}}, nil)
	defer runner.Close()

	// The server side; a real one runs on stdio (cairn mcp) or HTTP (/mcp).
	clientEnd, serverEnd := sdk.NewInMemoryTransports()
	ss, _ := mcpserver.New(runner, nil).Connect(ctx, serverEnd, nil)
	defer ss.Close()

	// An MCP client that approves what it is asked.
	client := sdk.NewClient(&sdk.Implementation{Name: "client", Version: "1"}, &sdk.ClientOptions{
		ElicitationHandler: func(ctx context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			fmt.Println("asked:", req.Params.Message)
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"action": "approve"}}, nil
		}})
	cs, _ := client.Connect(ctx, clientEnd, nil)
	defer cs.Close()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "ops", Arguments: map[string]any{"input": "ship it"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("result:", res.Content[0].(*sdk.TextContent).Text)
	// Output:
	// asked: ops › Run tool deploy with arguments {}?
	// result: ops: deployed
}
