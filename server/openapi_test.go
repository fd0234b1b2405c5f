package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	validator "github.com/santhosh-tekuri/jsonschema/v6"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testkit/hooktest"
	"github.com/cairnhq/cairn/internal/testkit/testwait"
	"github.com/cairnhq/cairn/mcp/mcpserver"
	"github.com/cairnhq/cairn/mcp/mcptools"
	"github.com/cairnhq/cairn/model/scripted"
	"github.com/cairnhq/cairn/webhook"
)

// registeredRoutes reads the server's source for the patterns it registers
// on its mux, so that a route added anywhere in the package is seen.
func registeredRoutes(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var routes []string
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || (sel.Sel.Name != "HandleFunc" && sel.Sel.Name != "Handle") {
				return true
			}
			lit, ok := call.Args[0].(*ast.BasicLit)
			if !ok {
				t.Errorf("%s: a route registered with a pattern that is not a literal; the OpenAPI test cannot check it", fset.Position(call.Pos()))
				return true
			}
			pattern, _ := strconv.Unquote(lit.Value)
			if pattern != "/" { // the JSON 404/405 fallback
				routes = append(routes, strings.TrimSuffix(pattern, "{$}"))
			}
			return true
		})
	}
	sort.Strings(routes)
	return routes
}

type openAPIDoc struct {
	Paths map[string]map[string]struct {
		Responses map[string]struct {
			Content map[string]struct {
				Schema map[string]any `json:"schema"`
			} `json:"content"`
		} `json:"responses"`
	} `json:"paths"`
}

// statusRecorder notes the status a handler wrote, passing everything on.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (w *statusRecorder) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusRecorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusRecorder) Flush() { w.ResponseWriter.(http.Flusher).Flush() }

