package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testkit/hooktest"
	"github.com/cairnhq/cairn/server"
	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/webhook"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// doorTokens are the people of the door table: four of tenant acme (uma
// asks for deploys; ana and bob are in sre; dev is not), gil of tenant
// globex (in a group named sre too), and ops, a global admin (tenant "*").
var doorTokens = []server.Token{
	{Name: "uma", Secret: "door-uma-00000000000000000", Role: server.RoleApprover, Groups: []string{"sre"}, Tenant: "acme"},
	{Name: "ana", Secret: "door-ana-00000000000000000", Role: server.RoleApprover, Groups: []string{"sre"}, Tenant: "acme"},
	{Name: "bob", Secret: "door-bob-00000000000000000", Role: server.RoleApprover, Groups: []string{"sre"}, Tenant: "acme"},
	{Name: "dev", Secret: "door-dev-00000000000000000", Role: server.RoleApprover, Groups: []string{"dev"}, Tenant: "acme"},
	{Name: "gil", Secret: "door-gil-00000000000000000", Role: server.RoleApprover, Groups: []string{"sre"}, Tenant: "globex"},
	{Name: "ops", Secret: "door-ops-00000000000000000", Role: server.RoleAdmin, AllTenants: true},
}

const doorHookSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

func doorToken(who string) server.Token {
	for _, tok := range doorTokens {
		if tok.Name == who {
			return tok
		}
	}
	panic("no token " + who)
}

// doorActor is who the person is to the library: what the server makes of
// their token.
func doorActor(who string) cairn.Actor {
	tok := doorToken(who)
	return cairn.Actor{Name: tok.Name, Role: tok.Role, Subject: tok.Name, Groups: tok.Groups, Tenant: tok.Tenant, AllTenants: tok.AllTenants, Via: session.ViaToken}
}

// doorEnv is a server whose deploy tool needs two distinct members of sre,
// neither the person who asked, with action links going to a receiver of
// acme's sre and one of globex's.
type doorEnv struct {
	t            *testing.T
	base         string
	runner       *cairn.Runner
	runs         atomic.Int32
	acme, globex *hooktest.Receiver
	// anaInbox and umaInbox are personal inboxes: links issued to ana, to uma.
	anaInbox, umaInbox *hooktest.Receiver
}

func newDoorEnv(t *testing.T) *doorEnv {
	e := &doorEnv{t: t, acme: hooktest.New(t, doorHookSecret), globex: hooktest.New(t, doorHookSecret),
		anaInbox: hooktest.New(t, doorHookSecret), umaInbox: hooktest.New(t, doorHookSecret)}
	ana, uma := doorActor("ana"), doorActor("uma")
	ana.Via, uma.Via = "", ""
	front := httptest.NewUnstartedServer(nil)
	e.base = "http://" + front.Listener.Addr().String()
	e.runner = deployRunnerWith(t, &cairn.Approvers{Groups: []string{"sre"}, Count: 2, NotRequester: true}, &e.runs, &cairn.RunnerOptions{
		PublicURL: e.base,
		Webhooks: []webhook.Subscription{
			{Name: "acme-sre", URL: e.acme.URL, Secret: doorHookSecret, Groups: []string{"sre"}, Tenant: "acme"},
			{Name: "globex-sre", URL: e.globex.URL, Secret: doorHookSecret, Groups: []string{"sre"}, Tenant: "globex"},
			{Name: "ana-inbox", URL: e.anaInbox.URL, Secret: doorHookSecret, Person: &ana},
			{Name: "uma-inbox", URL: e.umaInbox.URL, Secret: doorHookSecret, Person: &uma},
		}})
	front.Config.Handler = server.New(e.runner, &server.Options{Tokens: doorTokens})
	front.Start()
	t.Cleanup(front.Close)
	return e
}

func (e *doorEnv) as(who, method, path, body string) (int, map[string]any) {
	e.t.Helper()
	return callAs(e.t, e.base, doorToken(who).Secret, method, path, body)
}

