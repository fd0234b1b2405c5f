package server_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/model/scripted"
	"github.com/cairnhq/cairn/server"
)

func feedServer(t *testing.T) string {
	t.Helper()
	deploy := cairn.NewTool(&cairn.Tool{Name: "deploy", Description: "Deploy.", Approval: cairn.Always(), Confirmation: "Deploy to {{.env}}?"},
		func(ctx context.Context, a struct {
			Env string `json:"env" enum:"staging,production"`
		}) (string, error) {
			return "deployed", nil
		})
	refund := cairn.NewTool(&cairn.Tool{Name: "refund", Description: "Refund.", Approval: cairn.ApprovalIf(func(a struct{ Amount int }) bool { return a.Amount > 100 }).Describe("amount over 100")}, func(ctx context.Context, a struct{ Amount int }) (string, error) { return "ok", nil })
	lookup := cairn.NewTool(&cairn.Tool{Name: "lookup", Description: "Look up.", Approval: cairn.ApprovalIf(func(struct{}) bool { return false })},
		func(ctx context.Context, a struct{}) (string, error) { return "ok", nil })
	m := scripted.New(scripted.Reply{ToolCalls: []scripted.Call{{Name: "deploy", Arguments: `{"env":"production"}`}}}, scripted.Reply{Text: "{{.LastResult}}"})
	r, err := cairn.NewRunner([]*cairn.Agent{
		{Name: "main", Model: m, Tools: []*cairn.Tool{deploy, refund, lookup,
			cairn.InteractiveAgentTool("helper", nil), cairn.Handoff("helper", &cairn.Tool{Approval: cairn.Always()})}},
		{Name: "helper", Model: m},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	srv := httptest.NewServer(server.New(r, &server.Options{Tokens: []server.Token{
		{Name: "ana", Secret: "approver-token-0123456789", Role: server.RoleApprover},
		{Name: "uma", Secret: "user-token-uma-0123456789", Role: server.RoleUser},
		{Name: "ulf", Secret: "user-token-ulf-0123456789", Role: server.RoleUser},
	}}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func authGet(t *testing.T, ctx context.Context, url, token string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func authPost(t *testing.T, url, token, body string) map[string]any {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// sessionEvents reads "session" events of an SSE feed into a channel.
func sessionEvents(resp *http.Response) <-chan map[string]any {
	out := make(chan map[string]any, 16)
	go func() {
		defer close(out)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		event := ""
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: ") && event == "session":
				var s map[string]any
				if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &s); err != nil {
					s = map[string]any{"unreadable": line} // the test waiting on it fails, naming it
				}
				out <- s
			case strings.HasPrefix(line, "data: ") && event == "resync":
				out <- map[string]any{"resync": true} // changes were missed: read again
			}
		}
	}()
	return out
}

// GET /v1/events follows every session the token may see: an approver
// sees everyone's pauses, a user only their own.
func TestCrossSessionFeed(t *testing.T) {
	base := feedServer(t)
	// The budget covers the two turns below too: on a loaded CI machine
	// (every package's race tests at once) 15 s was once not enough.
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	approverFeed := sessionEvents(authGet(t, ctx, base+"/v1/events", "approver-token-0123456789"))
	umaFeed := sessionEvents(authGet(t, ctx, base+"/v1/events", "user-token-uma-0123456789"))

	ulfs := authPost(t, base+"/v1/sessions", "user-token-ulf-0123456789", `{"agent":"main","input":"deploy"}`)
	umas := authPost(t, base+"/v1/sessions", "user-token-uma-0123456789", `{"agent":"main","input":"deploy"}`)
	// The two sessions run at once, so either may pause first: what a
	// feed shows is kept, and a wait looks there before it reads on.
	seen := map[<-chan map[string]any]map[string]map[string]any{approverFeed: {}, umaFeed: {}}
	resynced := map[<-chan map[string]any]bool{}
	read := func(id, token string) map[string]any {
		resp := authGet(t, ctx, base+"/v1/sessions/"+id, token)
		defer resp.Body.Close()
		var s map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	waitFor := func(feed <-chan map[string]any, id, token string) map[string]any {
		t.Helper()
		if s, ok := seen[feed][id]; ok {
			return s
		}
		if resynced[feed] {
			// The feed fell behind once (a loaded machine): what it missed
			// is read back, as a client does.
			if s := read(id, token); s["status"] == "paused" {
				return s
			}
		}
		for {
			select {
			case s := <-feed:
				if s["resync"] == true {
					resynced[feed] = true
					s = read(id, token)
				}
				if s["owner"] != nil && feed == umaFeed && s["owner"] != "uma" {
					t.Fatalf("uma saw %v's session", s["owner"])
				}
				if s["status"] == "paused" {
					seen[feed][s["id"].(string)] = s
				}
				if s["id"] == id && s["status"] == "paused" {
					return s
				}
			case <-ctx.Done():
				t.Fatalf("no paused %s on the feed", id)
			}
		}
	}
	s := waitFor(approverFeed, ulfs["id"].(string), "approver-token-0123456789")
	if in := s["interrupts"].([]any)[0].(map[string]any); in["message"] != "Deploy to production?" {
		t.Fatalf("interrupt: %v", in)
	}
	waitFor(approverFeed, umas["id"].(string), "approver-token-0123456789")
	waitFor(umaFeed, umas["id"].(string), "user-token-uma-0123456789")
}

// GET /v1/agents describes tools: schema, kind, and when they ask.
func TestAgentsEndpoint(t *testing.T) {
	base := feedServer(t)
	resp := authGet(t, context.Background(), base+"/v1/agents", "user-token-uma-0123456789")
	defer resp.Body.Close()
	var body struct {
		Agents []cairn.AgentInfo `json:"agents"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || len(body.Agents) != 2 || body.Agents[0].Name != "main" {
		t.Fatalf("%v %+v", err, body)
	}
	got := map[string]string{}
	for _, tl := range body.Agents[0].Tools {
		got[tl.Name] = tl.Kind + "/" + tl.Approval
	}
	want := map[string]string{"deploy": "function/always", "refund": "function/amount over 100", "lookup": "function/policy",
		"helper": "interactive_agent/never", "transfer_to_helper": "handoff/always"}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s: %s, want %s", name, got[name], w)
		}
	}
	if !strings.Contains(string(body.Agents[0].Tools[0].Parameters), `"enum":["staging","production"]`) {
		t.Errorf("deploy's schema: %s", body.Agents[0].Tools[0].Parameters)
	}
}

// Large listings are gzipped for clients that accept it, and only then.
func TestListingsAreCompressed(t *testing.T) {
	base := feedServer(t)
	for range 40 {
		authPost(t, base+"/v1/sessions", "approver-token-0123456789", `{"agent":"main","input":"deploy"}`)
	}
	get := func(encoding string) (*http.Response, []byte) {
		req, _ := http.NewRequest("GET", base+"/v1/sessions?status=paused", nil)
		req.Header.Set("Authorization", "Bearer approver-token-0123456789")
		req.Header.Set("Accept-Encoding", encoding)
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	plain, raw := get("identity")
	zipped, packed := get("gzip, deflate")
	if plain.Header.Get("Content-Encoding") != "" || zipped.Header.Get("Content-Encoding") != "gzip" || len(packed) >= len(raw)/4 {
		t.Fatalf("plain %q (%d bytes), gzip %q (%d bytes)", plain.Header.Get("Content-Encoding"), len(raw), zipped.Header.Get("Content-Encoding"), len(packed))
	}
	zr, err := gzip.NewReader(bytes.NewReader(packed))
	if err != nil {
		t.Fatal(err)
	}
	unpacked, _ := io.ReadAll(zr)
	if !bytes.Equal(unpacked, raw) {
		t.Fatal("the gzipped listing differs from the plain one")
	}
}
