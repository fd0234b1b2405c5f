package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testkit/fakeopenai"
	"github.com/cairnhq/cairn/internal/testkit/testwait"
	"github.com/cairnhq/cairn/model/openai"
	"github.com/cairnhq/cairn/model/scripted"
	"github.com/cairnhq/cairn/server"
	"github.com/cairnhq/cairn/store/sqlite"
)

// env is a Cairn server on a real SQLite file whose agent talks, through the
// official OpenAI SDK, to a fake OpenAI server on 127.0.0.1.
type env struct {
	t      *testing.T
	base   string
	fake   *fakeopenai.Server
	mu     sync.Mutex
	ran    map[string][]string // tool → arguments of each run
	runner *cairn.Runner
}

type deployArgs struct {
	Environment string `json:"environment" jsonschema:"staging or production"`
}

type searchArgs struct {
	Query string `json:"query"`
}

// seedModel plays the continuation agent's scenarios 1–3: it searches for
// questions, deploys when asked, and reports the last tool result.
func seedModel(r fakeopenai.Request) fakeopenai.Reply {
	last := r.Messages[len(r.Messages)-1]
	switch {
	case last.Role == "tool" && strings.Contains(last.Text(), "Paris"):
		return fakeopenai.Reply{Content: "The capital of France is Paris."}
	case last.Role == "tool" && strings.HasPrefix(last.Text(), "Deployment successful"):
		return fakeopenai.Reply{Content: "The deployment was successful."}
	case last.Role == "tool":
		return fakeopenai.Reply{Content: "I could not deploy: " + last.Text()}
	case strings.Contains(last.Text(), "capital"):
		return fakeopenai.Reply{ToolCalls: []fakeopenai.Call{{ID: "call_123", Name: "search_web", Arguments: `{"query":"capital of France"}`}}}
	case strings.Contains(last.Text(), "Deploy both"):
		return fakeopenai.Reply{ToolCalls: []fakeopenai.Call{{ID: "call_s", Name: "deploy_code", Arguments: `{"environment":"staging"}`},
			{ID: "call_p", Name: "deploy_code", Arguments: `{"environment":"production"}`}}}
	case strings.Contains(last.Text(), "Deploy"):
		return fakeopenai.Reply{ToolCalls: []fakeopenai.Call{{ID: "call_abc", Name: "deploy_code", Arguments: `{"environment":"production"}`}}}
	}
	return fakeopenai.Reply{Content: "Hello."}
}

func newEnv(t *testing.T, stream bool) *env {
	t.Helper()
	return newEnvWith(t, stream, server.Options{})
}

func newEnvWith(t *testing.T, stream bool, opts server.Options) *env {
	t.Helper()
	e := &env{t: t, ran: map[string][]string{}}
	e.fake = fakeopenai.Start(t, seedModel)
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "cairn.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	// Its preview (a dry run) is a diff of the environment's release.
	deploy := cairn.NewTool(&cairn.Tool{Name: "deploy_code", Description: "Deploy the latest build.", Approval: cairn.Always(), Confirmation: "Deploy to {{.environment}}?",
		Preview: func(ctx context.Context, args json.RawMessage) (cairn.Preview, error) {
			var a deployArgs
			if err := json.Unmarshal(args, &a); err != nil {
				return cairn.Preview{}, err
			}
			return cairn.TextPreview(cairn.PreviewDiff, "--- "+a.Environment+"\n+++ "+a.Environment+"\n-release: v41\n+release: v42\n"), nil
		}}, func(ctx context.Context, a deployArgs) (string, error) {
		e.record("deploy_code", a.Environment)
		return "Deployment successful to " + a.Environment, nil
	})
	search := cairn.NewTool(&cairn.Tool{Name: "search_web", Description: "Search the web."}, func(ctx context.Context, a searchArgs) (string, error) {
		e.record("search_web", a.Query)
		return "Paris is the capital.", nil
	})
	m := openai.New("gpt-4o-mini", &openai.Options{BaseURL: e.fake.BaseURL(), APIKey: "sk-test", Stream: stream})
	e.runner, err = cairn.NewRunner([]*cairn.Agent{{Name: "main", Instructions: "You are an operations assistant.", Model: m, Tools: []*cairn.Tool{deploy, search}}}, &cairn.RunnerOptions{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.runner.Close() })
	srv := httptest.NewServer(server.New(e.runner, &opts))
	t.Cleanup(srv.Close)
	e.base = srv.URL
	return e
}

