package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testkit/fakeopenai"
	"github.com/cairnhq/cairn/model/openai"
	"github.com/cairnhq/cairn/server"
	"github.com/cairnhq/cairn/store/sqlite"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// govEnv is a server whose deploy tool needs two distinct members of sre,
// neither of them the person who asked, with a token for each person.
type govEnv struct {
	t    *testing.T
	base string
	runs atomic.Int32
}

var govTokens = []server.Token{
	{Name: "uma", Secret: "tok-uma-000000000000000000", Role: server.RoleApprover, Groups: []string{"sre"}},
	{Name: "ana", Secret: "tok-ana-000000000000000000", Role: server.RoleApprover, Groups: []string{"sre"}},
	// A second token of ana's: the same subject, so the same person.
	{Name: "ana-laptop", Secret: "tok-ana2-00000000000000000", Role: server.RoleApprover, Subject: "ana", Groups: []string{"sre"}},
	{Name: "bob", Secret: "tok-bob-000000000000000000", Role: server.RoleApprover, Groups: []string{"sre", "dev"}},
	{Name: "dev", Secret: "tok-dev-000000000000000000", Role: server.RoleApprover, Groups: []string{"dev"}},
	{Name: "ulf", Secret: "tok-ulf-000000000000000000", Role: server.RoleUser, Groups: []string{"sre"}},
}

func newGovEnv(t *testing.T) *govEnv {
	e := &govEnv{t: t}
	runner := deployRunner(t, &cairn.Approvers{Groups: []string{"sre"}, Count: 2, NotRequester: true}, &e.runs)
	srv := httptest.NewServer(server.New(runner, &server.Options{Tokens: govTokens}))
	t.Cleanup(srv.Close)
	e.base = srv.URL
	return e
}

// deployRunner is a runner (on SQLite, the fake OpenAI server playing
// seedModel) whose deploy_code tool approvers approve; runs counts its runs.
func deployRunner(t *testing.T, approvers *cairn.Approvers, runs *atomic.Int32) *cairn.Runner {
	t.Helper()
	return deployRunnerWith(t, approvers, runs, &cairn.RunnerOptions{})
}

// deployRunnerWith is deployRunner with more options (its store is set).
func deployRunnerWith(t *testing.T, approvers *cairn.Approvers, runs *atomic.Int32, opts *cairn.RunnerOptions) *cairn.Runner {
	t.Helper()
	fake := fakeopenai.Start(t, seedModel)
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "cairn.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	deploy := cairn.NewTool(&cairn.Tool{Name: "deploy_code", Description: "Deploy the latest build.", Approval: cairn.Always(), Approvers: approvers},
		func(ctx context.Context, a deployArgs) (string, error) {
			runs.Add(1)
			return "Deployment successful to " + a.Environment, nil
		})
	m := openai.New("gpt-4o-mini", &openai.Options{BaseURL: fake.BaseURL(), APIKey: "sk-test"})
	opts.Store = st
	// Approval requests from callers' code have the deploy's approvers.
	runner, err := cairn.NewRunner([]*cairn.Agent{{Name: "main", Model: m, Tools: []*cairn.Tool{deploy}}, cairn.ApprovalsAgent(approvers, nil)}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = runner.Close() })
	return runner
}

func (e *govEnv) as(who, method, path, body string) (int, map[string]any) {
	e.t.Helper()
	return callAs(e.t, e.base, tokenOf(who), method, path, body)
}

