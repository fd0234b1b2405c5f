package mcpserver_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testkit/mcptest"
	"github.com/cairnhq/cairn/internal/testkit/testwait"
	"github.com/cairnhq/cairn/mcp/mcpserver"
	"github.com/cairnhq/cairn/mcp/mcptools"
)

// gatewayEnv is a gateway in front of the real filesystem MCP server
// (npm), sandboxed in dir, with a runner whose direct agent "gateway"
// holds the calls that need a person.
type gatewayEnv struct {
	dir    string
	runner *cairn.Runner
	srv    *sdk.Server
}

func newGateway(t *testing.T, opts mcpserver.GatewayOptions) *gatewayEnv {
	t.Helper()
	dir := t.TempDir()
	hub, err := mcptools.Connect(context.Background(), []mcptools.Server{{Name: "fs", Command: []string{mcptest.Server(t, "mcp-server-filesystem"), dir}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hub.Close() })
	runner, err := cairn.NewRunner([]*cairn.Agent{{Name: "gateway", Direct: true, Toolsets: []cairn.Toolset{hub.Toolset("fs", nil)}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { runner.Close() })
	opts.Agent, opts.Hub, opts.Servers = "gateway", hub, []string{"fs"}
	srv, err := mcpserver.NewGateway(runner, &opts)
	if err != nil {
		t.Fatal(err)
	}
	return &gatewayEnv{dir: dir, runner: runner, srv: srv}
}

// connect is an MCP client of the gateway (the official Go SDK's),
// answering elicitations with elicit when it is not nil.
func (e *gatewayEnv) connect(t *testing.T, elicit func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error)) *sdk.ClientSession {
	t.Helper()
	ct, st := sdk.NewInMemoryTransports()
	if _, err := e.srv.Connect(context.Background(), st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "gateway-test", Version: "1"}, &sdk.ClientOptions{ElicitationHandler: elicit}).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// pending waits for the gateway's approval of tool and returns it with its session's seq.
func (e *gatewayEnv) pending(t *testing.T, tool string) (cairn.PendingInterrupt, int64) {
	t.Helper()
	var found cairn.PendingInterrupt
	testwait.For(t, 20*time.Second, "the gateway's approval of "+tool, func() bool {
		list, _ := e.runner.PendingInterrupts(context.Background())
		for _, p := range list {
			if p.Tool == tool {
				found = p
				return true
			}
		}
		return false
	})
	return found, found.Seq
}

func TestGatewayListsAndPassesReadsThrough(t *testing.T) {
	e := newGateway(t, mcpserver.GatewayOptions{})
	cs := e.connect(t, nil)
	ctx := context.Background()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*sdk.Tool{}
	for _, tl := range tools.Tools {
		byName[tl.Name] = tl
	}
	write, read := byName["fs__write_file"], byName["fs__read_text_file"]
	if write == nil || read == nil || read.Annotations == nil || !read.Annotations.ReadOnlyHint || write.InputSchema == nil {
		t.Fatalf("tools: %v", tools.Tools)
	}
	if rule := write.Meta[mcpserver.ApprovalMeta]; !strings.Contains(rule.(string), "always") {
		t.Fatalf("write_file's policy in _meta: %v", write.Meta)
	}
	if err := os.WriteFile(filepath.Join(e.dir, "a.txt"), []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "fs__read_text_file", Arguments: map[string]any{"path": filepath.Join(e.dir, "a.txt")}})
	if err != nil || res.IsError || text(res) != "hello" {
		t.Fatalf("read: %v %+v", err, res)
	}
	if list, _ := e.runner.Sessions(ctx, ""); len(list) != 0 {
		t.Fatalf("a read made %d sessions", len(list))
	}
}

func TestGatewayHoldsAWriteForAPerson(t *testing.T) {
	e := newGateway(t, mcpserver.GatewayOptions{Hold: time.Minute, ProgressEvery: 20 * time.Millisecond})
	cs := e.connect(t, nil)
	ctx := context.Background()
	path := filepath.Join(e.dir, "out.txt")

	type answer struct {
		res *sdk.CallToolResult
		err error
	}
	call := func(content string) <-chan answer {
		done := make(chan answer, 1)
		go func() {
			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "fs__write_file", Arguments: map[string]any{"path": path, "content": content}})
			done <- answer{res, err}
		}()
		return done
	}
	t.Run("approved with an edit: written once, with the edited content", func(t *testing.T) {
		done := call("draft")
		in, seq := e.pending(t, "fs__write_file")
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Fatalf("written before approval: %v", err)
		}
		if _, err := e.runner.Resume(ctx, in.SessionID, seq, []cairn.Decision{{InterruptID: in.ID, Action: cairn.ActionApprove,
			Arguments: json.RawMessage(`{"path":` + strconvQuote(path) + `,"content":"final"}`)}}, nil); err != nil {
			t.Fatal(err)
		}
		a := <-done
		if a.err != nil || a.res.IsError || !strings.Contains(text(a.res), "Successfully wrote") {
			t.Fatalf("%v %+v", a.err, a.res)
		}
		if b, _ := os.ReadFile(path); string(b) != "final" {
			t.Fatalf("file: %q", b)
		}
	})
	t.Run("rejected: a tool error with the reason", func(t *testing.T) {
		done := call("other")
		in, seq := e.pending(t, "fs__write_file")
		if _, err := e.runner.Resume(ctx, in.SessionID, seq, []cairn.Decision{{InterruptID: in.ID, Action: cairn.ActionReject, Reason: "not that file"}}, nil); err != nil {
			t.Fatal(err)
		}
		a := <-done
		if a.err != nil || !a.res.IsError || !strings.Contains(text(a.res), "not that file") {
			t.Fatalf("%v %+v", a.err, a.res)
		}
		if b, _ := os.ReadFile(path); string(b) != "final" {
			t.Fatalf("file: %q", b)
		}
	})
}