func (e *env) record(tool, arg string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.ran[tool] = append(e.ran[tool], arg)
}

func (e *env) runs(tool string) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.ran[tool]...)
}

// do sends a request and decodes the JSON answer.
func (e *env) do(method, path, body string) (int, map[string]any) {
	e.t.Helper()
	req, _ := http.NewRequest(method, e.base+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	data, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(data, &out); err != nil {
		e.t.Fatalf("%s %s: %d, body %q is not JSON", method, path, resp.StatusCode, data)
	}
	return resp.StatusCode, out
}

// callAs sends a request with a bearer token (none when token is empty)
// and decodes the JSON answer.
func callAs(t *testing.T, base, token, method, path, body string) (int, map[string]any) {
	t.Helper()
	status, data := rawCall(t, method, base+path, token, body)
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("%s %s: %d, %q is not JSON", method, path, status, data)
	}
	return status, out
}

// rawCall sends a JSON request that asks for JSON, with a bearer token
// (none when token is empty), and returns the answer's status and body.
func rawCall(t *testing.T, method, url, token, body string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, data
}

func errCode(body map[string]any) string {
	e, _ := body["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

func interrupts(s map[string]any) []map[string]any {
	var out []map[string]any
	list, _ := s["interrupts"].([]any)
	for _, i := range list {
		out = append(out, i.(map[string]any))
	}
	return out
}

func seqOf(s map[string]any) int64 { return int64(s["seq"].(float64)) }

func TestToolCallsApprovalsAndRejectionsOverHTTP(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			e := newEnv(t, stream)

			// Scenario 1: a tool that needs no approval runs; the agent answers.
			code, s := e.do("POST", "/v1/sessions", `{"agent":"main","input":"What is the capital of France?"}`)
			if code != 201 || s["status"] != "completed" || s["output"] != "The capital of France is Paris." {
				t.Fatalf("scenario 1: %d %v", code, s)
			}
			if got := e.runs("search_web"); len(got) != 1 || got[0] != "capital of France" {
				t.Fatalf("search_web runs = %v", got)
			}

			// Scenario 2: deploy_code needs approval: the session pauses.
			code, s = e.do("POST", "/v1/sessions", `{"agent":"main","input":"Deploy the latest changes to production."}`)
			ins := interrupts(s)
			if code != 201 || s["status"] != "paused" || len(ins) != 1 {
				t.Fatalf("scenario 2: %d %v", code, s)
			}
			in := ins[0]
			path := in["path"].([]any)[0].(map[string]any)
			if in["kind"] != "approval" || in["tool"] != "deploy_code" || in["message"] != "Deploy to production?" ||
				path["tool"] != "deploy_code" || path["call_id"] != "call_abc" || path["agent"] != "main" {
				t.Fatalf("interrupt = %v", in)
			}
			if args := in["arguments"].(map[string]any); args["environment"] != "production" {
				t.Fatalf("arguments = %v", args)
			}
			if len(e.runs("deploy_code")) != 0 {
				t.Fatal("deploy ran before approval")
			}
			id := s["id"].(string)
			_, inbox := e.do("GET", "/v1/interrupts?status=pending", "")
			if list := inbox["interrupts"].([]any); len(list) != 1 || list[0].(map[string]any)["session_id"] != id {
				t.Fatalf("inbox = %v", inbox)
			}
			_, paused := e.do("GET", "/v1/sessions?status=paused", "")
			if list := paused["sessions"].([]any); len(list) != 1 {
				t.Fatalf("paused sessions = %v", paused)
			}

			// Scenario 3: approve; the tool runs once; the model sees its result.
			code, s = e.do("POST", "/v1/sessions/"+id+"/decisions", fmt.Sprintf(`{"seq":%d,"decisions":[{"interrupt_id":%q,"action":"approve"}]}`, seqOf(s), in["id"]))
			if code != 200 || s["status"] != "completed" || s["output"] != "The deployment was successful." {
				t.Fatalf("scenario 3: %d %v", code, s)
			}
			if got := e.runs("deploy_code"); len(got) != 1 || got[0] != "production" {
				t.Fatalf("deploy runs = %v", got)
			}
			reqs := e.fake.Requests()
			lastReq := reqs[len(reqs)-1]
			toolMsg := lastReq.Messages[len(lastReq.Messages)-1]
			if toolMsg.Role != "tool" || toolMsg.ToolCallID != "call_abc" || toolMsg.Text() != "Deployment successful to production" {
				t.Fatalf("model saw %+v", toolMsg)
			}
			for _, r := range reqs {
				if r.Stream != stream {
					t.Fatalf("request stream = %v, want %v", r.Stream, stream)
				}
			}
		})
	}
}