func (w *statusRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// TestOpenAPIMatchesTheServer checks GET /v1/openapi.json against the
// server: every route the server registers is documented (so adding a route
// without documenting it fails here), every documented route exists, every
// documented status code of every operation is produced by a request below,
// no request produces an undocumented one, and every JSON answer matches
// its documented schema.
func TestOpenAPIMatchesTheServer(t *testing.T) {
	ctx := context.Background()
	var clockMu sync.Mutex
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { clockMu.Lock(); defer clockMu.Unlock(); return now }
	deploy := cairn.NewTool(&cairn.Tool{Name: "deploy", Description: "Deploy.", Approval: cairn.Always(), ApprovalTTL: time.Hour,
		Preview: func(ctx context.Context, args json.RawMessage) (cairn.Preview, error) {
			return cairn.TextPreview(cairn.PreviewText, "would deploy "+string(args)), nil
		}},
		func(ctx context.Context, a struct {
			Env string `json:"env"`
		}) (string, error) {
			return "deployed to " + a.Env, nil
		})
	ops := scripted.New(
		scripted.Reply{ToolCalls: []scripted.Call{{Name: "deploy", Arguments: `{"env":"prod"}`}}},
		scripted.Reply{Text: "{{.LastResult}}"})
	release := make(chan struct{}) // holds the slow agent's turn running
	hooks := hooktest.New(t, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	hold := cairn.NewTool(&cairn.Tool{Name: "hold", Description: "Waits."}, func(ctx context.Context, _ struct{}) (string, error) {
		<-release
		return "released", nil
	})
	callbacks := make(chan string, 4) // the callback URLs the pipeline was given
	pipeline := cairn.NewTool(&cairn.Tool{Name: "pipeline", Description: "Runs CI; finishes later.", Wait: &cairn.Wait{Timeout: time.Hour},
		ResultSchema: json.RawMessage(`{"type":"object","properties":{"status":{"type":"string"}},"required":["status"]}`)},
		func(ctx context.Context, _ struct{}) (string, error) {
			url, err := cairn.CallbackURL(ctx)
			if err != nil {
				return "", err
			}
			callbacks <- strings.TrimPrefix(url, "https://cairn.example.org")
			return "", cairn.Pending("run-1", "pipeline started")
		})
	holdCI := make(chan struct{})
	holdCITool := cairn.NewTool(&cairn.Tool{Name: "hold_ci", Description: "Waits."}, func(ctx context.Context, _ struct{}) (string, error) {
		<-holdCI
		return "held", nil
	})
	// An upstream MCP server (the Go SDK's, over HTTP) for the gateway.
	upstreamSrv := sdk.NewServer(&sdk.Implementation{Name: "upstream", Version: "1"}, nil)
	sdk.AddTool(upstreamSrv, &sdk.Tool{Name: "erase", Description: "Erases a volume."}, func(context.Context, *sdk.CallToolRequest, struct {
		Volume string `json:"volume"`
	}) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "erased"}}}, nil, nil
	})
	upstream := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return upstreamSrv }, nil))
	defer upstream.Close()
	hub, err := mcptools.Connect(ctx, []mcptools.Server{{Name: "vol", URL: upstream.URL}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer hub.Close()
	runner, err := cairn.NewRunner([]*cairn.Agent{
		{Name: "gateway", Direct: true, Toolsets: []cairn.Toolset{hub.Toolset("vol", nil)}},
		{Name: "ops", Model: ops, Tools: []*cairn.Tool{deploy}},
		{Name: "ci", Model: scripted.New(scripted.Reply{ToolCalls: []scripted.Call{{Name: "pipeline", Arguments: `{}`}}}, scripted.Reply{Text: "{{.LastResult}}"}),
			Tools: []*cairn.Tool{pipeline}},
		{Name: "ci_busy", Model: scripted.New(scripted.Reply{ToolCalls: []scripted.Call{{Name: "pipeline", Arguments: `{}`}, {Name: "hold_ci", Arguments: `{}`}}}, scripted.Reply{Text: "{{.LastResult}}"}),
			Tools: []*cairn.Tool{pipeline, holdCITool}},
		{Name: "chat", Model: scripted.New(scripted.Reply{Text: "hello"})},
		{Name: "slow", Model: scripted.New(scripted.Reply{ToolCalls: []scripted.Call{{Name: "hold", Arguments: `{}`}}}, scripted.Reply{Text: "{{.LastResult}}"}), Tools: []*cairn.Tool{hold}},
		cairn.ApprovalsAgent(nil, nil),
	}, &cairn.RunnerOptions{Now: clock, ExpirySweep: -1, CompletionWait: 200 * time.Millisecond, ContinuationKeys: [][]byte{bytes.Repeat([]byte("k"), 32)},
		PublicURL: "https://cairn.example.org", Webhooks: []webhook.Subscription{{URL: hooks.URL, Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", Events: []webhook.EventType{webhook.InterruptCreated}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer runner.Close()
	srv := New(runner, &Options{Profiling: true, A2A: []string{"ops"}, Gateway: &mcpserver.GatewayOptions{Agent: "gateway", Hub: hub, Servers: []string{"vol"}, Hold: 200 * time.Millisecond},
		MaxStreamsPerSession: 1, MaxStreams: 2, Metrics: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain; version=0.0.4")
			io.WriteString(w, "# the exporter's answer\n")
		}), Tokens: []Token{
			{Name: "root", Secret: "admin-token-0123456789", Role: RoleAdmin},
			{Name: "ana", Secret: "approver-token-0123456789", Role: RoleApprover},
			{Name: "uma", Secret: "user-token-uma-0123456789", Role: RoleUser},
			{Name: "ulf", Secret: "user-token-ulf-0123456789", Role: RoleUser},
		}})

	var mu sync.Mutex
	seen := map[string]map[int]bool{} // "METHOD /path" → statuses
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, pattern := srv.mux.Handler(r)
		pattern = strings.TrimSuffix(pattern, "{$}") // "GET /{$}" is "GET /" in the document
		rec := &statusRecorder{ResponseWriter: w}
		srv.ServeHTTP(rec, r)
		mu.Lock()
		if seen[pattern] == nil {
			seen[pattern] = map[int]bool{}
		}
		seen[pattern][rec.status] = true
		mu.Unlock()
	}))
	defer api.Close()

	resp, err := http.Get(api.URL + "/v1/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var doc openAPIDoc
	if err := json.Unmarshal(raw, &doc); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /v1/openapi.json: %d %v", resp.StatusCode, err)
	}
	var generic map[string]any
	if err := json.Unmarshal(raw, &generic); err != nil {
		t.Fatal(err)
	}
	if generic["openapi"] != "3.1.0" {
		t.Fatalf("openapi = %v", generic["openapi"])
	}

	// Routes: the registered ones and the documented ones are the same.
	var documented []string
	for path, methods := range doc.Paths {
		for method := range methods {
			documented = append(documented, strings.ToUpper(method)+" "+path)
		}
	}
	sort.Strings(documented)
	if got := registeredRoutes(t); fmt.Sprint(got) != fmt.Sprint(documented) {
		t.Fatalf("routes and the OpenAPI document differ:\nregistered: %v\ndocumented: %v", got, documented)
	}

	// Schemas, to validate every JSON answer against.
	c := validator.NewCompiler()
	docValue, _ := validator.UnmarshalJSON(bytes.NewReader(raw))
	if err := c.AddResource("openapi.json", docValue); err != nil {
		t.Fatal(err)
	}
	schemaFor := func(route string, status int) *validator.Schema {
		method, path, _ := strings.Cut(route, " ")
		op, ok := doc.Paths[path][strings.ToLower(method)]
		if !ok {
			return nil
		}
		r, ok := op.Responses[strconv.Itoa(status)]
		if !ok {
			return nil
		}
		ref, _ := r.Content["application/json"].Schema["$ref"].(string)
		if ref == "" {
			return nil
		}
		s, err := c.Compile("openapi.json" + ref)
		if err != nil {
			t.Fatalf("compile %s: %v", ref, err)
		}
		return s
	}

	const (
		admin    = "admin-token-0123456789"
		approver = "approver-token-0123456789"
		uma      = "user-token-uma-0123456789"
		ulf      = "user-token-ulf-0123456789"
		nobody   = ""
	)
	send := func(method, path, tok, body string) (*http.Request, *http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, method, api.URL+path, strings.NewReader(body))
		req.Header.Set("Accept", "application/json")
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return req, resp, b
	}
	do := func(method, path, tok, body string, want int) map[string]any {
		t.Helper()
		req, resp, b := send(method, path, tok, body)
		if resp.StatusCode != want {
			t.Fatalf("%s %s: %d, want %d: %s", method, path, resp.StatusCode, want, b)
		}
		var v map[string]any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("%s %s: not JSON: %s", method, path, b)
		}
		_, pattern := srv.mux.Handler(req)
		if s := schemaFor(pattern, want); s != nil {
			inst, _ := validator.UnmarshalJSON(bytes.NewReader(b))
			if err := s.Validate(inst); err != nil {
				t.Errorf("%s %s → %d does not match its documented schema: %v\n%s", method, path, want, err, b)
			}
		}
		return v
	}
	big := `{"input":"` + strings.Repeat("x", maxInvokeBody+1) + `"}`
	sessionPaths := func(id string) []string {
		return []string{"/v1/sessions/" + id, "/v1/sessions/" + id + "/messages", "/v1/sessions/" + id + "/decisions", "/v1/sessions/" + id + "/cancel", "/v1/sessions/" + id + "/events", "/v1/sessions/" + id + "/audit"}
	}
	methodOf := map[string]string{"": "GET", "messages": "POST", "decisions": "POST", "cancel": "POST", "events": "GET", "audit": "GET"}

	// Sessions: create, read, list; a user's session is hidden from another user.
	paused := do("POST", "/v1/sessions", uma, `{"agent":"ops","input":"ship it"}`, 201)
	id, seq := paused["id"].(string), int64(paused["seq"].(float64))
	interrupt := paused["interrupts"].([]any)[0].(map[string]any)["id"].(string)
	do("POST", "/v1/sessions", admin, `{"agent":"ops"}`, 400)
	do("POST", "/v1/sessions", admin, `{"agent":"nobody","input":"hi"}`, 400)
	do("POST", "/v1/sessions", admin, big, 413)
	do("GET", "/v1/sessions?status=paused", admin, "", 200)
	do("GET", "/v1/sessions?status=bogus", admin, "", 400)
	do("GET", "/v1/sessions/"+id, uma, "", 200)
	do("GET", "/v1/interrupts?status=pending", approver, "", 200)
	do("GET", "/v1/interrupts?status=done", approver, "", 400)
	do("GET", "/v1/interrupts", uma, "", 403)
	do("GET", "/v1/sessions/"+id+"/events", uma, "", 200)
	do("GET", "/v1/sessions/"+id+"/events?after=abc", uma, "", 400)
	do("GET", "/v1/sessions/"+id+"/audit", uma, "", 200)
	for _, p := range append(sessionPaths(id), "/v1/sessions", "/v1/interrupts") {
		method := "GET"
		if strings.Count(p, "/") == 4 {
			method = methodOf[p[strings.LastIndex(p, "/")+1:]]
		} else if p == "/v1/sessions" {
			method = "POST"
		}
		do(method, p, nobody, `{}`, 401)
	}
	do("GET", "/v1/sessions", nobody, "", 401)
	bodyOf := map[string]string{"": "", "messages": `{"text":"hi"}`, "cancel": `{"scope":"all"}`, "events": "", "audit": "",
		"decisions": `{"seq":1,"decisions":[{"interrupt_id":"x","action":"approve"}]}`}
	for _, p := range sessionPaths(id) {
		kind := ""
		if strings.Count(p, "/") == 4 {
			kind = p[strings.LastIndex(p, "/")+1:]
		}
		// Another user's session answers as a missing one, on every route.
		do(methodOf[kind], p, ulf, bodyOf[kind], 404)
		do(methodOf[kind], strings.Replace(p, id, "ses_missing", 1), admin, bodyOf[kind], 404)
	}

	// Messages: refused while an approval is pending; accepted once completed.
	do("POST", "/v1/sessions/"+id+"/messages", uma, `{"text":"hello?"}`, 409)
	do("POST", "/v1/sessions/"+id+"/messages", uma, `{"txt":"hello?"}`, 400)
	do("POST", "/v1/sessions/"+id+"/messages", approver, `{"text":"in uma's name"}`, 403)
	do("POST", "/v1/sessions/"+id+"/cancel", approver, `{"scope":"all"}`, 403)
	do("POST", "/v1/sessions/"+id+"/messages", uma, big, 413)
	chat := do("POST", "/v1/sessions", uma, `{"agent":"chat","input":"hi"}`, 201)
	do("POST", "/v1/sessions/"+chat["id"].(string)+"/messages", uma, `{"text":"again"}`, 200)

	// Decisions: users may not decide; a stale seq, an empty list and an
	// oversize body are refused; an approval past its TTL is gone.
	decide := func(seq int64, action string) string {
		return fmt.Sprintf(`{"seq":%d,"decisions":[{"interrupt_id":%q,"action":%q}]}`, seq, interrupt, action)
	}
	// Previews: stored with the interrupt; one of edited arguments is
	// computed for one who may approve the call, and recorded nowhere.
	if p, _ := paused["interrupts"].([]any)[0].(map[string]any)["preview"].(map[string]any); p == nil || p["content"] != `would deploy {"env":"prod"}` {
		t.Fatalf("the paused session's interrupt has preview %v", p)
	}
	preview := "/v1/sessions/" + id + "/interrupts/" + interrupt + "/preview"
	if got := do("POST", preview, approver, `{"arguments":{"env":"staging"}}`, 200); got["content"] != `would deploy {"env":"staging"}` || got["format"] != "text" {
		t.Fatalf("preview of an edit = %v", got)
	}
	if got := do("POST", preview, approver, `{"arguments":{"env":5}}`, 400); got["error"].(map[string]any)["code"] != "invalid_arguments" {
		t.Fatalf("preview of invalid arguments = %v", got)
	}
	do("POST", preview, uma, `{}`, 403)
	do("POST", preview, nobody, `{}`, 401)
	do("POST", preview, ulf, `{}`, 404)
	do("POST", preview, approver, big, 413)
	if got := do("GET", "/v1/sessions/"+id, uma, "", 200); int64(got["seq"].(float64)) != seq {
		t.Fatalf("previews recorded events: seq %v, was %d", got["seq"], seq)
	}
	do("POST", "/v1/sessions/"+id+"/decisions", uma, decide(seq, "approve"), 403)
	do("POST", "/v1/sessions/"+id+"/decisions", approver, decide(seq-1, "approve"), 409)
	do("POST", "/v1/sessions/"+id+"/decisions", approver, `{"seq":1,"decisions":[]}`, 400)
	do("POST", "/v1/sessions/"+id+"/decisions", approver, big, 413)
	do("POST", "/v1/sessions/"+id+"/decisions", approver, decide(seq, "approve"), 200)

	// Bulk decisions: a selector, a list; each call's result its own.
	b1 := do("POST", "/v1/sessions", uma, `{"agent":"ops","input":"ship one"}`, 201)
	b2 := do("POST", "/v1/sessions", uma, `{"agent":"ops","input":"ship two"}`, 201)
	bulk := do("POST", "/v1/decisions", approver, `{"select":{"tool":"deploy","agent":"ops"},"action":"approve","limit":1}`, 200)
	// The newest pause first: the two paused at the same instant of the
	// test's clock, so either may be the newer (ids tie within a millisecond).
	rs := bulk["results"].([]any)
	if len(rs) != 1 || rs[0].(map[string]any)["status"] != 200.0 || !strings.HasPrefix(bulk["batch"].(string), "bat_") {
		t.Fatalf("bulk by selector: %v", bulk)
	}
	rest := b1
	switch rs[0].(map[string]any)["session_id"] {
	case b1["id"]:
		rest = b2
	case b2["id"]:
	default:
		t.Fatalf("bulk by selector decided neither new session: %v", bulk)
	}
	restIn := rest["interrupts"].([]any)[0].(map[string]any)["id"]
	list := fmt.Sprintf(`{"decisions":[{"session_id":%q,"interrupt_id":%q,"action":"reject","reason":"not today"}]}`, rest["id"], restIn)
	if rs := do("POST", "/v1/decisions", approver, list, 200)["results"].([]any); rs[0].(map[string]any)["status"] != 200.0 {
		t.Fatalf("bulk by list: %v", rs)
	}
	if rs := do("POST", "/v1/decisions", approver, list, 200)["results"].([]any); rs[0].(map[string]any)["status"] != 409.0 ||
		rs[0].(map[string]any)["error"].(map[string]any)["code"] != "already_decided" {
		t.Fatalf("the same list again: %v", rs)
	}
	do("POST", "/v1/decisions", approver, `{}`, 400)
	do("POST", "/v1/decisions", approver, `{"select":{"tool":"deploy"},"action":"edit"}`, 400)
	do("POST", "/v1/decisions", uma, list, 403)
	do("POST", "/v1/decisions", nobody, list, 401)
	do("POST", "/v1/decisions", approver, big, 413)

	// Standing rules: granted with a decision, listed, deciding the next
	// call, revoked.
	g := do("POST", "/v1/sessions", uma, `{"agent":"ops","input":"ship three"}`, 201)
	gIn := g["interrupts"].([]any)[0].(map[string]any)["id"]
	do("POST", "/v1/sessions/"+g["id"].(string)+"/decisions", approver,
		fmt.Sprintf(`{"seq":%v,"decisions":[{"interrupt_id":%q,"action":"approve","rule":{"scope":"agent","if":"args.env == 'prod'","duration":"72h"}}]}`, g["seq"], gIn), 200)
	rules := do("GET", "/v1/rules", approver, "", 200)["rules"].([]any)
	if len(rules) != 1 {
		t.Fatalf("rules: %v", rules)
	}
	ruleID := rules[0].(map[string]any)["id"].(string)
	if next := do("POST", "/v1/sessions", uma, `{"agent":"ops","input":"ship four"}`, 201); next["status"] != "completed" {
		t.Fatalf("a call the rule covers: %v", next)
	}
	do("GET", "/v1/rules?all=maybe", approver, "", 400)
	do("GET", "/v1/rules", uma, "", 403)
	do("GET", "/v1/rules", nobody, "", 401)
	do("DELETE", "/v1/rules/"+ruleID, uma, "", 403)
	do("DELETE", "/v1/rules/rul_none", approver, "", 404)
	do("DELETE", "/v1/rules/"+ruleID, nobody, "", 401)
	if revoked := do("DELETE", "/v1/rules/"+ruleID, approver, "", 200); revoked["revoked_at"] == nil || revoked["uses"] != 1.0 {
		t.Fatalf("revoked: %v", revoked)
	}

	// Analytics: the decisions above, counted.
	if a := do("GET", "/v1/analytics?by=tool&since=2026-01-01T00:00:00Z", approver, "", 200); len(a["rows"].([]any)) == 0 {
		t.Fatalf("analytics: %v", a)
	}
	do("GET", "/v1/analytics?by=color", approver, "", 400)
	do("GET", "/v1/analytics?since=yesterday", approver, "", 400)
	do("GET", "/v1/analytics", uma, "", 403)
	do("GET", "/v1/analytics", nobody, "", 401)

	// Forks: at a pause (the latest by default), not at another event.
	fork := do("POST", "/v1/sessions/"+id+"/fork", uma, `{}`, 201)
	if from, _ := fork["forked_from"].(map[string]any); from == nil || from["session_id"] != id || fork["status"] != "completed" {
		t.Fatalf("the fork: %v", fork)
	}
	if got := do("POST", "/v1/sessions/"+id+"/fork", uma, `{"seq":2}`, 400); got["error"].(map[string]any)["code"] != "not_a_fork_point" {
		t.Fatalf("a fork at 2: %v", got)
	}
	do("POST", "/v1/sessions/"+id+"/fork", ulf, `{}`, 404)
	do("POST", "/v1/sessions/"+id+"/fork", nobody, `{}`, 401)
	do("POST", "/v1/sessions/"+id+"/fork", uma, big, 413)
	late := do("POST", "/v1/sessions", uma, `{"agent":"ops","input":"ship it later"}`, 201)
	do("POST", "/v1/sessions", uma, `{"agent":"ci","input":"build, later"}`, 201)
	lateCallback := <-callbacks
	clockMu.Lock()
	now = now.Add(2 * time.Hour)
	clockMu.Unlock()
	lateIn := late["interrupts"].([]any)[0].(map[string]any)["id"].(string)
	do("POST", "/v1/sessions/"+late["id"].(string)+"/decisions", approver,
		fmt.Sprintf(`{"seq":%v,"decisions":[{"interrupt_id":%q,"action":"approve"}]}`, late["seq"], lateIn), 410)

	// Approval requests from the caller's own code: created (201), named
	// again by their key (200) or misnamed (409); read, waited on, and
	// their result recorded once, by their owner only.
	apr := do("POST", "/v1/approvals", uma, `{"tool":"refund","arguments":{"order":"A-1"},"message":"Refund A-1?","idempotency_key":"r1","expires_in":"24h"}`, 201)
	aprID := apr["id"].(string)
	if apr["status"] != "pending" || apr["session_id"] != aprID || apr["interrupt"].(map[string]any)["message"] != "Refund A-1?" {
		t.Fatalf("approval request: %v", apr)
	}
	do("POST", "/v1/approvals", uma, `{"tool":"refund","arguments":{"order":"A-1"},"idempotency_key":"r1"}`, 200)
	do("POST", "/v1/approvals", uma, `{"tool":"refund","arguments":{"order":"A-2"},"idempotency_key":"r1"}`, 409)
	do("POST", "/v1/approvals", uma, `{"arguments":{}}`, 400)
	do("POST", "/v1/approvals", uma, `{"tool":"refund","expires_in":"soon"}`, 400)
	do("POST", "/v1/approvals", uma, `{"tool":"refund","arguments":{},"schema":{"required":["order"]}}`, 400)
	do("POST", "/v1/approvals", uma, big, 413)
	for _, p := range []string{"/v1/approvals", "/v1/approvals/" + aprID + "/result"} {
		do("POST", p, nobody, `{}`, 401)
	}
	do("GET", "/v1/approvals/"+aprID, nobody, "", 401)
	do("GET", "/v1/approvals/"+aprID, uma, "", 200)
	do("GET", "/v1/approvals/"+aprID+"?wait=bogus", uma, "", 400)
	do("GET", "/v1/approvals/"+aprID, ulf, "", 404)
	do("GET", "/v1/approvals/apr_missing", admin, "", 404)
	do("POST", "/v1/approvals/"+aprID+"/result", uma, `{"output":{"refunded":true}}`, 409) // not approved yet
	do("POST", "/v1/approvals/"+aprID+"/result", uma, `{"outptu":1}`, 400)
	do("POST", "/v1/approvals/"+aprID+"/result", uma, big, 413)
	do("POST", "/v1/approvals/"+aprID+"/result", ulf, `{"output":1}`, 404)
	do("POST", "/v1/approvals/"+aprID+"/result", approver, `{"output":1}`, 403)
	aprIn := apr["interrupt"].(map[string]any)["id"].(string)
	aprSess := do("GET", "/v1/sessions/"+aprID, uma, "", 200)
	do("POST", "/v1/sessions/"+aprID+"/decisions", approver, fmt.Sprintf(`{"seq":%v,"decisions":[{"interrupt_id":%q,"action":"approve","arguments":{"order":"A-1","note":"ok"}}]}`, aprSess["seq"], aprIn), 200)
	if got := do("GET", "/v1/approvals/"+aprID+"?wait=5s", uma, "", 200); got["status"] != "approved" || got["actor"].(map[string]any)["name"] != "ana" || got["edited"] != true {
		t.Fatalf("approved: %v", got)
	}
	if got := do("POST", "/v1/approvals/"+aprID+"/result", uma, `{"output":{"refunded":true}}`, 200); got["result"].(map[string]any)["output"].(map[string]any)["refunded"] != true {
		t.Fatalf("result: %v", got)
	}
	do("POST", "/v1/approvals/"+aprID+"/result", uma, `{"output":{"refunded":true}}`, 409)

	// Cancel: a bad scope, nothing to cancel, then a real one.
	do("POST", "/v1/sessions/"+id+"/cancel", uma, `{"scope":"sideways"}`, 400)
	do("POST", "/v1/sessions/"+id+"/cancel", uma, `{"scope":"all"}`, 409)
	again := do("POST", "/v1/sessions", uma, `{"agent":"ops","input":"ship"}`, 201)
	do("POST", "/v1/sessions/"+again["id"].(string)+"/cancel", uma, `{"scope":"all"}`, 200)

	// Event streams: one per session here; the second is refused.
	sctx, stop := context.WithCancel(ctx)
	req, _ := http.NewRequestWithContext(sctx, "GET", api.URL+"/v1/sessions/"+id+"/events", nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+admin)
	stream, err := http.DefaultClient.Do(req)
	if err != nil || stream.StatusCode != 200 || !strings.HasPrefix(stream.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("event stream: %v %v", err, stream)
	}
	do("GET", "/v1/sessions/"+id+"/events", admin, "", 200) // JSON reads are not streams
	req2, _ := http.NewRequestWithContext(ctx, "GET", api.URL+"/v1/sessions/"+id+"/events", nil)
	req2.Header.Set("Accept", "text/event-stream")
	req2.Header.Set("Authorization", "Bearer "+admin)
	second, err := http.DefaultClient.Do(req2)
	if err != nil || second.StatusCode != 429 {
		t.Fatalf("second stream: %v %v", err, second)
	}
	second.Body.Close()
	// The cross-session feed counts towards the server's total (2 here).
	openFeed := func(want int) *http.Response {
		req, _ := http.NewRequestWithContext(sctx, "GET", api.URL+"/v1/events", nil)
		req.Header.Set("Authorization", "Bearer "+approver)
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != want {
			t.Fatalf("feed: %v %v, want %d", err, resp, want)
		}
		return resp
	}
	feed := openFeed(200)
	if !strings.HasPrefix(feed.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("feed content type %q", feed.Header.Get("Content-Type"))
	}
	openFeed(429).Body.Close()
	stop()
	feed.Body.Close()
	stream.Body.Close()
	do("GET", "/v1/events", nobody, "", 401)
	agents := do("GET", "/v1/agents", uma, "", 200)
	if list, _ := agents["agents"].([]any); len(list) != 7 {
		t.Fatalf("agents: %v", agents)
	}
	do("GET", "/v1/agents", nobody, "", 401)
	if me := do("GET", "/v1/me", uma, "", 200); me["name"] != "uma" || me["role"] != "user" || me["auth"] != true {
		t.Fatalf("me: %v", me)
	}
	do("GET", "/v1/me", nobody, "", 401)

	// Stateless: invoke, resume (approvers only), resume again (spent).
	res := do("POST", "/v1/agents/ops/invoke", uma, `{"input":"ship"}`, 200)
	tok := res["continuation"].(string)
	resumeTok := fmt.Sprintf(`{"continuation":%q,"decisions":[{"interrupt_id":%q,"action":"approve"}]}`, tok, res["interrupts"].([]any)[0].(map[string]any)["id"])
	do("POST", "/v1/agents/ops/invoke", uma, resumeTok, 403)
	do("POST", "/v1/agents/ops/invoke", approver, `{}`, 400)
	do("POST", "/v1/agents/ops/invoke", approver, `{"input":"`+strings.Repeat("x", maxInvokeBody)+`"}`, 413)
	do("POST", "/v1/agents/ops/invoke", nobody, `{"input":"ship"}`, 401)
	do("POST", "/v1/agents/ops/invoke", approver, resumeTok, 200)
	do("POST", "/v1/agents/ops/invoke", approver, resumeTok, 409)

	// MCP over streamable HTTP, with the same tokens: a user's run that
	// pauses gets the paused result (only approvers decide).
	for _, m := range []string{"POST", "GET", "DELETE"} {
		do(m, "/mcp", nobody, "", 401)
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx,
		&sdk.StreamableClientTransport{Endpoint: api.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer(uma)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	mcpRes, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "ops", Arguments: map[string]any{"input": "ship it"}})
	if err != nil || len(mcpRes.Content) == 0 || !strings.Contains(mcpRes.Content[0].(*sdk.TextContent).Text, "The run is paused") {
		t.Fatalf("MCP call: %v %+v", err, mcpRes)
	}
	cs.Close()

	// The MCP gateway: the same tokens; a user's destructive call is held
	// for a person, and past the hold answers that it is still pending.
	for _, m := range []string{"POST", "GET", "DELETE"} {
		do(m, "/mcp/gateway", nobody, "", 401)
	}
	gs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx,
		&sdk.StreamableClientTransport{Endpoint: api.URL + "/mcp/gateway", HTTPClient: &http.Client{Transport: bearer(uma)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	gwRes, err := gs.CallTool(ctx, &sdk.CallToolParams{Name: "vol__erase", Arguments: map[string]any{"volume": "scratch"}})
	if err != nil || !gwRes.IsError || !strings.Contains(gwRes.Content[0].(*sdk.TextContent).Text, "still waiting for a person") {
		t.Fatalf("gateway call: %v %+v", err, gwRes)
	}
	gs.Close()

	// A2A: the card needs no token; the endpoint answers JSON-RPC (a
	// refused call is a JSON-RPC error in a 200) behind the same tokens.
	do("GET", "/a2a/ops/.well-known/agent-card.json", nobody, "", 200)
	do("GET", "/a2a/nope/.well-known/agent-card.json", nobody, "", 404)
	getTask := `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"no-such-task"}}`
	for _, p := range []string{"/a2a/ops", "/a2a/ops/"} {
		do("POST", p, nobody, getTask, 401)
		if got := do("POST", p, uma, getTask, 200); got["error"] == nil {
			t.Fatalf("A2A GetTask of an unknown task: %v", got)
		}
		do("POST", strings.Replace(p, "ops", "nope", 1), uma, getTask, 404)
	}

	// The AI SDK chat protocol: answers are event streams, so raw requests.
	rawCall := func(method, path, tok, body string) (*http.Response, string) {
		t.Helper()
		_, resp, b := send(method, path, tok, body)
		return resp, string(b)
	}
	chatBody := `{"id":"ui_chat_1","messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"hi"}]}],"trigger":"submit-message"}`
	do("POST", "/v1/agents/chat/chat", nobody, chatBody, 401)
	do("POST", "/v1/agents/chat/chat", uma, `{"messages":[]}`, 400)
	if resp, body := rawCall("POST", "/v1/agents/chat/chat", uma, chatBody); resp.StatusCode != 200 || resp.Header.Get("x-vercel-ai-ui-message-stream") != "v1" ||
		!strings.Contains(body, `"type":"text-delta"`) || !strings.HasSuffix(body, "data: [DONE]\n\n") {
		t.Fatalf("chat: %d %v\n%s", resp.StatusCode, resp.Header, body)
	}
	do("POST", "/v1/agents/chat/chat", ulf, strings.Replace(chatBody, `"u1"`, `"u2"`, 1), 409)      // the id is taken
	do("POST", "/v1/agents/chat/chat", approver, strings.Replace(chatBody, `"u1"`, `"u3"`, 1), 403) // uma's words
	do("GET", "/v1/agents/chat/chat/ui_chat_1/stream", nobody, "", 401)
	do("GET", "/v1/agents/chat/chat/ui_chat_1/stream", ulf, "", 404)
	do("GET", "/v1/agents/chat/chat/nope/stream", uma, "", 404)
	if resp, _ := rawCall("GET", "/v1/agents/chat/chat/ui_chat_1/stream", uma, ""); resp.StatusCode != 204 {
		t.Fatalf("stream of a chat with no turn running: %d", resp.StatusCode)
	}
	running := do("POST", "/v1/sessions", admin, `{"agent":"slow","input":"go","wait":false}`, 201)
	go func() { time.Sleep(200 * time.Millisecond); close(release) }() // elapsed time: the turn still runs when the stream attaches
	if resp, body := rawCall("GET", "/v1/agents/slow/chat/"+running["id"].(string)+"/stream", admin, ""); resp.StatusCode != 200 || !strings.Contains(body, `"output":"released"`) {
		t.Fatalf("stream of a running chat: %d\n%s", resp.StatusCode, body)
	}

	// AG-UI: a pause ends the run with an interrupt outcome; an expired
	// interrupt is RUN_ERROR.
	runInput := `{"threadId":"agui_ops","runId":"r1","messages":[{"id":"u1","role":"user","content":"ship it"}]}`
	do("POST", "/v1/agents/ops/ag-ui", nobody, runInput, 401)
	do("POST", "/v1/agents/ops/ag-ui", uma, `{"runId":"r1","messages":[]}`, 400)
	if resp, body := rawCall("POST", "/v1/agents/ops/ag-ui", uma, runInput); resp.StatusCode != 200 || !strings.Contains(body, `"outcome":{"interrupts":[{"id":"int_`) {
		t.Fatalf("ag-ui: %d\n%s", resp.StatusCode, body)
	}
	do("POST", "/v1/agents/ops/ag-ui", ulf, strings.Replace(runInput, "r1", "r2", 1), 409) // the thread id is taken
	expired := fmt.Sprintf(`{"threadId":%q,"runId":"r3","messages":[],"resume":[{"interruptId":%q,"status":"resolved","payload":{"approved":true}}]}`, late["id"], lateIn)
	if _, body := rawCall("POST", "/v1/agents/ops/ag-ui", approver, expired); !strings.Contains(body, `"type":"RUN_ERROR"`) || !strings.Contains(body, `"code":"expired"`) {
		t.Fatalf("an expired interrupt: %s", body)
	}

	// Action links (webhooks): the link is the credential. A GET shows the
	// page, its POST decides once; altered 403, used 409, expired 410.
	page := func(method, link, contentType, body string, want int) string {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, method, api.URL+strings.TrimPrefix(link, "https://cairn.example.org"), strings.NewReader(body))
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != want || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") || resp.Header.Get("Referrer-Policy") != "no-referrer" {
			t.Fatalf("%s %s: %d %v, want %d and a page\n%s", method, link, resp.StatusCode, resp.Header, want, b)
		}
		return string(b)
	}
	linked := do("POST", "/v1/sessions", uma, `{"agent":"ops","input":"ship it by mail"}`, 201)
	links := *hooks.WaitForSession(webhook.InterruptCreated, linked["id"].(string), 10*time.Second).Data.Actions
	if body := page("GET", links.Approve, "", "", 200); !strings.Contains(body, `<form method="post">`) || !strings.Contains(body, "deploy") {
		t.Fatalf("the link's page:\n%s", body)
	}
	page("POST", links.Approve, "application/x-www-form-urlencoded", "reason=%zz", 400)
	if body := page("POST", links.Approve, "", "", 200); !strings.Contains(body, "The session is now completed") {
		t.Fatalf("after the POST:\n%s", body)
	}
	page("POST", links.Approve, "", "", 409)
	page("GET", links.Reject, "", "", 409)
	altered := links.Reject[:len(links.Reject)-2] + "xx"
	page("GET", altered, "", "", 403)
	page("POST", altered, "", "", 403)
	lateLinks := *hooks.WaitForSession(webhook.InterruptCreated, late["id"].(string), 10*time.Second).Data.Actions
	page("GET", lateLinks.Approve, "", "", 410)
	page("POST", lateLinks.Reject, "", "", 410)
	if v := do("POST", strings.TrimPrefix(altered, "https://cairn.example.org"), nobody, "", 403); v["error"].(map[string]any)["code"] != "invalid_link" {
		t.Fatalf("a JSON client's altered link: %v", v)
	}

	// Callback URLs: the URL is the credential. The first completion
	// wins; used 409, altered 403, off the result schema 400, past the
	// deadline 410, while the session runs (and does not come to wait on
	// the call in time) 503.
	do("POST", lateCallback, nobody, `{"output":{"status":"passed"}}`, 410)
	do("POST", "/v1/sessions", uma, `{"agent":"ci","input":"build"}`, 201)
	cb := <-callbacks
	do("POST", cb[:len(cb)-2]+"xx", nobody, `{"output":{"status":"passed"}}`, 403)
	do("POST", cb, nobody, `{"output":{"state":"passed"}}`, 400)
	if v := do("POST", cb, nobody, `{"output":{"status":"passed"}}`, 200); v["status"] != "completed" {
		t.Fatalf("the callback: %v", v)
	}
	do("POST", cb, nobody, `{"error":"again"}`, 409)
	do("GET", "/v1/interrupts?kind=external", approver, "", 200)
	do("GET", "/v1/interrupts?kind=robot", approver, "", 400)
	busy := do("POST", "/v1/sessions", uma, `{"agent":"ci_busy","input":"build","wait":false}`, 201)
	busyCallback := <-callbacks
	if v := do("POST", busyCallback, nobody, `{"output":{"status":"passed"}}`, 503); v["error"].(map[string]any)["code"] != "session_busy" {
		t.Fatalf("a callback while the session runs: %v", v)
	}
	close(holdCI)
	testwait.For(t, 10*time.Second, "the busy session to pause", func() bool {
		s, err := runner.Session(ctx, busy["id"].(string))
		return err == nil && s.Status == cairn.StatusPaused
	})
	do("POST", busyCallback, nobody, `{"output":{"status":"passed"}}`, 200)

	do("GET", "/debug/pprof/heap", nobody, "", 401)
	do("GET", "/debug/pprof/heap", approver, "", 403)
	if resp, body := rawCall("GET", "/debug/pprof/heap?debug=1", admin, ""); resp.StatusCode != 200 || !strings.Contains(body, "heap profile:") {
		t.Fatalf("a heap profile: %d %.200s", resp.StatusCode, body)
	}
	do("GET", "/metrics", nobody, "", 401)
	do("GET", "/metrics", approver, "", 403)
	if resp, body := rawCall("GET", "/metrics", admin, ""); resp.StatusCode != 200 || !strings.HasPrefix(body, "# ") {
		t.Fatalf("metrics: %d %s", resp.StatusCode, body)
	}

	do("GET", "/healthz", nobody, "", 200)
	for path, want := range map[string]int{"/": 200, "/ui/app.js": 200, "/ui/app.css": 200, "/ui/nope.js": 404} {
		resp, err := http.Get(api.URL + path)
		if err != nil || resp.StatusCode != want {
			t.Fatalf("GET %s: %v %v, want %d", path, err, resp, want)
		}
		resp.Body.Close()
	}

	// A draining server takes no new turns: 503 stopping, Retry-After.
	if err := runner.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	busyID := busy["id"].(string)
	for path, body := range map[string]string{
		"/v1/sessions":                          `{"agent":"ops","input":"deploy"}`,
		"/v1/sessions/" + busyID + "/messages":  `{"text":"again"}`,
		"/v1/sessions/" + busyID + "/decisions": `{"seq":1,"decisions":[{"interrupt_id":"int_x","action":"approve"}]}`,
		"/v1/approvals":                         `{"tool":"refund"}`,
		"/v1/sessions/" + busyID + "/fork":      `{}`,
	} {
		token := uma
		if strings.HasSuffix(path, "/decisions") {
			token = approver
		}
		if v := do("POST", path, token, body, 503); v["error"].(map[string]any)["code"] != "stopping" {
			t.Fatalf("POST %s while draining: %v", path, v)
		}
	}

	// Sign-in through an OpenID Provider: 404 on a server without one; on
	// one with a real provider, the whole flow (302 to its login page, 302
	// back to the page with the HttpOnly cookie, which then authenticates),
	// a callback with no sign-in under way (400), one whose code the
	// provider refuses (401), and a provider that cannot be reached (502).
	do("GET", "/auth/info", nobody, "", 200)
	do("GET", "/auth/login", nobody, "", 404)
	do("GET", "/auth/callback", nobody, "", 404)
	do("POST", "/auth/logout", nobody, "", 404)
	signInFlow(t, runner, func(ss *Server) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, pattern := ss.mux.Handler(r)
			rec := &statusRecorder{ResponseWriter: w}
			ss.ServeHTTP(rec, r)
			mu.Lock()
			if seen[pattern] == nil {
				seen[pattern] = map[int]bool{}
			}
			seen[pattern][rec.status] = true
			mu.Unlock()
		})
	})

	// Every documented status was produced, and nothing undocumented.
	mu.Lock()
	defer mu.Unlock()
	for path, methods := range doc.Paths {
		for method, op := range methods {
			route := strings.ToUpper(method) + " " + path
			for status := range op.Responses {
				code, _ := strconv.Atoi(status)
				if !seen[route][code] {
					t.Errorf("%s documents %d, which no request here produced", route, code)
				}
			}
			for code := range seen[route] {
				if _, ok := op.Responses[strconv.Itoa(code)]; !ok {
					t.Errorf("%s answered %d, which the document does not list", route, code)
				}
			}
		}
	}
	if os.Getenv("CAIRN_WRITE_OPENAPI") != "" {
		if err := os.WriteFile(os.Getenv("CAIRN_WRITE_OPENAPI"), raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// bearer sends a bearer token with every request.
type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}