// pausedDeploy is a session uma started in acme, paused on the deploy:
// its id, the interrupt's and the seq.
func (e *doorEnv) pausedDeploy() (id, in string, seq int64) {
	e.t.Helper()
	status, s := e.as("uma", "POST", "/v1/sessions", `{"agent":"main","input":"Deploy the latest build to production."}`)
	if status != 201 || s["status"] != "paused" || s["tenant"] != "acme" {
		e.t.Fatalf("uma's deploy: %d %v", status, s)
	}
	return s["id"].(string), interrupts(s)[0]["id"].(string), seqOf(s)
}

// stored is what the store holds of a session: its seq and events.
func (e *doorEnv) stored(id string) string {
	e.t.Helper()
	evs, err := e.runner.Events(context.Background(), id, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	b, _ := json.Marshal(evs)
	return string(b)
}

// door decides in (of session id, at seq) as who through one door, and
// says what the caller was answered: "ok" when the decision was taken,
// else the error's code (each door's own way of saying it is checked by
// the door: a status, a RUN_ERROR, a tool error).
type door struct {
	name   string
	decide func(e *doorEnv, who, id, in string, seq int64) string
	// answers, where the door answers otherwise than with the error's
	// code: by who.
	answers map[string]string
}

// httpAnswer is "ok" for a 200, else the error's code after checking that
// the status is the code's.
func httpAnswer(t *testing.T, what string, status int, body map[string]any) string {
	t.Helper()
	if status == 200 {
		return "ok"
	}
	code := errCode(body)
	want := map[string]int{"forbidden": 403, "not_an_approver": 403, "not_found": 404, "already_approved": 409}[code]
	if want == 0 || status != want {
		t.Errorf("%s: %d %v", what, status, body)
	}
	return code
}

func post(t *testing.T, url, token, body string) (int, []byte) {
	t.Helper()
	return rawCall(t, "POST", url, token, body)
}

func doors() []door {
	return []door{
		{name: "REST", decide: func(e *doorEnv, who, id, in string, seq int64) string {
			status, body := e.as(who, "POST", "/v1/sessions/"+id+"/decisions", fmt.Sprintf(`{"seq":%d,"decisions":[{"interrupt_id":%q,"action":"approve"}]}`, seq, in))
			return httpAnswer(e.t, "REST", status, body)
		}},
		{name: "AG-UI", decide: func(e *doorEnv, who, id, in string, seq int64) string {
			status, b := post(e.t, e.base+"/v1/agents/main/ag-ui", doorToken(who).Secret,
				`{"threadId":"`+id+`","runId":"r-`+who+`","messages":[],"resume":[{"interruptId":"`+in+`","status":"resolved","payload":{"approved":true}}]}`)
			if status != 200 {
				var body map[string]any
				_ = json.Unmarshal(b, &body)
				return httpAnswer(e.t, "AG-UI", status, body)
			}
			// Refusals inside a run are its RUN_ERROR, naming the code.
			for _, line := range strings.Split(string(b), "\n") {
				var ev map[string]any
				if data, ok := strings.CutPrefix(line, "data: "); ok && json.Unmarshal([]byte(data), &ev) == nil && ev["type"] == "RUN_ERROR" {
					return ev["code"].(string)
				}
			}
			return "ok"
		}},
		{name: "AI SDK chat", decide: func(e *doorEnv, who, id, in string, seq int64) string {
			body := `{"id":"` + id + `","messages":[{"id":"m1","role":"user","parts":[{"type":"text","text":"Deploy the latest build to production."}]},` +
				`{"id":"m2","role":"assistant","parts":[{"type":"tool-deploy_code","toolCallId":"c1","state":"approval-responded","approval":{"id":"` + in + `","approved":true}}]}]}`
			status, b := post(e.t, e.base+"/v1/agents/main/chat", doorToken(who).Secret, body)
			var out map[string]any
			_ = json.Unmarshal(b, &out)
			return httpAnswer(e.t, "AI SDK chat", status, out)
		}},
		{name: "MCP cairn_resume", decide: func(e *doorEnv, who, id, in string, seq int64) string {
			ctx := context.Background()
			cs, err := sdk.NewClient(&sdk.Implementation{Name: "doors", Version: "1"}, nil).Connect(ctx,
				&sdk.StreamableClientTransport{Endpoint: e.base + "/mcp", HTTPClient: &http.Client{Transport: withToken(doorToken(who).Secret)}}, nil)
			if err != nil {
				e.t.Fatal(err)
			}
			defer cs.Close()
			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "cairn_resume", Arguments: map[string]any{"session_id": id,
				"decisions": []map[string]any{{"interrupt_id": in, "action": "approve"}}}})
			if err != nil {
				e.t.Fatal(err)
			}
			if !res.IsError {
				return "ok"
			}
			// A tool error says it in words.
			text := res.Content[0].(*sdk.TextContent).Text
			for says, code := range map[string]string{"no session": "not_found", "member of sre": "not_an_approver", "separation of duties": "not_an_approver", "approvals from distinct people": "already_approved"} {
				if strings.Contains(text, says) {
					return code
				}
			}
			e.t.Errorf("MCP: %s", text)
			return text
		}},
		{name: "MCP elicitation", decide: func(e *doorEnv, who, id, in string, seq int64) string {
			// cairn_resume without decisions: the server asks the caller,
			// if they decide the call, and they approve.
			ctx := context.Background()
			asked := 0
			handler := func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
				asked++
				return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"action": "approve"}}, nil
			}
			cs, err := sdk.NewClient(&sdk.Implementation{Name: "doors", Version: "1"}, &sdk.ClientOptions{ElicitationHandler: handler}).Connect(ctx,
				&sdk.StreamableClientTransport{Endpoint: e.base + "/mcp", HTTPClient: &http.Client{Transport: withToken(doorToken(who).Secret)}}, nil)
			if err != nil {
				e.t.Fatal(err)
			}
			defer cs.Close()
			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "cairn_resume", Arguments: map[string]any{"session_id": id}})
			switch {
			case err != nil:
				e.t.Fatal(err)
			case res.IsError && strings.Contains(res.Content[0].(*sdk.TextContent).Text, "no session"):
				return "not_found"
			case asked == 0:
				return "not asked"
			}
			return "ok"
		}, answers: map[string]string{"dev": "not asked", "uma": "not asked", "ana again": "not asked"}},
		{name: "action link", decide: func(e *doorEnv, who, id, in string, seq int64) string {
			// The link acme's receiver got, followed by a person signed in.
			links := e.acme.WaitForSession(webhook.InterruptCreated, id, 10*time.Second).Data.Actions
			status, b := post(e.t, links.Approve, doorToken(who).Secret, "")
			var out map[string]any
			_ = json.Unmarshal(b, &out)
			return httpAnswer(e.t, "action link", status, out)
		}},
		{name: "library", decide: func(e *doorEnv, who, id, in string, seq int64) string {
			_, err := e.runner.Resume(context.Background(), id, seq, []cairn.Decision{{InterruptID: in, Action: cairn.ActionApprove}}, &cairn.TurnOptions{Actor: doorActor(who)})
			if err != nil {
				return cairn.ErrorCode(err)
			}
			return "ok"
		}},
	}
}