func TestConcurrentDecisionsOverHTTP(t *testing.T) {
	e := newEnv(t, false)
	_, s := e.do("POST", "/v1/sessions", `{"agent":"main","input":"Deploy now."}`)
	body := fmt.Sprintf(`{"seq":%d,"decisions":[{"interrupt_id":%q,"action":"approve"}]}`, seqOf(s), interrupts(s)[0]["id"])
	codes := make([]int, 4)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			resp, err := http.Post(e.base+"/v1/sessions/"+s["id"].(string)+"/decisions", "application/json", strings.NewReader(body))
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			codes[i] = resp.StatusCode
		}()
	}
	close(start)
	wg.Wait()
	ok, conflict := 0, 0
	for _, c := range codes {
		switch c {
		case 200:
			ok++
		case 409:
			conflict++
		}
	}
	if ok != 1 || conflict != 3 || len(e.runs("deploy_code")) != 1 {
		t.Fatalf("codes %v, deploy runs %d; want one 200, three 409, one run", codes, len(e.runs("deploy_code")))
	}
}

func TestErrorCodesLeaveSessionUnchanged(t *testing.T) {
	e := newEnv(t, false)
	_, s := e.do("POST", "/v1/sessions", `{"agent":"main","input":"Deploy now."}`)
	id := s["id"].(string)
	seq := seqOf(s)
	intID := interrupts(s)[0]["id"].(string)
	_, before := e.do("GET", "/v1/sessions/"+id+"/events", "")
	nEvents := len(before["events"].([]any))

	cases := []struct {
		name, method, path, body string
		status                   int
		code                     string
	}{
		{"malformed JSON", "POST", "/v1/sessions", `{"agent":`, 400, "invalid_request"},
		{"missing agent", "POST", "/v1/sessions", `{"input":"hi"}`, 400, "invalid_request"},
		{"unknown field", "POST", "/v1/sessions", `{"agent":"main","input":"hi","agnet":"x"}`, 400, "invalid_request"},
		{"unknown agent", "POST", "/v1/sessions", `{"agent":"nobody","input":"hi"}`, 400, "unknown_agent"},
		{"unknown session", "GET", "/v1/sessions/ses_nope", "", 404, "not_found"},
		{"decisions malformed", "POST", "/v1/sessions/" + id + "/decisions", `{"seq":`, 400, "invalid_request"},
		{"decisions without seq", "POST", "/v1/sessions/" + id + "/decisions", fmt.Sprintf(`{"decisions":[{"interrupt_id":%q,"action":"approve"}]}`, intID), 400, "invalid_request"},
		{"decisions unknown session", "POST", "/v1/sessions/ses_nope/decisions", fmt.Sprintf(`{"seq":%d,"decisions":[{"interrupt_id":%q,"action":"approve"}]}`, seq, intID), 404, "not_found"},
		{"stale seq", "POST", "/v1/sessions/" + id + "/decisions", fmt.Sprintf(`{"seq":%d,"decisions":[{"interrupt_id":%q,"action":"approve"}]}`, seq-1, intID), 409, "conflict"},
		{"unknown interrupt", "POST", "/v1/sessions/" + id + "/decisions", fmt.Sprintf(`{"seq":%d,"decisions":[{"interrupt_id":"int_nope","action":"approve"}]}`, seq), 400, "unknown_interrupt"},
		{"invalid arguments", "POST", "/v1/sessions/" + id + "/decisions", fmt.Sprintf(`{"seq":%d,"decisions":[{"interrupt_id":%q,"action":"approve","arguments":{"environment":5}}]}`, seq, intID), 400, "invalid_arguments"},
		{"bad action", "POST", "/v1/sessions/" + id + "/decisions", fmt.Sprintf(`{"seq":%d,"decisions":[{"interrupt_id":%q,"action":"perhaps"}]}`, seq, intID), 400, "invalid_request"},
		{"message while paused", "POST", "/v1/sessions/" + id + "/messages", `{"text":"hello?"}`, 409, "conflict"},
		{"bad after", "GET", "/v1/sessions/" + id + "/events?after=x", "", 400, "invalid_request"},
		{"bad status filter", "GET", "/v1/sessions?status=sleeping", "", 400, "invalid_request"},
	}
	for _, c := range cases {
		status, body := e.do(c.method, c.path, c.body)
		if status != c.status || errCode(body) != c.code {
			t.Errorf("%s: %d %v; want %d %s", c.name, status, body, c.status, c.code)
		}
		if msg, _ := body["error"].(map[string]any)["message"].(string); msg == "" {
			t.Errorf("%s: no error message", c.name)
		}
	}
	_, after := e.do("GET", "/v1/sessions/"+id, "")
	_, evs := e.do("GET", "/v1/sessions/"+id+"/events", "")
	if seqOf(after) != seq || after["status"] != "paused" || len(evs["events"].([]any)) != nEvents || len(e.runs("deploy_code")) != 0 {
		t.Fatalf("refused requests changed the session: %v", after)
	}
	// And the pause still works.
	code, s := e.do("POST", "/v1/sessions/"+id+"/decisions", fmt.Sprintf(`{"seq":%d,"decisions":[{"interrupt_id":%q,"action":"approve","arguments":{"environment":"staging"}}]}`, seq, intID))
	if code != 200 || s["status"] != "completed" || strings.Join(e.runs("deploy_code"), ",") != "staging" {
		t.Fatalf("approve after refusals: %d %v, runs %v", code, s, e.runs("deploy_code"))
	}
}