// Over REST: the wrong group and the requester are refused with 403, a
// user who may not see the session gets 404, and none changes anything; the first approval of two answers 200 with the
// interrupt pending and shows it; the same person again (another token of
// one subject) is 409 already_approved; the second person's approval runs
// the tool once; data.actor records who, how and in which groups.
func TestGovernanceOverREST(t *testing.T) {
	e := newGovEnv(t)
	status, s := e.as("uma", "POST", "/v1/sessions", `{"agent":"main","input":"Deploy the latest build to production."}`)
	if status != 201 || s["status"] != "paused" {
		t.Fatalf("%d %v", status, s)
	}
	id, seq, in := s["id"].(string), seqOf(s), interrupts(s)[0]
	if in["required"] != float64(2) || in["approvers"] == nil {
		t.Fatalf("the interrupt does not say who approves: %v", in)
	}
	if rb, _ := in["requested_by"].([]any); len(rb) != 1 || rb[0].(map[string]any)["name"] != "uma" {
		t.Fatalf("requested_by %v", in["requested_by"])
	}
	approve := func(seq int64) string {
		return fmt.Sprintf(`{"seq":%d,"decisions":[{"interrupt_id":%q,"action":"approve"}]}`, seq, in["id"])
	}
	path := "/v1/sessions/" + id + "/decisions"
	unchanged := func(what string) {
		t.Helper()
		_, now := e.as("ana", "GET", "/v1/sessions/"+id, "")
		if seqOf(now) != seq || e.runs.Load() != 0 {
			t.Fatalf("%s changed the session: seq %d → %d, %d runs", what, seq, seqOf(now), e.runs.Load())
		}
	}
	for _, c := range []struct {
		who    string
		status int
		code   string
		says   string
	}{
		{"dev", 403, "not_an_approver", "member of sre"},
		{"ulf", 404, "not_found", "no session"}, // a user sees only their own sessions
		{"uma", 403, "not_an_approver", "separation of duties"},
	} {
		status, body := e.as(c.who, "POST", path, approve(seq))
		msg, _ := body["error"].(map[string]any)["message"].(string)
		if status != c.status || errCode(body) != c.code || !strings.Contains(msg, c.says) {
			t.Errorf("%s: %d %v, want %d %s saying %q", c.who, status, body, c.status, c.code, c.says)
		}
		unchanged(c.who)
	}
	// Each caller is told what they may decide apart from what they may only see.
	for who, may := range map[string]bool{"dev": false, "ana": true, "uma": false} {
		_, got := e.as(who, "GET", "/v1/sessions/"+id, "")
		_, inbox := e.as(who, "GET", "/v1/interrupts", "")
		listed, _ := inbox["interrupts"].([]any)
		if interrupts(got)[0]["may_decide"] != may || len(listed) != 1 || listed[0].(map[string]any)["may_decide"] != may {
			t.Errorf("%s: may_decide %v in the session, %v in the inbox; want %v", who, interrupts(got)[0]["may_decide"], listed, may)
		}
	}
	status, one := e.as("ana", "POST", path, approve(seq))
	if status != 200 || one["status"] != "paused" || e.runs.Load() != 0 {
		t.Fatalf("the first approval: %d %v", status, one)
	}
	approvals, _ := interrupts(one)[0]["approvals"].([]any)
	if len(approvals) != 1 || approvals[0].(map[string]any)["actor"].(map[string]any)["name"] != "ana" {
		t.Fatalf("approvals after the first: %v", interrupts(one)[0])
	}
	status, again := e.as("ana-laptop", "POST", path, approve(seqOf(one)))
	if status != 409 || errCode(again) != "already_approved" {
		t.Fatalf("ana through her second token: %d %v", status, again)
	}
	// bob decided on what he saw before ana's approval: it still counts.
	status, done := e.as("bob", "POST", path, approve(seq))
	if status != 200 || done["status"] != "completed" || e.runs.Load() != 1 {
		t.Fatalf("the second approval: %d %v, %d runs", status, done, e.runs.Load())
	}
	_, evs := e.as("ana", "GET", "/v1/sessions/"+id+"/events", "")
	var decision map[string]any
	for _, ev := range evs["events"].([]any) {
		if ev := ev.(map[string]any); ev["type"] == "decision" {
			decision = ev["data"].(map[string]any)
		}
	}
	actor, _ := decision["actor"].(map[string]any)
	if actor["name"] != "bob" || actor["via"] != "token" || actor["subject"] != "bob" || fmt.Sprint(actor["groups"]) != "[sre dev]" {
		t.Fatalf("the decision's actor %v", actor)
	}
	if got, _ := decision["approvals"].([]any); len(got) != 2 {
		t.Fatalf("the decision's approvals %v", decision["approvals"])
	}
}