// The door table: on every door that decides, the wrong group, the
// other tenant, and the requester under separation of duties are given
// the documented answer (MCP elicitation: they are not asked) and change
// nothing in the store; the first of two
// approvers leaves the call pending with one approval; the second runs
// it once. Another tenant's session is a 404 (or, on MCP, "no session")
// exactly as one that does not exist.
func TestTheDoorTable(t *testing.T) {
	e := newDoorEnv(t)
	for _, d := range doors() {
		t.Run(d.name, func(t *testing.T) {
			e.t = t
			id, in, seq := e.pausedDeploy()
			e.decideOnDoor(d, id, in, seq, func(sess *cairn.Session, runs int32) {
				if sess.Status != cairn.StatusCompleted || e.runs.Load() != runs+1 {
					t.Fatalf("after the second approval: %s, %d runs", sess.Status, e.runs.Load()-runs)
				}
			})
		})
	}
}

// The door table again, for an approval request from uma's own code
// (POST /v1/approvals): its approvers are the deploy's, and every door
// that decides by interrupt (not the chat protocols, which speak for an
// agent of their own) holds them alike; approved, it waits for uma's
// result and runs nothing.
func TestTheDoorTableDecidesApprovalRequests(t *testing.T) {
	e := newDoorEnv(t)
	for _, d := range doors() {
		if d.name == "AG-UI" || d.name == "AI SDK chat" {
			continue
		}
		t.Run(d.name, func(t *testing.T) {
			e.t = t
			status, a := e.as("uma", "POST", "/v1/approvals", `{"tool":"rotate_keys","arguments":{"service":"billing"},"message":"Rotate billing's keys?"}`)
			if status != 201 || a["status"] != "pending" {
				t.Fatalf("uma's request: %d %v", status, a)
			}
			id := a["id"].(string)
			in := a["interrupt"].(map[string]any)["id"].(string)
			sess, err := e.runner.Session(context.Background(), id)
			if err != nil || sess.Tenant != "acme" {
				t.Fatalf("%v %+v", err, sess)
			}
			e.decideOnDoor(d, id, in, sess.Seq, func(sess *cairn.Session, runs int32) {
				_, got := e.as("uma", "GET", "/v1/approvals/"+id, "")
				if got["status"] != "approved" || sess.Status != cairn.StatusPaused || sess.Interrupts[0].Kind != cairn.KindClient || e.runs.Load() != runs {
					t.Fatalf("after the second approval: %v, session %s", got, sess.Status)
				}
			})
		})
	}
}

