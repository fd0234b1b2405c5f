package server_test

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/testkit/testwait"
	"github.com/cairnhq/cairn/server"
)

// A path that exists for other methods answers 405 with Allow; an unknown
// path 404; both are JSON errors.
func TestWrongMethodIs405(t *testing.T) {
	e := newEnv(t, false)
	cases := []struct{ method, path, allow string }{
		{"DELETE", "/v1/sessions", "GET, POST"},
		{"PUT", "/v1/sessions/s_1/decisions", "POST"},
		{"POST", "/v1/interrupts", "GET"},
		{"GET", "/v1/agents/main/invoke", "POST"},
	}
	for _, c := range cases {
		req, _ := http.NewRequest(c.method, e.base+c.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 405 || resp.Header.Get("Allow") != c.allow {
			t.Errorf("%s %s: %d Allow %q, want 405 Allow %q", c.method, c.path, resp.StatusCode, resp.Header.Get("Allow"), c.allow)
		}
	}
	if code, body := e.do("POST", "/v1/nothing", "{}"); code != 404 || errCode(body) != "not_found" {
		t.Fatalf("unknown path: %d %v", code, body)
	}
	if code, body := e.do("PATCH", "/v1/sessions", "{}"); code != 405 || errCode(body) != "method_not_allowed" {
		t.Fatalf("wrong method: %d %v", code, body)
	}
}

// Invalid UTF-8 in a JSON body is refused, and nothing is created.
func TestInvalidUTF8Is400(t *testing.T) {
	e := newEnv(t, false)
	body := []byte("{\"agent\":\"main\",\"input\":\"Deploy \xff\xfe now\"}")
	resp, err := http.Post(e.base+"/v1/sessions", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Fatalf("invalid UTF-8: %d, want 400", resp.StatusCode)
	}
	if _, list := e.do("GET", "/v1/sessions", ""); len(list["sessions"].([]any)) != 0 {
		t.Fatal("a refused body created a session")
	}
}

// GET /v1/sessions and /v1/interrupts page with limit and cursor: every item
// once, in order, next_cursor null at the end; a forged cursor is a 400.
func TestPagination(t *testing.T) {
	e := newEnv(t, false)
	want := map[string]bool{}
	for range 7 {
		code, s := e.do("POST", "/v1/sessions", `{"agent":"main","input":"Deploy now."}`)
		if code != 201 || s["status"] != "paused" {
			t.Fatalf("create: %d %v", code, s)
		}
		want[s["id"].(string)] = true
	}
	for _, path := range []string{"/v1/sessions", "/v1/interrupts"} {
		key := map[string]string{"/v1/sessions": "sessions", "/v1/interrupts": "interrupts"}[path]
		seen := map[string]bool{}
		pages := 0
		cursor := ""
		for {
			q := path + "?limit=3"
			if cursor != "" {
				q += "&cursor=" + cursor
			}
			code, page := e.do("GET", q, "")
			if code != 200 {
				t.Fatalf("%s: %d %v", q, code, page)
			}
			pages++
			items := page[key].([]any)
			if len(items) > 3 {
				t.Fatalf("%s: %d items on a page of 3", path, len(items))
			}
			for _, it := range items {
				m := it.(map[string]any)
				id, _ := m["session_id"].(string)
				if id == "" {
					id = m["id"].(string)
				}
				if seen[id] {
					t.Fatalf("%s: %s twice", path, id)
				}
				seen[id] = true
			}
			if page["next_cursor"] == nil {
				break
			}
			cursor = page["next_cursor"].(string)
		}
		if pages != 3 || len(seen) != len(want) {
			t.Fatalf("%s: %d pages, %d of %d items", path, pages, len(seen), len(want))
		}
	}
	for _, q := range []string{"/v1/sessions?cursor=bm9wZQ", "/v1/interrupts?limit=0", "/v1/sessions?limit=5000", "/v1/sessions?limit=x"} {
		if code, body := e.do("GET", q, ""); code != 400 || errCode(body) != "invalid_request" {
			t.Errorf("%s: %d %v, want 400", q, code, body)
		}
	}
}

func openStream(t *testing.T, ctx context.Context, base, id string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/v1/sessions/"+id+"/events", nil)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// Event streams are capped per session (429 past it, free again once one
// closes), and a stream with no event for StreamIdle ends.
func TestStreamLimits(t *testing.T) {
	e := newEnvWith(t, false, server.Options{MaxStreamsPerSession: 2, StreamIdle: 300 * time.Millisecond})
	_, s := e.do("POST", "/v1/sessions", `{"agent":"main","input":"Deploy now."}`)
	id := s["id"].(string)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	first := openStream(t, ctx, e.base, id)
	openStream(t, ctx, e.base, id)
	third := openStream(t, ctx, e.base, id)
	if first.StatusCode != 200 || third.StatusCode != 429 || third.Header.Get("Retry-After") == "" {
		t.Fatalf("streams: first %d, third %d; want 200, 429 with Retry-After", first.StatusCode, third.StatusCode)
	}
	// The first stream replays the log, then goes idle and ends by itself.
	start := time.Now()
	var last string
	sc := bufio.NewScanner(first.Body)
	for sc.Scan() {
		last = sc.Text()
		if strings.HasPrefix(last, ": idle") {
			break
		}
	}
	if !strings.HasPrefix(last, ": idle") || time.Since(start) > 5*time.Second {
		t.Fatalf("idle stream: last line %q after %s", last, time.Since(start))
	}
	for sc.Scan() {
		if sc.Text() != "" {
			t.Fatalf("the idle stream went on: %q", sc.Text())
		}
	}
	// Both earlier streams ended (idle): a new one is accepted.
	testwait.For(t, 5*time.Second, "a stream to be accepted after the others ended", func() bool {
		return openStream(t, ctx, e.base, id).StatusCode == 200
	})
}

// Body mistakes are explained in the body's terms: the field, what was
// expected and what came, the known fields and the closest one; nothing is
// created.
func TestBodyErrorsTeach(t *testing.T) {
	e := newEnv(t, false)
	cases := []struct{ path, body, want string }{
		{"/v1/sessions", `{"agent":"main","input":42}`, `input: expected a string, got a number`},
		{"/v1/sessions", `{"agent":"main","message":"hi"}`, `unknown field "message" (known: agent, input, metadata, wait)`},
		{"/v1/sessions", `{"agnet":"main","input":"hi"}`, `did you mean "agent"?`},
		{"/v1/sessions", `{"agent":"main","input":"hi","wait":"no"}`, `wait: expected true or false, got a string`},
		{"/v1/sessions", `{"agent":["main"],"input":"hi"}`, `agent: expected a string, got an array`},
		{"/v1/sessions", `{"agent":"main","input":"hi",}`, `the body is not valid JSON at byte`},
		{"/v1/sessions", `[1,2]`, `the body: expected an object, got an array`},
		{"/v1/sessions/s_x/messages", `{"txt":"hi"}`, `unknown field "txt" (known: seq, text); did you mean "text"?`},
		{"/v1/sessions/s_x/decisions", `{"seq":"3","decisions":[]}`, `seq: expected an integer, got a string`},
		{"/v1/sessions/s_x/decisions", `{"seq":3,"decisions":[{"interrupt_id":"i","actoin":"approve"}]}`, `did you mean "action"?`},
		{"/v1/sessions/s_x/cancel", `{"scope":1}`, `scope: expected a string, got a number`},
		{"/v1/agents/main/invoke", `{"continuation":"x","decisions":{}}`, `decisions: expected an array, got an object`},
	}
	for _, c := range cases {
		code, body := e.do("POST", c.path, c.body)
		msg, _ := body["error"].(map[string]any)["message"].(string)
		if code != 400 || !strings.Contains(msg, c.want) {
			t.Errorf("POST %s %s: %d %q\nwant 400 containing %q", c.path, c.body, code, msg, c.want)
		}
	}
	if _, list := e.do("GET", "/v1/sessions", ""); len(list["sessions"].([]any)) != 0 {
		t.Fatal("a refused body created a session")
	}
}

// A misspelt status or kind in a listing's query says what was meant.
func TestQueryTyposSayWhatWasMeant(t *testing.T) {
	e := newEnv(t, false)
	for path, want := range map[string]string{
		"/v1/sessions?status=pasued":           `status "pasued" is not one of running, paused, completed, failed, cancelled; did you mean "paused"?`,
		"/v1/interrupts?kind=external,aproval": `kind "aproval" is not one of approval, input, message, review, external, client (several: kind=external,client); did you mean "approval"?`,
	} {
		code, body := e.do("GET", path, "")
		if msg, _ := body["error"].(map[string]any)["message"].(string); code != 400 || msg != want {
			t.Errorf("%s: %d %q\nwant %q", path, code, msg, want)
		}
	}
}