// The chat doors ask the same decision point: over AG-UI, the wrong group
// and the requester are refused in the stream (RUN_ERROR naming the
// code) and change nothing; two distinct approvers complete a four-eyes
// call, the first leaving it pending. Over the AI SDK's own chat client
// (the npm package, unmodified), a person outside the group who asks and
// approves in one chat is refused the same way.
func TestGovernanceOnTheChatDoors(t *testing.T) {
	e := newGovEnv(t)
	agui := func(who, body string) string {
		t.Helper()
		req, _ := http.NewRequest("POST", e.base+"/v1/agents/main/ag-ui", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+tokenOf(who))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	out := agui("uma", `{"threadId":"gov_1","runId":"r1","messages":[{"id":"m1","role":"user","content":"Deploy the latest build to production."}]}`)
	_, s := e.as("ana", "GET", "/v1/sessions/gov_1", "")
	if s["status"] != "paused" || !strings.Contains(out, "RUN_FINISHED") {
		t.Fatalf("the AG-UI run did not pause: %v\n%s", s["status"], out)
	}
	in, seq := interrupts(s)[0]["id"].(string), seqOf(s)
	resume := func(run string) string {
		return `{"threadId":"gov_1","runId":"` + run + `","messages":[],"resume":[{"interruptId":"` + in + `","status":"resolved","payload":{"approved":true}}]}`
	}
	for who, code := range map[string]string{"dev": "not_an_approver", "uma": "not_an_approver"} {
		if out := agui(who, resume("r-"+who)); !strings.Contains(out, "RUN_ERROR") || !strings.Contains(out, code) {
			t.Errorf("%s resumes over AG-UI: %s", who, out)
		}
		if _, now := e.as("ana", "GET", "/v1/sessions/gov_1", ""); seqOf(now) != seq {
			t.Fatalf("%s's refused resume changed the session", who)
		}
	}
	if out := agui("ana", resume("r-ana")); strings.Contains(out, "RUN_ERROR") {
		t.Fatalf("ana's approval over AG-UI: %s", out)
	}
	if _, now := e.as("ana", "GET", "/v1/sessions/gov_1", ""); now["status"] != "paused" || e.runs.Load() != 0 {
		t.Fatalf("after one approval of two: %v, %d runs", now["status"], e.runs.Load())
	}
	if out := agui("bob", resume("r-bob")); strings.Contains(out, "RUN_ERROR") || e.runs.Load() != 1 {
		t.Fatalf("bob's approval over AG-UI: %d runs\n%s", e.runs.Load(), out)
	}

	// The AI SDK's chat client: dev asks and approves; dev is not in sre.
	out2 := nodeClient(t, "aisdk.mjs", "ai", []string{"AI_MODULE=ai"}, e.base, "main", tokenOf("dev"), "gov_chat", "Deploy the latest build to production.", `[[{"match":"production","approved":true}]]`)
	var got uiMessages
	if err := json.Unmarshal(out2, &got); err != nil {
		t.Fatalf("%v: %s", err, out2)
	}
	if !strings.Contains(strings.Join(got.Errors, " "), "member of sre") || e.runs.Load() != 1 {
		t.Fatalf("dev approves in the AI SDK chat: errors %v, %d runs", got.Errors, e.runs.Load())
	}
}

func tokenOf(who string) string {
	for _, tok := range govTokens {
		if tok.Name == who {
			return tok.Secret
		}
	}
	return ""
}

// withToken sends a bearer token with every request.
type withToken string

func (tok withToken) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(tok))
	return http.DefaultTransport.RoundTrip(r)
}

// Over MCP (the official Go SDK's client, elicitation): an approver outside
// the call's group is not asked (the paused result); one in the group is
// asked, approves one of two, and is not asked again; the second approver
// decides through cairn_resume and the call runs once.
func TestGovernanceOverMCP(t *testing.T) {
	ctx := context.Background()
	e := newGovEnv(t)
	connect := func(who string, asked *[]string) *sdk.ClientSession {
		t.Helper()
		handler := func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			*asked = append(*asked, req.Params.Message)
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"action": "approve"}}, nil
		}
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, &sdk.ClientOptions{ElicitationHandler: handler}).Connect(ctx,
			&sdk.StreamableClientTransport{Endpoint: e.base + "/mcp", HTTPClient: &http.Client{Transport: withToken(tokenOf(who))}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	text := func(res *sdk.CallToolResult, err error) string {
		t.Helper()
		if err != nil || len(res.Content) == 0 {
			t.Fatalf("%v %+v", err, res)
		}
		return res.Content[0].(*sdk.TextContent).Text
	}
	var devAsked, anaAsked, bobAsked []string
	out := text(connect("dev", &devAsked).CallTool(ctx, &sdk.CallToolParams{Name: "main", Arguments: map[string]any{"input": "Deploy the latest build to production."}}))
	if len(devAsked) != 0 || !strings.Contains(out, "The run is paused") {
		t.Fatalf("dev, outside sre: asked %q; %s", devAsked, out)
	}
	_, list := e.as("ana", "GET", "/v1/sessions?status=paused", "")
	id := list["sessions"].([]any)[0].(map[string]any)["id"].(string)

	out = text(connect("ana", &anaAsked).CallTool(ctx, &sdk.CallToolParams{Name: "cairn_resume", Arguments: map[string]any{"session_id": id}}))
	if len(anaAsked) != 1 || !strings.Contains(out, "The run is paused") || e.runs.Load() != 0 {
		t.Fatalf("ana: asked %d times; %s; %d runs", len(anaAsked), out, e.runs.Load())
	}
	_, s := e.as("ana", "GET", "/v1/sessions/"+id, "")
	if approvals, _ := interrupts(s)[0]["approvals"].([]any); len(approvals) != 1 {
		t.Fatalf("after ana over MCP: %v", interrupts(s)[0])
	}
	out = text(connect("bob", &bobAsked).CallTool(ctx, &sdk.CallToolParams{Name: "cairn_resume", Arguments: map[string]any{"session_id": id}}))
	if len(bobAsked) != 1 || e.runs.Load() != 1 || strings.Contains(out, "paused") {
		t.Fatalf("bob: asked %d times; %s; %d runs", len(bobAsked), out, e.runs.Load())
	}
}