// decideOnDoor plays the door table on one door for the call that session
// id waits on under interrupt in: the wrong group, the other tenant and
// the requester are refused and change nothing; the first approval of
// two leaves it pending; the second decides it (then is checked).
func (e *doorEnv) decideOnDoor(d door, id, in string, seq int64, check func(sess *cairn.Session, runs int32)) {
	t := e.t
	t.Helper()
	before, runs := e.stored(id), e.runs.Load()
	for _, c := range []struct{ who, as, want string }{
		{"dev", "wrong group", "not_an_approver"},
		{"gil", "other tenant", "not_found"},
		{"uma", "requester under separation of duties", "not_an_approver"},
	} {
		want := c.want
		if a, ok := d.answers[c.who]; ok {
			want = a
		}
		if got := d.decide(e, c.who, id, in, seq); got != want {
			t.Errorf("%s (%s): %s, want %s", c.who, c.as, got, want)
		}
		if now := e.stored(id); now != before || e.runs.Load() != runs {
			t.Fatalf("%s (%s) changed the store (or ran the tool)", c.who, c.as)
		}
	}
	if got := d.decide(e, "ana", id, in, seq); got != "ok" {
		t.Fatalf("ana (right group, first of two): %s", got)
	}
	sess, err := e.runner.Session(context.Background(), id)
	if err != nil || sess.Status != cairn.StatusPaused || len(sess.Interrupts[0].Approvals) != 1 || e.runs.Load() != runs {
		t.Fatalf("after the first approval: %v %+v, %d runs", err, sess, e.runs.Load()-runs)
	}
	again := "already_approved"
	if a, ok := d.answers["ana again"]; ok {
		again = a
	}
	if got := d.decide(e, "ana", id, in, sess.Seq); got != again {
		t.Errorf("ana again: %s, want %s", got, again)
	}
	if got := d.decide(e, "bob", id, in, sess.Seq); got != "ok" {
		t.Fatalf("bob (four-eyes second approver): %s", got)
	}
	sess, _ = e.runner.Session(context.Background(), id)
	check(sess, runs)
}

