package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairnhq/cairn/internal/testkit/mcptest"
	"github.com/cairnhq/cairn/internal/testkit/testwait"
)

// gatewayConfig: the real filesystem MCP server (npm) in a sandbox, behind
// the gateway; write_file asks (its annotations say destructive).
const gatewayConfig = `
store: sqlite:./cairn.db
mcp_servers:
  fs:
    command: [%q, %q]
gateway:
  servers: [fs]
  hold: 60s
`

// testdataServers is mcp/testdata/servers, where the npm MCP packages and
// the test clients live.
func testdataServers() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "mcp", "testdata", "servers")
}

// gatewayClient runs gateway.mjs (the official TypeScript MCP client) and
// returns its JSON lines as they come.
func gatewayClient(t *testing.T, args ...string) <-chan map[string]any {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed (Node 20; .ci/run installs it)")
	}
	cmd := exec.Command(node, append([]string{filepath.Join(testdataServers(), "gateway.mjs")}, args...)...)
	cmd.Stderr = os.Stderr
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := make(chan map[string]any, 8)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var v map[string]any
			if json.Unmarshal(sc.Bytes(), &v) == nil {
				lines <- v
			}
		}
	}()
	return lines
}

func next(t *testing.T, lines <-chan map[string]any, what string) map[string]any {
	t.Helper()
	select {
	case v, ok := <-lines:
		if !ok {
			t.Fatalf("the client ended before %s", what)
		}
		return v
	case <-time.After(60 * time.Second):
		t.Fatalf("no %s from the client", what)
	}
	return nil
}

// pendingWrite waits for the gateway's approval of a write in the inbox.
func pendingWrite(t *testing.T, url string) map[string]any {
	t.Helper()
	var in map[string]any
	testwait.For(t, 30*time.Second, "the held write in the inbox", func() bool {
		list, _ := getJSON(t, url+"/v1/interrupts")["interrupts"].([]any)
		for _, x := range list {
			if m := x.(map[string]any); m["tool"] == "fs__write_file" {
				in = m
				return true
			}
		}
		return false
	})
	return in
}

func resultText(v map[string]any) (string, bool) {
	res, _ := v["result"].(map[string]any)
	var parts []string
	for _, c := range res["content"].([]any) {
		parts = append(parts, fmt.Sprint(c.(map[string]any)["text"]))
	}
	isErr, _ := res["isError"].(bool)
	return strings.Join(parts, "\n"), isErr
}

