package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/server"
)

// rawRequest sends a request with exactly the given headers ("Host" sets
// the Host line) and returns the status and the error code of the answer.
func rawRequest(t *testing.T, method, url, body string, headers map[string]string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	for k, v := range headers {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out struct {
		Error struct{ Code, Message string }
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if out.Error.Code != "" && !strings.Contains(out.Error.Message, " ") {
		t.Errorf("%s %s: error %q has no explanation", method, url, out.Error.Code)
	}
	return resp.StatusCode, out.Error.Code
}

// The local mode (no tokens) answers only requests that name it and come
// from its own origin: a DNS-rebinding page (foreign Host), a cross-origin
// page (Origin, Sec-Fetch-Site) and a form or no-cors fetch (text/plain)
// are refused, and none of them changes anything.
func TestLocalModeRefusesOtherOrigins(t *testing.T) {
	e := newEnvWith(t, false, server.Options{AllowedHosts: []string{"cairn.internal"}, AllowedOrigins: []string{"https://app.example.org"},
		BaseURL: "https://cairn.example.org"})
	start := `{"agent":"main","input":"Deploy to production"}`
	_, paused := e.do("POST", "/v1/sessions", start)
	id := paused["id"].(string)
	decide := `{"seq":` + jsonNumber(paused["seq"]) + `,"decisions":[{"interrupt_id":"` + paused["interrupts"].([]any)[0].(map[string]any)["id"].(string) + `","action":"approve"}]}`
	jsonCT := map[string]string{"Content-Type": "application/json"}
	with := func(extra map[string]string) map[string]string {
		h := map[string]string{"Content-Type": "application/json"}
		for k, v := range extra {
			h[k] = v
		}
		return h
	}
	refused := []struct {
		name, method, path, body string
		headers                  map[string]string
		status                   int
		code                     string
	}{
		{"rebinding page reads the inbox", "GET", "/v1/interrupts", "", map[string]string{"Host": "attacker.example:8080"}, 421, "misdirected_request"},
		{"rebinding page decides", "POST", "/v1/sessions/" + id + "/decisions", decide, with(map[string]string{"Host": "attacker.example"}), 421, "misdirected_request"},
		{"rebinding page opens the page", "GET", "/", "", map[string]string{"Host": "attacker.example"}, 421, "misdirected_request"},
		{"0.0.0.0 is not loopback", "GET", "/v1/sessions", "", map[string]string{"Host": "0.0.0.0:8080"}, 421, "misdirected_request"},
		{"cross-origin fetch starts", "POST", "/v1/sessions", start, with(map[string]string{"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}), 403, "forbidden_origin"},
		{"cross-origin decision, Origin only", "POST", "/v1/sessions/" + id + "/decisions", decide, with(map[string]string{"Origin": "http://localhost:9999"}), 403, "forbidden_origin"},
		{"same-site is another origin", "POST", "/v1/sessions/" + id + "/decisions", decide, with(map[string]string{"Sec-Fetch-Site": "same-site"}), 403, "forbidden_origin"},
		{"text/plain form starts", "POST", "/v1/sessions", start, map[string]string{"Content-Type": "text/plain"}, 415, "unsupported_media_type"},
		{"form-shaped decision", "POST", "/v1/sessions/" + id + "/decisions", decide + "=", map[string]string{"Content-Type": "text/plain"}, 415, "unsupported_media_type"},
		{"no content type", "POST", "/v1/sessions/" + id + "/decisions", decide, nil, 415, "unsupported_media_type"},
		{"urlencoded cancel", "POST", "/v1/sessions/" + id + "/cancel", `{"scope":"all"}`, map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 415, "unsupported_media_type"},
		{"text/plain chat", "POST", "/v1/agents/main/chat", `{"id":"c1","messages":[]}`, map[string]string{"Content-Type": "text/plain"}, 415, "unsupported_media_type"},
		{"text/plain ag-ui", "POST", "/v1/agents/main/ag-ui", `{}`, map[string]string{"Content-Type": "text/plain"}, 415, "unsupported_media_type"},
		{"text/plain invoke", "POST", "/v1/agents/main/invoke", `{"input":"hi"}`, map[string]string{"Content-Type": "text/plain"}, 415, "unsupported_media_type"},
	}
	for _, c := range refused {
		status, code := rawRequest(t, c.method, e.base+c.path, c.body, c.headers)
		if status != c.status || code != c.code {
			t.Errorf("%s: %d %s, want %d %s", c.name, status, code, c.status, c.code)
		}
	}
	list, _, err := e.runner.SessionsPage(t.Context(), "", cairn.Page{})
	if err != nil || len(list) != 1 {
		t.Fatalf("sessions after the refused requests: %d (%v), want the one paused session", len(list), err)
	}
	if s, _ := e.runner.Session(t.Context(), id); s.Status != cairn.StatusPaused || len(e.runs("deploy_code")) != 0 {
		t.Fatalf("the refused decisions changed the session: %s, runs %v", s.Status, e.runs("deploy_code"))
	}

	accepted := []struct {
		name, method, path string
		headers            map[string]string
	}{
		{"loopback host", "GET", "/v1/interrupts", map[string]string{"Host": "127.0.0.1:8080"}},
		{"localhost", "GET", "/v1/interrupts", map[string]string{"Host": "localhost:8080"}},
		{"IPv6 loopback", "GET", "/v1/interrupts", map[string]string{"Host": "[::1]:8080"}},
		{"allowed_hosts", "GET", "/v1/interrupts", map[string]string{"Host": "Cairn.Internal"}},
		{"public_url's host", "GET", "/v1/interrupts", map[string]string{"Host": "cairn.example.org"}},
		{"health from anywhere", "GET", "/healthz", map[string]string{"Host": "10.0.0.7:8080"}},
		{"the page itself", "POST", "/v1/sessions", with(map[string]string{"Origin": e.base, "Sec-Fetch-Site": "same-origin"})},
		{"allowed_origins", "POST", "/v1/sessions", with(map[string]string{"Origin": "https://app.example.org", "Sec-Fetch-Site": "cross-site"})},
		{"a program (no Origin)", "POST", "/v1/sessions", jsonCT},
		{"JSON with charset", "POST", "/v1/sessions", map[string]string{"Content-Type": "application/json; charset=utf-8"}},
	}
	for _, c := range accepted {
		body := ""
		if c.method == "POST" {
			body = `{"agent":"main","input":"hello"}`
		}
		if status, code := rawRequest(t, c.method, e.base+c.path, body, c.headers); status >= 300 {
			t.Errorf("%s: %d %s, want it served", c.name, status, code)
		}
	}
}

// With tokens any Host is answered (the token is the boundary), and the
// Origin rule still holds.
func TestTokenModeKeepsTheOriginRule(t *testing.T) {
	e := newEnvWith(t, false, server.Options{Tokens: []server.Token{{Name: "ana", Secret: "approver-token-0123456789", Role: server.RoleAdmin}}})
	auth := map[string]string{"Authorization": "Bearer approver-token-0123456789", "Content-Type": "application/json", "Host": "cairn.example.org"}
	if status, code := rawRequest(t, "GET", e.base+"/v1/sessions", "", auth); status != 200 {
		t.Fatalf("foreign Host with a token: %d %s", status, code)
	}
	auth["Origin"] = "http://evil.example"
	if status, code := rawRequest(t, "POST", e.base+"/v1/sessions", `{"agent":"main","input":"hi"}`, auth); status != 403 || code != "forbidden_origin" {
		t.Fatalf("cross-origin start with a token: %d %s, want 403 forbidden_origin", status, code)
	}
}

func jsonNumber(v any) string { b, _ := json.Marshal(v); return string(b) }