// What each person sees of acme's paused deploy, on every door that
// reads: gil, of globex, gets a 404 for it (the session, its events, its
// streams) and never finds it in a listing, an inbox or the change feed;
// acme's approvers see it, and may_decide says whether they decide it;
// ops, the global admin, sees it and does not decide it (not in sre, and
// no override). Deliveries go only to acme's receiver.
func TestTheDoorTableOfWhoSees(t *testing.T) {
	e := newDoorEnv(t)
	// gil follows the change feed from before the session exists.
	feed := func(who string) <-chan string {
		req, _ := http.NewRequest("GET", e.base+"/v1/events", nil)
		req.Header.Set("Authorization", "Bearer "+doorToken(who).Secret)
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		resp, err := http.DefaultClient.Do(req.WithContext(ctx))
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s follows /v1/events: %v", who, err)
		}
		ids := make(chan string, 100)
		// The feed follows from its first comment on (the headers may come
		// before the server subscribes): wait for it.
		following := make(chan struct{})
		go func() {
			defer resp.Body.Close()
			sc := bufio.NewScanner(resp.Body)
			sc.Buffer(nil, 1<<20)
			first := true
			for sc.Scan() {
				if first && strings.HasPrefix(sc.Text(), ":") {
					first = false
					close(following)
				}
				var s map[string]any
				if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok && json.Unmarshal([]byte(data), &s) == nil && s["id"] != nil {
					ids <- s["id"].(string)
				}
			}
		}()
		select {
		case <-following:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s's change feed sent no first comment", who)
		}
		return ids
	}
	gilFeed, anaFeed := feed("gil"), feed("ana")
	id, _, _ := e.pausedDeploy()
	waitFor := func(ids <-chan string, want string) []string {
		t.Helper()
		var seen []string
		deadline := time.After(10 * time.Second)
		for {
			select {
			case got := <-ids:
				seen = append(seen, got)
				if got == want {
					return seen
				}
			case <-deadline:
				t.Fatalf("%s never came; saw %v", want, seen)
			}
		}
	}
	waitFor(anaFeed, id)
	// gil's own session in globex comes after acme's on the feed: by then
	// acme's would have come too.
	status, own := e.as("gil", "POST", "/v1/sessions", `{"agent":"main","input":"Deploy the latest build to production."}`)
	if status != 201 || own["tenant"] != "globex" {
		t.Fatalf("gil's deploy: %d %v", status, own)
	}
	for _, got := range waitFor(gilFeed, own["id"].(string)) {
		if got == id {
			t.Errorf("gil's change feed carried acme's session %s", id)
		}
	}

	for _, path := range []string{"/v1/sessions/" + id, "/v1/sessions/" + id + "/events", "/v1/sessions/" + id + "/audit", "/v1/agents/main/chat/" + id + "/stream"} {
		if status, body := e.as("gil", "GET", path, ""); status != 404 || errCode(body) != "not_found" {
			t.Errorf("gil GET %s: %d %v", path, status, body)
		}
		if status, body := e.as("gil", "GET", "/v1/sessions/no-such-session", ""); status != 404 || errCode(body) != "not_found" {
			t.Errorf("an unknown session: %d %v", status, body)
		}
	}
	req, _ := http.NewRequest("GET", e.base+"/v1/sessions/"+id+"/events", nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+doorToken("gil").Secret)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 404 {
		t.Errorf("gil's SSE of acme's session: %v %v", resp.StatusCode, err)
	} else {
		resp.Body.Close()
	}
	for who, may := range map[string]any{"ana": true, "dev": false, "uma": false, "ops": false, "gil": nil} {
		status, got := e.as(who, "GET", "/v1/sessions/"+id, "")
		_, inbox := e.as(who, "GET", "/v1/interrupts", "")
		_, list := e.as(who, "GET", "/v1/sessions?status=paused", "")
		var inInbox, inList any
		for _, it := range inbox["interrupts"].([]any) {
			if it := it.(map[string]any); it["session_id"] == id {
				inInbox = it["may_decide"]
				if it["tenant"] != "acme" {
					t.Errorf("%s's inbox: the interrupt's tenant %v", who, it["tenant"])
				}
			}
		}
		for _, s := range list["sessions"].([]any) {
			if s := s.(map[string]any); s["id"] == id {
				inList = s["tenant"]
			}
		}
		if may == nil {
			if status != 404 || inInbox != nil || inList != nil {
				t.Errorf("%s sees acme's session: %d, inbox %v, listing %v", who, status, inInbox, inList)
			}
			continue
		}
		if status != 200 || interrupts(got)[0]["may_decide"] != may || inInbox != may || inList != "acme" {
			t.Errorf("%s: %d may_decide %v, inbox %v, listing %v; want may_decide %v", who, status, interrupts(got)[0]["may_decide"], inInbox, inList, may)
		}
	}
	// Deliveries: acme's receiver hears of acme's session, with links;
	// globex's never does (its own session's, with links, it does).
	if p := e.acme.WaitForSession(webhook.InterruptCreated, id, 10*time.Second); p.Data.Tenant != "acme" || p.Data.Actions == nil {
		t.Errorf("acme's delivery: %+v", p.Data)
	}
	if p := e.globex.WaitForSession(webhook.InterruptCreated, own["id"].(string), 10*time.Second); p.Data.Tenant != "globex" || p.Data.Actions == nil {
		t.Errorf("globex's delivery: %+v", p.Data)
	}
	for _, p := range e.globex.Payloads(webhook.InterruptCreated) {
		if p.Data.SessionID == id {
			t.Errorf("globex's receiver heard of acme's session: %+v", p.Data)
		}
	}
	// /v1/me says the tenant.
	if _, me := e.as("gil", "GET", "/v1/me", ""); me["tenant"] != "globex" {
		t.Errorf("gil's /v1/me: %v", me)
	}
	if _, me := e.as("ops", "GET", "/v1/me", ""); me["all_tenants"] != true {
		t.Errorf("ops's /v1/me: %v", me)
	}
}

