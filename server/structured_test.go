package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/session"
)

// A structured answer over REST: output is the JSON value, output_text its
// text, in the session a POST returns and in the one a GET reads back.
func TestStructuredOutputOverREST(t *testing.T) {
	m := model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		return &model.Response{Message: model.Message{Content: `{"priority": "high"}`}}, nil
	})
	runner, err := cairn.NewRunner([]*cairn.Agent{{Name: "triage", Model: m,
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"priority":{"enum":["low","high"]}},"required":["priority"]}`)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer runner.Close()
	api := httptest.NewServer(New(runner, nil))
	defer api.Close()
	resp, err := http.Post(api.URL+"/v1/sessions", "application/json", strings.NewReader(`{"agent":"triage","input":"db down"}`))
	if err != nil {
		t.Fatal(err)
	}
	var created struct {
		ID         string         `json:"id"`
		Status     string         `json:"status"`
		Output     map[string]any `json:"output"`
		OutputText string         `json:"output_text"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&created); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if created.Status != "completed" || created.Output["priority"] != "high" || created.OutputText != `{"priority": "high"}` {
		t.Fatalf("POST: %+v", created)
	}
	resp, err = http.Get(api.URL + "/v1/sessions/" + created.ID)
	if err != nil {
		t.Fatal(err)
	}
	var read map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&read); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if out, _ := read["output"].(map[string]any); out["priority"] != "high" || read["output_text"] != `{"priority": "high"}` {
		t.Fatalf("GET: %v", read)
	}
}

// The reviewed structured answer, over REST with two people: ana rejects
// the first answer with a reason (the model sees it and answers again),
// bob's edit that fails the schema gets 400 naming the field and changes
// nothing, bob's valid edit lets it go; the session's output is the edited
// JSON and the audit trail names both.
func TestReviewedStructuredAnswer(t *testing.T) {
	var seen []string // the last user-side message of each model call
	m := model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		last := req.Messages[len(req.Messages)-1]
		seen = append(seen, last.Content)
		if len(seen) == 1 {
			return &model.Response{Message: model.Message{Content: `{"priority":"low","summary":"disk at 80%"}`}}, nil
		}
		return &model.Response{Message: model.Message{Content: `{"priority":"high","summary":"disk at 80% and rising"}`}}, nil
	})
	runner, err := cairn.NewRunner([]*cairn.Agent{{Name: "triage", Model: m, Review: cairn.Always(),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"priority":{"enum":["low","high"]},"summary":{"type":"string"}},"required":["priority","summary"]}`)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer runner.Close()
	api := httptest.NewServer(New(runner, &Options{Tokens: []Token{
		{Name: "ana", Secret: "approver-token-ana-0123456789", Role: RoleApprover},
		{Name: "bob", Secret: "approver-token-bob-0123456789", Role: RoleApprover},
	}}))
	defer api.Close()
	call := func(token, method, path, body string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, api.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, out
	}
	review := func(s map[string]any) (id string, output map[string]any) {
		t.Helper()
		ins, _ := s["interrupts"].([]any)
		if s["status"] != "paused" || len(ins) != 1 {
			t.Fatalf("want a review: %v", s)
		}
		in := ins[0].(map[string]any)
		if in["kind"] != "review" || in["output_schema"] == nil {
			t.Fatalf("the interrupt: %v", in)
		}
		return in["id"].(string), in["output"].(map[string]any)
	}
	const ana, bob = "approver-token-ana-0123456789", "approver-token-bob-0123456789"
	code, s := call(ana, "POST", "/v1/sessions", `{"agent":"triage","input":"disk alert"}`)
	id, proposed := review(s)
	if code != 201 || proposed["priority"] != "low" {
		t.Fatalf("%d %v", code, s)
	}
	code, s = call(ana, "POST", "/v1/sessions/"+s["id"].(string)+"/decisions",
		fmt.Sprintf(`{"seq":%v,"decisions":[{"interrupt_id":%q,"action":"reject","reason":"it keeps rising: this is high"}]}`, s["seq"], id))
	id, proposed = review(s)
	if code != 200 || proposed["priority"] != "high" || !strings.Contains(seen[1], "it keeps rising: this is high") {
		t.Fatalf("after the rejection: %d %v; the model saw %q", code, s, seen)
	}
	sid, seq := s["id"].(string), s["seq"]
	code, bad := call(bob, "POST", "/v1/sessions/"+sid+"/decisions",
		fmt.Sprintf(`{"seq":%v,"decisions":[{"interrupt_id":%q,"action":"edit","output":{"priority":"urgent","summary":"x"}}]}`, seq, id))
	e, _ := bad["error"].(map[string]any)
	if code != 400 || e["code"] != "invalid_output" || !strings.Contains(fmt.Sprint(e["message"]), "/priority") {
		t.Fatalf("an edit that fails the schema: %d %v", code, bad)
	}
	if _, again := call(bob, "GET", "/v1/sessions/"+sid, ""); again["seq"] != seq || again["status"] != "paused" {
		t.Fatalf("the refused edit changed the session: %v", again)
	}
	code, done := call(bob, "POST", "/v1/sessions/"+sid+"/decisions",
		fmt.Sprintf(`{"seq":%v,"decisions":[{"interrupt_id":%q,"action":"edit","output":{"priority":"high","summary":"disk at 80%%, rising; page on-call"}}]}`, seq, id))
	out, _ := done["output"].(map[string]any)
	if code != 200 || done["status"] != "completed" || out["summary"] != "disk at 80%, rising; page on-call" || done["output_text"] != `{"priority":"high","summary":"disk at 80%, rising; page on-call"}` {
		t.Fatalf("the edit: %d %v", code, done)
	}
	var who []string
	evs, err := runner.Events(context.Background(), sid, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.Type == session.EventDecision {
			p, err := session.DecodeEvent(ev)
			if err != nil {
				t.Fatal(err)
			}
			d := p.(*session.DecisionMade)
			who = append(who, fmt.Sprintf("%s %s %s", d.Actor.Name, d.Kind, d.Action))
		}
	}
	if strings.Join(who, "; ") != "ana review reject; bob review edit" {
		t.Fatalf("the audit trail: %q", who)
	}
}

// A review through AG-UI: the run finishes with an interrupt of reason
// review carrying the answer and a response schema with editedOutput; a
// resume with an edited answer completes the run with it.
func TestReviewThroughAGUI(t *testing.T) {
	m := model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		return &model.Response{Message: model.Message{Content: `{"priority":"low"}`}}, nil
	})
	runner, api := reviewServer(t, m)
	post := func(body string) string {
		t.Helper()
		resp, err := http.Post(api.URL+"/v1/agents/triage/ag-ui", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	first := post(`{"threadId":"t_review","runId":"r1","messages":[{"id":"m1","role":"user","content":"disk at 95%"}]}`)
	if !strings.Contains(first, `"reason":"review"`) || !strings.Contains(first, `editedOutput`) || !strings.Contains(first, `Review the answer: {\"priority\":\"low\"}`) {
		t.Fatalf("the first run: %s", first)
	}
	s, err := runner.Session(context.Background(), "t_review")
	if err != nil || len(s.Interrupts) != 1 {
		t.Fatalf("%v %+v", err, s)
	}
	second := post(`{"threadId":"t_review","runId":"r2","messages":[],"resume":[{"interruptId":"` + s.Interrupts[0].ID + `","status":"resolved","payload":{"approved":true,"editedOutput":{"priority":"high"}}}]}`)
	if !strings.Contains(second, "RUN_FINISHED") {
		t.Fatalf("the resume: %s", second)
	}
	done, err := runner.Session(context.Background(), "t_review")
	if err != nil || done.Status != cairn.StatusCompleted || string(done.OutputJSON) != `{"priority":"high"}` {
		t.Fatalf("%v %+v", err, done)
	}
}