// The acceptance of the MCP gateway with the official TypeScript client
// and @modelcontextprotocol/server-filesystem: tools/list shows the
// upstream tools; write_file pauses, shows in GET /v1/interrupts, is
// approved with edited arguments through REST and writes the edited
// content once; a rejection is a tool error with the reason; a client
// that goes away while its call is held and repeats it waits on the same
// approval and, approved, writes once; over stdio (cairn gateway), a
// client that answers elicitations approves in-band.
func TestGatewayWithTheTypeScriptClient(t *testing.T) {
	fs := mcptest.Server(t, "mcp-server-filesystem")
	dir, sandbox := t.TempDir(), t.TempDir()
	cfg := filepath.Join(dir, "cairn.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(gatewayConfig, fs, sandbox)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, url := serve(t, cfg)
	gateway := url + "/mcp/gateway"

	t.Run("approved with an edit", func(t *testing.T) {
		path := filepath.Join(sandbox, "notes.txt")
		lines := gatewayClient(t, "call", gateway, path, "draft")
		tools := next(t, lines, "tools")["tools"].([]any)
		byName := map[string]map[string]any{}
		for _, x := range tools {
			byName[x.(map[string]any)["name"].(string)] = x.(map[string]any)
		}
		if w, r := byName["fs__write_file"], byName["fs__read_text_file"]; w == nil || r == nil || r["readOnly"] != true || !strings.Contains(w["approval"].(string), "always") {
			t.Fatalf("tools/list: %v", tools)
		}
		in := pendingWrite(t, url)
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Fatalf("written before anyone approved: %v", err)
		}
		edited, _ := json.Marshal(map[string]any{"path": path, "content": "final"})
		status, body := post(t, url+"/v1/sessions/"+in["session_id"].(string)+"/decisions",
			fmt.Sprintf(`{"seq":%v,"decisions":[{"interrupt_id":%q,"action":"approve","arguments":%s}]}`, in["seq"], in["id"], edited))
		if status != 200 {
			t.Fatalf("approve: %d %v", status, body)
		}
		text, isErr := resultText(next(t, lines, "the result"))
		if isErr || !strings.Contains(text, "Successfully wrote") {
			t.Fatalf("result: %s", text)
		}
		if b, _ := os.ReadFile(path); string(b) != "final" {
			t.Fatalf("file: %q", b)
		}
	})
	t.Run("rejected", func(t *testing.T) {
		path := filepath.Join(sandbox, "never.txt")
		lines := gatewayClient(t, "call", gateway, path, "x")
		next(t, lines, "tools")
		in := pendingWrite(t, url)
		status, _ := post(t, url+"/v1/sessions/"+in["session_id"].(string)+"/decisions",
			fmt.Sprintf(`{"seq":%v,"decisions":[{"interrupt_id":%q,"action":"reject","reason":"not in the sandbox root"}]}`, in["seq"], in["id"]))
		if status != 200 {
			t.Fatalf("reject: %d", status)
		}
		text, isErr := resultText(next(t, lines, "the result"))
		if !isErr || !strings.Contains(text, "not in the sandbox root") {
			t.Fatalf("result: %v %s", isErr, text)
		}
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Fatalf("written: %v", err)
		}
	})
	t.Run("a client that went away repeats its call", func(t *testing.T) {
		path := filepath.Join(sandbox, "once.txt")
		lines := gatewayClient(t, "reconnect", gateway, path, "once")
		if v := next(t, lines, "the first call"); v["first"] != "gone" {
			t.Fatalf("first call: %v", v)
		}
		next(t, lines, "the second call")
		in := pendingWrite(t, url)
		// One approval for the two calls.
		list, _ := getJSON(t, url+"/v1/interrupts")["interrupts"].([]any)
		if len(list) != 1 {
			t.Fatalf("%d pending approvals for one call made twice: %v", len(list), list)
		}
		status, _ := post(t, url+"/v1/sessions/"+in["session_id"].(string)+"/decisions",
			fmt.Sprintf(`{"seq":%v,"decisions":[{"interrupt_id":%q,"action":"approve"}]}`, in["seq"], in["id"]))
		if status != 200 {
			t.Fatalf("approve: %d", status)
		}
		if text, isErr := resultText(next(t, lines, "the result")); isErr {
			t.Fatalf("result: %s", text)
		}
		if b, _ := os.ReadFile(path); string(b) != "once" {
			t.Fatalf("file: %q", b)
		}
		sessions, _ := getJSON(t, url+"/v1/sessions?agent=gateway")["sessions"].([]any)
		if len(sessions) != 3 { // the edit's, the rejection's, and this one
			t.Fatalf("%d gateway sessions", len(sessions))
		}
	})
	t.Run("in-band over stdio", func(t *testing.T) {
		path := filepath.Join(sandbox, "asked.txt")
		// cairn gateway shares the store with serve: its sessions are in the inbox too.
		lines := gatewayClient(t, "elicit", path, "yes", binary, "gateway", "--config", cfg)
		v := next(t, lines, "the result")
		asked, _ := v["asked"].([]any)
		if text, isErr := resultText(v); isErr || len(asked) != 1 || !strings.Contains(asked[0].(string), "fs__write_file") {
			t.Fatalf("asked %v; result %s", asked, text)
		}
		if b, _ := os.ReadFile(path); string(b) != "yes" {
			t.Fatalf("file: %q", b)
		}
	})
}

// replicaGatewayConfig: a slow upstream deploy behind the gateway, on a
// shared store with a 3s lease.
const replicaGatewayConfig = `
store: %s
lease: 3s
mcp_servers:
  slow:
    command: ["node", %q]
    env: {RUNS: %q, SLOW_MS: "4000"}
gateway:
  servers: [slow]
  hold: 8s
`