func TestEventsListAndSSE(t *testing.T) {
	e := newEnv(t, true)
	_, s := e.do("POST", "/v1/sessions", `{"agent":"main","input":"Deploy now."}`)
	id := s["id"].(string)
	_, list := e.do("GET", "/v1/sessions/"+id+"/events?after=2", "")
	evs := list["events"].([]any)
	if len(evs) == 0 || evs[0].(map[string]any)["seq"].(float64) != 3 {
		t.Fatalf("events after 2 = %v", evs)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", e.base+"/v1/sessions/"+id+"/events", nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Last-Event-ID", "1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	sc := bufio.NewScanner(resp.Body)
	next := func() (id, typ string, data []byte) {
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "id: "):
				id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "event: "):
				typ = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				data = []byte(strings.TrimPrefix(line, "data: "))
			case line == "" && typ != "":
				return id, typ, data
			}
		}
		t.Fatalf("stream ended: %v", sc.Err())
		return
	}
	// The backlog starts after Last-Event-ID.
	if id, typ, _ := next(); id != "2" || typ != "user_message" {
		t.Fatalf("first streamed event: id %s type %s", id, typ)
	}
	for {
		if _, typ, _ := next(); typ == "turn_paused" {
			break
		}
	}
	// Live: decide while streaming; the rest of the turn arrives, deltas included.
	decided := make(chan error, 1)
	go func() {
		resp, err := http.Post(e.base+"/v1/sessions/"+id+"/decisions", "application/json",
			strings.NewReader(fmt.Sprintf(`{"seq":%d,"decisions":[{"interrupt_id":%q,"action":"approve"}]}`, seqOf(s), interrupts(s)[0]["id"])))
		if err == nil {
			resp.Body.Close()
		}
		decided <- err
	}()
	defer func() {
		if err := <-decided; err != nil {
			t.Error(err)
		}
	}()
	var types []string
	var text bytes.Buffer
	for {
		id, typ, data := next()
		types = append(types, typ)
		if typ == string(cairn.EventModelDelta) {
			if id != "" {
				t.Fatalf("delta has an id: %s", id)
			}
			var ev cairn.Event
			if err := json.Unmarshal(data, &ev); err != nil {
				t.Fatal(err)
			}
			var d struct{ Text string }
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				t.Fatal(err)
			}
			text.WriteString(d.Text)
		}
		if typ == "turn_completed" {
			break
		}
	}
	want := "decision tool_started tool_result model_delta"
	if got := strings.Join(types, " "); !strings.HasPrefix(got, want) || !strings.HasSuffix(got, "model_response turn_completed") {
		t.Fatalf("live events: %s", got)
	}
	if text.String() != "The deployment was successful." {
		t.Fatalf("deltas spell %q", text.String())
	}
}