// A review through the AI SDK's chat protocol: it shows as a review_answer
// tool call awaiting approval, with the proposed answer as its input;
// denying it with a reason sends it back, approving it with an edited
// answer (in editedArguments) lets the edit go.
func TestReviewThroughTheAISDKChat(t *testing.T) {
	var seen []string
	m := model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		seen = append(seen, req.Messages[len(req.Messages)-1].Content)
		return &model.Response{Message: model.Message{Content: `{"priority":"low"}`}}, nil
	})
	runner, api := reviewServer(t, m)
	chat := func(body string) string {
		t.Helper()
		resp, err := http.Post(api.URL+"/v1/agents/triage/chat", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
		return string(b)
	}
	user := `{"id":"u1","role":"user","parts":[{"type":"text","text":"disk at 95%"}]}`
	first := chat(`{"id":"chat_review","trigger":"submit-message","messages":[` + user + `]}`)
	approvalID := func(stream string) string {
		t.Helper()
		_, rest, ok := strings.Cut(stream, `"type":"tool-approval-request","approvalId":"`)
		if !ok || !strings.Contains(stream, `"toolName":"review_answer"`) || !strings.Contains(stream, `"input":{"priority":"low"}`) {
			t.Fatalf("no review in the stream: %s", stream)
		}
		id, _, _ := strings.Cut(rest, `"`)
		return id
	}
	id := approvalID(first)
	answer := func(approved string, extra string) string {
		return `{"id":"chat_review","trigger":"submit-message"` + extra + `,"messages":[` + user + `,
			{"id":"m1","role":"assistant","parts":[{"type":"tool-review_answer","toolCallId":"review:` + id + `","state":"approval-responded","input":{"priority":"low"},
			 "approval":{"id":"` + id + `","approved":` + approved + `,"reason":"a disk at 95% is high"}}]}]}`
	}
	second := chat(answer("false", ""))
	if len(seen) != 2 || !strings.Contains(seen[1], "a disk at 95% is high") {
		t.Fatalf("the model saw %q", seen)
	}
	id = approvalID(second)
	chat(answer("true", `,"editedArguments":{"`+id+`":{"priority":"high"}}`))
	done, err := runner.Session(context.Background(), "chat_review")
	if err != nil || done.Status != cairn.StatusCompleted || string(done.OutputJSON) != `{"priority":"high"}` {
		t.Fatalf("%v %+v", err, done)
	}
}

// reviewServer serves a triage agent on m whose answers (a priority) are
// always reviewed.
func reviewServer(t *testing.T, m model.Model) (*cairn.Runner, *httptest.Server) {
	t.Helper()
	runner, err := cairn.NewRunner([]*cairn.Agent{{Name: "triage", Model: m, Review: cairn.Always(),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"priority":{"enum":["low","high"]}},"required":["priority"]}`)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { runner.Close() })
	api := httptest.NewServer(New(runner, nil))
	t.Cleanup(api.Close)
	return runner, api
}