func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// The client asked in-band (elicitation) approves; the call runs once.
func TestGatewayAsksAClientThatCanAnswer(t *testing.T) {
	e := newGateway(t, mcpserver.GatewayOptions{Hold: time.Minute})
	var asked atomic.Int32
	cs := e.connect(t, func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		asked.Add(1)
		if !strings.Contains(req.Params.Message, "fs__write_file") {
			t.Errorf("asked: %q", req.Params.Message)
		}
		return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"action": "approve"}}, nil
	})
	path := filepath.Join(e.dir, "in-band.txt")
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "fs__write_file", Arguments: map[string]any{"path": path, "content": "yes"}})
	if err != nil || res.IsError || asked.Load() != 1 {
		t.Fatalf("%v %+v, asked %d", err, res, asked.Load())
	}
	if b, _ := os.ReadFile(path); string(b) != "yes" {
		t.Fatalf("file: %q", b)
	}
	list, _ := e.runner.Sessions(context.Background(), cairn.StatusCompleted)
	if len(list) != 1 {
		t.Fatalf("%d sessions", len(list))
	}
	a, err := e.runner.CallApproval(context.Background(), list[0].ID)
	if err != nil || a.Status != cairn.ApprovalApproved || a.Actor == nil || a.Actor.Name != "mcp" {
		t.Fatalf("%v %+v", err, a)
	}
}

// A client that goes away while its call is held, and calls again with
// the same idempotency key, waits on the same approval; approved, the
// write happens once. Past the hold, a call answers that it is pending.
func TestGatewayReconnectedCallAttaches(t *testing.T) {
	e := newGateway(t, mcpserver.GatewayOptions{Hold: 300 * time.Millisecond})
	ctx := context.Background()
	path := filepath.Join(e.dir, "once.txt")
	params := &sdk.CallToolParams{Name: "fs__write_file", Arguments: map[string]any{"path": path, "content": "x"},
		Meta: sdk.Meta{mcpserver.IdempotencyMeta: "write-once-1"}}

	first := e.connect(t, nil)
	res, err := first.CallTool(ctx, params)
	if err != nil || !res.IsError || !strings.Contains(text(res), "still waiting") {
		t.Fatalf("past the hold: %v %+v", err, res)
	}
	first.Close()
	in, seq := e.pending(t, "fs__write_file")

	second := e.connect(t, nil)
	done := make(chan *sdk.CallToolResult, 1)
	go func() {
		res, _ := second.CallTool(ctx, params)
		done <- res
	}()
	if _, err := e.runner.Resume(ctx, in.SessionID, seq, []cairn.Decision{{InterruptID: in.ID, Action: cairn.ActionApprove}}, nil); err != nil {
		t.Fatal(err)
	}
	if res := <-done; res == nil || res.IsError {
		// The hold may end before the approval lands; the next call gets the result.
		res, err = second.CallTool(ctx, params)
		if err != nil || res.IsError {
			t.Fatalf("after approval: %v %+v", err, res)
		}
	}
	// Again after it ran: the recorded result, no second run.
	if err := os.WriteFile(path, []byte("changed since"), 0o600); err != nil {
		t.Fatal(err)
	}
	res, err = second.CallTool(ctx, params)
	if err != nil || res.IsError || !strings.Contains(text(res), "Successfully wrote") {
		t.Fatalf("repeated: %v %+v", err, res)
	}
	if b, _ := os.ReadFile(path); string(b) != "changed since" {
		t.Fatalf("written again: %q", b)
	}
	if list, _ := e.runner.Sessions(ctx, ""); len(list) != 1 {
		t.Fatalf("%d sessions for one keyed call", len(list))
	}
}