func TestDetachedStart(t *testing.T) {
	e := newEnv(t, false)
	code, s := e.do("POST", "/v1/sessions", `{"agent":"main","input":"Deploy now.","wait":false}`)
	if code != 201 || s["status"] != "running" {
		t.Fatalf("%d %v", code, s)
	}
	testwait.For(t, 10*time.Second, "the detached session to pause", func() bool {
		_, got := e.do("GET", "/v1/sessions/"+s["id"].(string), "")
		return got["status"] == "paused"
	})
}

func TestCancelAndAnswerOverHTTP(t *testing.T) {
	main := scripted.New(
		scripted.Reply{ToolCalls: []scripted.Call{{Name: "use_skill", Arguments: `{"input":"hi"}`}}},
		scripted.Reply{Text: "main: {{.LastResult}}"},
	)
	skill := scripted.New(scripted.Reply{Text: "skill says hi"})
	asker := scripted.New(
		scripted.Reply{ToolCalls: []scripted.Call{{Name: "ask_user", Arguments: `{"question":"Which env?"}`}}},
		scripted.Reply{Text: "answer was {{.LastResult}}"},
	)
	r, err := cairn.NewRunner([]*cairn.Agent{
		{Name: "main", Model: main, Tools: []*cairn.Tool{cairn.InteractiveAgentTool("skill", &cairn.Tool{Name: "use_skill", Description: "Skill."})}},
		{Name: "skill", Model: skill},
		{Name: "asker", Model: asker, Tools: []*cairn.Tool{cairn.AskUser("ask_user")}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	srv := httptest.NewServer(server.New(r, nil))
	defer srv.Close()
	e := &env{t: t, base: srv.URL}

	_, s := e.do("POST", "/v1/sessions", `{"agent":"main","input":"go"}`)
	id := s["id"].(string)
	if code, body := e.do("POST", "/v1/sessions/"+id+"/cancel", `{"scope":"sideways"}`); code != 400 || errCode(body) != "invalid_request" {
		t.Fatalf("bad scope: %d %v", code, body)
	}
	code, s := e.do("POST", "/v1/sessions/"+id+"/cancel", `{"scope":"top"}`)
	if code != 200 || s["status"] != "completed" || !strings.Contains(s["output"].(string), "cancelled by the user") {
		t.Fatalf("cancel top: %d %v", code, s)
	}
	if code, body := e.do("POST", "/v1/sessions/"+id+"/cancel", `{"scope":"top"}`); code != 409 || errCode(body) != "conflict" {
		t.Fatalf("nothing to cancel: %d %v", code, body)
	}

	_, s = e.do("POST", "/v1/sessions", `{"agent":"asker","input":"deploy"}`)
	in := interrupts(s)[0]
	if in["kind"] != "input" || in["question"] != "Which env?" {
		t.Fatalf("question: %v", in)
	}
	code, s = e.do("POST", "/v1/sessions/"+s["id"].(string)+"/decisions", fmt.Sprintf(`{"seq":%d,"decisions":[{"interrupt_id":%q,"action":"answer","text":"staging"}]}`, seqOf(s), in["id"]))
	if code != 200 || s["output"] != "answer was staging" {
		t.Fatalf("answer: %d %v", code, s)
	}
}

// A 1-second TTL: the session completes on its own with the model having
// seen "approval expired"; a late approval gets 410 and changes nothing.
func TestApprovalTTLOverHTTP(t *testing.T) {
	for _, sweep := range []time.Duration{0, -1} {
		fake := fakeopenai.Start(t, seedModel)
		deploy := cairn.NewTool(&cairn.Tool{Name: "deploy_code", Description: "Deploy.", Approval: cairn.Always(), ApprovalTTL: time.Second}, func(ctx context.Context, a deployArgs) (string, error) {
			t.Error("an expired approval ran the tool")
			return "", nil
		})
		m := openai.New("m", &openai.Options{BaseURL: fake.BaseURL(), APIKey: "k"})
		r, err := cairn.NewRunner([]*cairn.Agent{{Name: "main", Model: m, Tools: []*cairn.Tool{deploy}}}, &cairn.RunnerOptions{ExpirySweep: sweep})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(server.New(r, nil))
		e := &env{t: t, base: srv.URL}
		_, s := e.do("POST", "/v1/sessions", `{"agent":"main","input":"Deploy now."}`)
		id := s["id"].(string)
		in := interrupts(s)[0]
		if in["expires_at"] == nil {
			t.Fatalf("no expires_at: %v", in)
		}
		if sweep < 0 {
			time.Sleep(1100 * time.Millisecond) // elapsed time: past the 1 s TTL, with no sweeper
			code, body := e.do("POST", "/v1/sessions/"+id+"/decisions", fmt.Sprintf(`{"seq":%d,"decisions":[{"interrupt_id":%q,"action":"approve"}]}`, seqOf(s), in["id"]))
			if code != 410 || errCode(body) != "expired" {
				t.Fatalf("late approval: %d %v", code, body)
			}
			if _, after := e.do("GET", "/v1/sessions/"+id, ""); seqOf(after) != seqOf(s) || after["status"] != "paused" {
				t.Fatalf("a refused late approval changed the session: %v", after)
			}
		} else {
			var got map[string]any
			testwait.For(t, 5*time.Second, "the session to go on after the TTL", func() bool {
				_, got = e.do("GET", "/v1/sessions/"+id, "")
				return got["status"] == "completed" || got["status"] == "failed"
			})
			reqs := fake.Requests()
			lastMsg := reqs[len(reqs)-1].Messages
			if got["status"] != "completed" || !strings.Contains(lastMsg[len(lastMsg)-1].Text(), "approval expired") {
				t.Fatalf("after the TTL: %v; model saw %+v", got, lastMsg[len(lastMsg)-1])
			}
		}
		srv.Close()
		r.Close()
	}
}

func TestAuthAndRoles(t *testing.T) {
	fake := fakeopenai.Start(t, seedModel)
	deploy := cairn.NewTool(&cairn.Tool{Name: "deploy_code", Description: "Deploy.", Approval: cairn.Always()}, func(ctx context.Context, a deployArgs) (string, error) {
		return "Deployment successful", nil
	})
	m := openai.New("m", &openai.Options{BaseURL: fake.BaseURL(), APIKey: "k"})
	r, err := cairn.NewRunner([]*cairn.Agent{{Name: "main", Model: m, Tools: []*cairn.Tool{deploy}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	srv := httptest.NewServer(server.New(r, &server.Options{Tokens: []server.Token{
		{Name: "alice", Secret: "user-token-aaaaaaaaaaaa", Role: server.RoleUser},
		{Name: "bob", Secret: "user-token-bbbbbbbbbbbb", Role: server.RoleUser},
		{Name: "ops-lead", Secret: "approver-token-cccccccc", Role: server.RoleApprover},
		{Name: "root", Secret: "admin-token-dddddddddddd", Role: server.RoleAdmin},
	}}))
	defer srv.Close()
	as := func(token, method, path, body string) (int, map[string]any) {
		t.Helper()
		return callAs(t, srv.URL, token, method, path, body)
	}
	if code, body := as("", "GET", "/v1/sessions", ""); code != 401 || errCode(body) != "unauthorized" {
		t.Fatalf("no token: %d %v", code, body)
	}
	if code, body := as("user-token-aaaaaaaaaaaX", "GET", "/v1/sessions", ""); code != 401 || errCode(body) != "unauthorized" {
		t.Fatalf("wrong token: %d %v", code, body)
	}
	code, s := as("user-token-aaaaaaaaaaaa", "POST", "/v1/sessions", `{"agent":"main","input":"Deploy now."}`)
	if code != 201 || s["owner"] != "alice" || s["status"] != "paused" {
		t.Fatalf("alice starts: %d %v", code, s)
	}
	id := s["id"].(string)
	decide := fmt.Sprintf(`{"seq":%d,"decisions":[{"interrupt_id":%q,"action":"approve"}]}`, seqOf(s), interrupts(s)[0]["id"])
	if code, body := as("user-token-aaaaaaaaaaaa", "POST", "/v1/sessions/"+id+"/decisions", decide); code != 403 || errCode(body) != "forbidden" {
		t.Fatalf("user decides: %d %v", code, body)
	}
	if code, _ := as("user-token-aaaaaaaaaaaa", "GET", "/v1/interrupts?status=pending", ""); code != 403 {
		t.Fatalf("user reads the inbox: %d", code)
	}
	// Bob cannot tell alice's session from one that does not exist.
	code, theirs := as("user-token-bbbbbbbbbbbb", "GET", "/v1/sessions/"+id, "")
	_, missing := as("user-token-bbbbbbbbbbbb", "GET", "/v1/sessions/ses_missing", "")
	if code != 404 || errCode(theirs) != "not_found" || strings.ReplaceAll(fmt.Sprint(theirs), id, "ses_missing") != fmt.Sprint(missing) {
		t.Fatalf("bob reads alice's session: %d %v (a missing one: %v)", code, theirs, missing)
	}
	for path, body := range map[string]string{"/messages": `{"text":"hi"}`, "/cancel": `{"scope":"all"}`} {
		if code, _ := as("user-token-bbbbbbbbbbbb", "POST", "/v1/sessions/"+id+path, body); code != 404 {
			t.Fatalf("bob %s alice's session: %d", path, code)
		}
	}
	if code, _ := as("user-token-bbbbbbbbbbbb", "GET", "/v1/sessions/"+id+"/events", ""); code != 404 {
		t.Fatalf("bob reads alice's events: %d", code)
	}
	// An approver decides and reads, but does not speak for alice.
	if code, body := as("approver-token-cccccccc", "POST", "/v1/sessions/"+id+"/messages", `{"text":"approve it yourself"}`); code != 403 || errCode(body) != "forbidden" {
		t.Fatalf("approver posts into alice's session: %d %v", code, body)
	}
	if code, body := as("approver-token-cccccccc", "POST", "/v1/sessions/"+id+"/cancel", `{"scope":"all"}`); code != 403 || errCode(body) != "forbidden" {
		t.Fatalf("approver cancels alice's session: %d %v", code, body)
	}
	// The bearer scheme is case-insensitive.
	req, _ := http.NewRequest("GET", srv.URL+"/v1/sessions/"+id, nil)
	req.Header.Set("Authorization", "bearer user-token-aaaaaaaaaaaa")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("lower-case bearer: %v %v", err, resp)
	}
	if _, list := as("user-token-bbbbbbbbbbbb", "GET", "/v1/sessions", ""); len(list["sessions"].([]any)) != 0 {
		t.Fatalf("bob lists alice's session: %v", list)
	}
	if code, _ := as("user-token-aaaaaaaaaaaa", "GET", "/v1/sessions/"+id, ""); code != 200 {
		t.Fatalf("alice reads her session: %d", code)
	}
	// A second session, so the inbox spans sessions.
	as("user-token-bbbbbbbbbbbb", "POST", "/v1/sessions", `{"agent":"main","input":"Deploy again."}`)
	code, inbox := as("approver-token-cccccccc", "GET", "/v1/interrupts?status=pending", "")
	if code != 200 || len(inbox["interrupts"].([]any)) != 2 {
		t.Fatalf("inbox: %d %v", code, inbox)
	}
	if code, s = as("approver-token-cccccccc", "POST", "/v1/sessions/"+id+"/decisions", decide); code != 200 || s["status"] != "completed" {
		t.Fatalf("approver decides: %d %v", code, s)
	}
	// Alice's session is now the newest; Bob's first page still holds his
	// own: the store lists by owner, so no page comes back short.
	if code, list := as("user-token-bbbbbbbbbbbb", "GET", "/v1/sessions?limit=1", ""); code != 200 || len(list["sessions"].([]any)) != 1 ||
		list["sessions"].([]any)[0].(map[string]any)["owner"] != "bob" || list["next_cursor"] != nil {
		t.Fatalf("bob's first page: %d %v", code, list)
	}
	// Alice speaks again and an admin cancels: every event a person causes
	// names them.
	if code, s = as("user-token-aaaaaaaaaaaa", "POST", "/v1/sessions/"+id+"/messages", `{"text":"Deploy once more."}`); code != 200 || s["status"] != "paused" {
		t.Fatalf("alice speaks again: %d %v", code, s)
	}
	if code, s = as("admin-token-dddddddddddd", "POST", "/v1/sessions/"+id+"/cancel", `{"scope":"all"}`); code != 200 || s["status"] != "cancelled" {
		t.Fatalf("admin cancels: %d %v", code, s)
	}
	_, evs := as("user-token-aaaaaaaaaaaa", "GET", "/v1/sessions/"+id+"/events", "")
	var actors []string
	for _, ev := range evs["events"].([]any) {
		ev := ev.(map[string]any)
		switch ev["type"] {
		case "user_message", "decision", "turn_cancelled":
			actor, _ := ev["data"].(map[string]any)["actor"].(map[string]any)
			actors = append(actors, fmt.Sprintf("%s by %v/%v", ev["type"], actor["name"], actor["role"]))
		}
	}
	want := "user_message by alice/user, decision by ops-lead/approver, user_message by alice/user, turn_cancelled by root/admin"
	if got := strings.Join(actors, ", "); got != want {
		t.Fatalf("actors:\n got %s\nwant %s", got, want)
	}
}

func TestStatelessInvoke(t *testing.T) {
	e := newEnv(t, false)
	code, res := e.do("POST", "/v1/agents/main/invoke", `{"input":"Deploy the latest changes to production."}`)
	tok, _ := res["continuation"].(string)
	if code != 200 || res["status"] != "paused" || tok == "" {
		t.Fatalf("invoke: %d %v", code, res)
	}
	in := interrupts(res)[0]
	body := func(token string) string {
		return fmt.Sprintf(`{"continuation":%q,"decisions":[{"interrupt_id":%q,"action":"approve"}]}`, token, in["id"])
	}
	tampered := strings.Replace(tok, tok[20:24], "AAAA", 1)
	for name, b := range map[string]string{"tampered": body(tampered), "truncated": body(tok[:len(tok)/2]), "foreign": body("cairn.v1.e30." + strings.Repeat("A", 43))} {
		if code, res := e.do("POST", "/v1/agents/main/invoke", b); code != 400 || errCode(res) != "invalid_continuation" {
			t.Errorf("%s: %d %v", name, code, res)
		}
	}
	if code, res := e.do("POST", "/v1/agents/main/invoke", `{"input":"x","continuation":"y"}`); code != 400 || errCode(res) != "invalid_request" {
		t.Errorf("both: %d %v", code, res)
	}
	if len(e.runs("deploy_code")) != 0 {
		t.Fatal("a refused token ran the tool")
	}
	code, res = e.do("POST", "/v1/agents/main/invoke", body(tok))
	if code != 200 || res["status"] != "completed" || res["output"] != "The deployment was successful." || res["continuation"] != nil {
		t.Fatalf("continue: %d %v", code, res)
	}
	if code, res := e.do("POST", "/v1/agents/main/invoke", body(tok)); code != 409 || errCode(res) != "conflict" {
		t.Fatalf("replay: %d %v", code, res)
	}
	if len(e.runs("deploy_code")) != 1 {
		t.Fatalf("deploy ran %d times", len(e.runs("deploy_code")))
	}
}

// SSE forwards text deltas to clients while the model is still answering.
func TestSSEDeltasBeforeTheResponseEnds(t *testing.T) {
	// Deltas are not stored, so the model waits until the client is
	// subscribed, then holds the rest of its answer after the first delta.
	connected, hold := make(chan struct{}), make(chan struct{})
	fake := fakeopenai.Start(t, func(fakeopenai.Request) fakeopenai.Reply {
		return fakeopenai.Reply{Content: "Hello there, streaming.", Wait: connected, Hold: hold}
	})
	m := openai.New("m", &openai.Options{BaseURL: fake.BaseURL(), APIKey: "k", Stream: true})
	r, err := cairn.NewRunner([]*cairn.Agent{{Name: "main", Model: m}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	srv := httptest.NewServer(server.New(r, nil))
	defer srv.Close()
	e := &env{t: t, base: srv.URL}
	_, s := e.do("POST", "/v1/sessions", `{"agent":"main","input":"hi","wait":false}`)
	req, _ := http.NewRequest("GET", srv.URL+"/v1/sessions/"+s["id"].(string)+"/events", nil)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	var seen []string
	released := false
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "event: ") {
			seen = append(seen, strings.TrimPrefix(line, "event: "))
		}
		if line == "event: user_message" {
			close(connected) // the backlog arrived: this client is subscribed
		}
		if line == "event: model_delta" && !released {
			close(hold) // the server held the rest of the answer until now
			released = true
		}
		if line == "event: turn_completed" {
			break
		}
	}
	if !released {
		t.Fatalf("no delta arrived while the model was answering: %v", seen)
	}
	if got := strings.Join(seen, " "); !strings.HasSuffix(got, "model_response turn_completed") {
		t.Fatalf("events: %s", got)
	}
}