// A link issued to one person (a receiver configured with person) decides
// as that person: the approval records them (via action_link), and it is
// theirs, so their token cannot approve again (409 already_approved);
// uma, who asked, gets no link in her inbox (separation of duties).
func TestActionLinksIssuedToAPerson(t *testing.T) {
	e := newDoorEnv(t)
	id, in, _ := e.pausedDeploy()
	p := e.anaInbox.WaitForSession(webhook.InterruptCreated, id, 10*time.Second)
	if p.Data.Actions == nil || p.Data.Actions.IssuedTo != "ana" || fmt.Sprint(p.Data.Actions.SpeaksFor) != "[sre]" {
		t.Fatalf("ana's inbox: %+v", p.Data.Actions)
	}
	if p := e.umaInbox.WaitForSession(webhook.InterruptCreated, id, 10*time.Second); p.Data.Actions != nil {
		t.Errorf("uma, who asked, got links: %+v", p.Data.Actions)
	}
	req, _ := http.NewRequest("POST", p.Data.Actions.Approve, nil)
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("ana's link: %v %v", resp.StatusCode, err)
	}
	resp.Body.Close()
	sess, _ := e.runner.Session(context.Background(), id)
	got := sess.Interrupts[0].Approvals
	if len(got) != 1 || got[0].Actor.Name != "ana" || got[0].Actor.Subject != "ana" || got[0].Actor.Via != session.ViaActionLink || got[0].Actor.Tenant != "acme" {
		t.Fatalf("the approval through ana's link: %+v", got)
	}
	status, body := e.as("ana", "POST", "/v1/sessions/"+id+"/decisions", fmt.Sprintf(`{"seq":%d,"decisions":[{"interrupt_id":%q,"action":"approve"}]}`, sess.Seq, in))
	if status != 409 || errCode(body) != "already_approved" {
		t.Fatalf("ana's token after her link: %d %v", status, body)
	}
	status, body = e.as("bob", "POST", "/v1/sessions/"+id+"/decisions", fmt.Sprintf(`{"seq":%d,"decisions":[{"interrupt_id":%q,"action":"approve"}]}`, sess.Seq, in))
	if status != 200 || body["status"] != "completed" || e.runs.Load() != 1 {
		t.Fatalf("bob's approval: %d %v, %d runs", status, body, e.runs.Load())
	}
}
