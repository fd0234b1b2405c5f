package mcptools_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairnhq/cairn/mcp/mcptools"
)

// An upstream server that answers too much, or never: a result over
// MaxResultBytes is an error result saying so (also for an agent's call),
// and a call past the timeout ends with an error; neither holds the caller.
func TestUpstreamResultsAndHangsAreBounded(t *testing.T) {
	srv := sdk.NewServer(&sdk.Implementation{Name: "unruly", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "huge", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}}, func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: strings.Repeat("x", 64<<10)}}}, nil, nil
	})
	release := make(chan struct{}) // the hung tool answers only when the test ends
	sdk.AddTool(srv, &sdk.Tool{Name: "hang", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}}, func(ctx context.Context, _ *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
		select {
		case <-ctx.Done():
		case <-release:
		}
		return nil, nil, ctx.Err()
	})
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	defer ts.Close()
	defer close(release)
	hub, err := mcptools.Connect(context.Background(), []mcptools.Server{{Name: "u", URL: ts.URL}}, &mcptools.Options{Timeout: 300 * time.Millisecond, MaxResultBytes: 32 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer hub.Close()
	ctx := context.Background()

	res, err := hub.Call(ctx, "u", "huge", []byte(`{}`))
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*sdk.TextContent).Text, "more than the 32768") {
		t.Fatalf("huge, passed through: %v %+v", err, res)
	}
	huge := hub.Tool("u", "huge", nil)
	if _, err := huge.Handler(ctx, []byte(`{}`)); err == nil || !strings.Contains(err.Error(), "more than the 32768") {
		t.Fatalf("huge, for an agent: %v", err)
	}
	start := time.Now()
	if _, err := hub.Call(ctx, "u", "hang", []byte(`{}`)); err == nil || !strings.Contains(err.Error(), "gave no result within 300ms") {
		t.Fatalf("hang: %v", err)
	}
	if waited := time.Since(start); waited > 10*time.Second {
		t.Fatalf("a hung server held the caller %s", waited)
	}
}