// kill -9 of the cairn serve holding a gateway call after its approval and
// before the upstream answered: the call is in doubt and never runs
// twice; three replicas serve /mcp/gateway from one store, and a client
// that calls again on another one attaches to the same session.
func TestGatewayReplicasKill9(t *testing.T) {
	mcptest.Server(t, "mcp-server-everything") // skips with how to install the npm packages
	for name, mk := range stores(t) {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			runs := filepath.Join(dir, "runs.txt")
			cfg := filepath.Join(dir, "cairn.yaml")
			if err := os.WriteFile(cfg, []byte(fmt.Sprintf(replicaGatewayConfig, mk(t), filepath.Join(testdataServers(), "slow-server.mjs"), runs)), 0o600); err != nil {
				t.Fatal(err)
			}
			nodes, urls := make([]*exec.Cmd, 3), make([]string, 3)
			for i := range nodes {
				nodes[i], urls[i] = serve(t, cfg)
			}
			ctx := context.Background()
			connect := func(url string) *sdk.ClientSession {
				cs, err := sdk.NewClient(&sdk.Implementation{Name: "replica-test", Version: "1"}, nil).Connect(ctx,
					&sdk.StreamableClientTransport{Endpoint: url + "/mcp/gateway", HTTPClient: &http.Client{}}, nil)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { cs.Close() })
				return cs
			}
			for i, url := range urls {
				tools, err := connect(url).ListTools(ctx, nil)
				if err != nil || len(tools.Tools) != 1 || tools.Tools[0].Name != "slow__deploy" {
					t.Fatalf("replica %d tools/list: %v %+v", i, err, tools)
				}
			}
			call := &sdk.CallToolParams{Name: "slow__deploy", Arguments: map[string]any{"env": "production"}, Meta: sdk.Meta{"io.cairn/idempotency-key": "deploy-42"}}
			go func() { _, _ = connect(urls[0]).CallTool(ctx, call) }() // its node dies under it
			var in map[string]any
			testwait.For(t, 30*time.Second, "the held deploy in the inbox of replica 2", func() bool {
				list, _ := getJSON(t, urls[2]+"/v1/interrupts")["interrupts"].([]any)
				if len(list) == 1 {
					in = list[0].(map[string]any)
				}
				return in != nil
			})
			id := in["session_id"].(string)
			// Approved on replica 0, which runs the deploy; killed mid-run.
			go func() {
				_, _ = http.Post(urls[0]+"/v1/sessions/"+id+"/decisions", "application/json",
					strings.NewReader(fmt.Sprintf(`{"seq":%v,"decisions":[{"interrupt_id":%q,"action":"approve"}]}`, in["seq"], in["id"])))
			}()
			testwait.For(t, 20*time.Second, "the upstream deploy to start", func() bool {
				b, _ := os.ReadFile(runs)
				return strings.Contains(string(b), "start production")
			})
			nodes[0].Process.Signal(os.Kill)
			nodes[0].Wait()

			// The client calls again on replica 1: the same session, held
			// until a replica took it over and found the call in doubt.
			res, err := connect(urls[1]).CallTool(ctx, call)
			if err != nil || !res.IsError {
				t.Fatalf("the repeated call: %v %+v", err, res)
			}
			text := res.Content[0].(*sdk.TextContent).Text
			if !strings.Contains(text, "in doubt") || !strings.Contains(text, id) {
				t.Fatalf("the repeated call: %s", text)
			}
			got := getJSON(t, urls[2]+"/v1/sessions/"+id)
			ins, _ := got["interrupts"].([]any)
			if got["status"] != "paused" || len(ins) != 1 || ins[0].(map[string]any)["in_doubt"] != true {
				t.Fatalf("session: %v", got)
			}
			// Never run twice: one start, whatever the killed node's server did after.
			b, _ := os.ReadFile(runs)
			if n := strings.Count(string(b), "start production"); n != 1 {
				t.Fatalf("the deploy started %d times:\n%s", n, b)
			}
			sessions, _ := getJSON(t, urls[1]+"/v1/sessions?agent=gateway")["sessions"].([]any)
			if len(sessions) != 1 {
				t.Fatalf("%d gateway sessions for one call made twice", len(sessions))
			}
		})
	}
}
