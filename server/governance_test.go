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
	fake := fakeopenai.Start(t, seedModel)
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "cairn.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	deploy := cairn.NewTool(&cairn.Tool{Name: "deploy_code", Description: "Deploy the latest build.", Approval: cairn.Always(),
		Approvers: &cairn.Approvers{Groups: []string{"sre"}, Count: 2, NotRequester: true}},
		func(ctx context.Context, a deployArgs) (string, error) {
			e.runs.Add(1)
			return "Deployment successful to " + a.Environment, nil
		})
	m := openai.New("gpt-4o-mini", &openai.Options{BaseURL: fake.BaseURL(), APIKey: "sk-test"})
	runner, err := cairn.NewRunner([]*cairn.Agent{{Name: "main", Model: m, Tools: []*cairn.Tool{deploy}}}, &cairn.RunnerOptions{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = runner.Close() })
	srv := httptest.NewServer(server.New(runner, &server.Options{Tokens: govTokens}))
	t.Cleanup(srv.Close)
	e.base = srv.URL
	return e
}

func (e *govEnv) as(who, method, path, body string) (int, map[string]any) {
	e.t.Helper()
	req, _ := http.NewRequest(method, e.base+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for _, tok := range govTokens {
		if tok.Name == who {
			req.Header.Set("Authorization", "Bearer "+tok.Secret)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		e.t.Fatalf("%s %s: %d, %q is not JSON", method, path, resp.StatusCode, data)
	}
	return resp.StatusCode, out
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
