package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testkit/check"
	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/server"
	"github.com/cairnhq/cairn/session"
)

type noteArgs struct {
	Note string `json:"note"`
}

// Listings inline previews of long values: a page of sessions whose
// outputs and arguments are megabytes stays small, names what it cut, and
// the session itself has every value whole.
func TestListingsInlinePreviews(t *testing.T) {
	long := strings.Repeat("é", 1<<20) // 2 MiB of two-byte runes
	m := model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		last := req.Messages[len(req.Messages)-1]
		if strings.HasPrefix(last.Content, "pause") {
			args, _ := json.Marshal(noteArgs{Note: long})
			return &model.Response{Message: model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "c1", Name: "save", Arguments: string(args)}}}}, nil
		}
		return &model.Response{Message: model.Message{Role: model.RoleAssistant, Content: long}}, nil
	})
	save := cairn.NewTool(&cairn.Tool{Name: "save", Approval: cairn.Always(), Confirmation: "Save {{.note}}?"}, func(ctx context.Context, a noteArgs) (string, error) { return "ok", nil })
	r, err := cairn.NewRunner([]*cairn.Agent{{Name: "main", Model: m, Tools: []*cairn.Tool{save}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	hs := httptest.NewServer(server.New(r, nil))
	defer hs.Close()
	api := hs.URL
	done := check.NoErr(t)(r.Start(t.Context(), "main", "talk", nil))
	paused := check.NoErr(t)(r.Start(t.Context(), "main", "pause", nil))

	get := func(path string, v any) int {
		resp, err := http.Get(api + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatal(err)
		}
		return len(b)
	}
	var list struct{ Sessions []cairn.Session }
	if n := get("/v1/sessions", &list); n > 16<<10 {
		t.Fatalf("the listing is %d bytes", n)
	}
	for _, s := range list.Sessions {
		switch s.ID {
		case done.ID:
			if len(s.Output) > server.PreviewBytes+3 || !strings.HasSuffix(s.Output, "…") || len(s.Truncated) != 1 || s.Truncated[0] != "output" || !json.Valid([]byte(`"`+s.Output+`"`)) {
				t.Fatalf("completed session in the listing: %d bytes, truncated %v", len(s.Output), s.Truncated)
			}
		case paused.ID:
			in := s.Interrupts[0]
			var preview string
			if json.Unmarshal(in.Arguments, &preview) != nil || len(preview) > server.PreviewBytes+3 || strings.Join(in.Truncated, ",") != "message,arguments" {
				t.Fatalf("paused session's interrupt in the listing: %d bytes of arguments, truncated %v", len(in.Arguments), in.Truncated)
			}
		}
	}
	var inbox struct{ Interrupts []cairn.PendingInterrupt }
	if n := get("/v1/interrupts", &inbox); n > 16<<10 || len(inbox.Interrupts) != 1 || len(inbox.Interrupts[0].Truncated) != 2 {
		t.Fatalf("the inbox is %d bytes: %+v", n, inbox.Interrupts)
	}
	var whole cairn.Session
	get("/v1/sessions/"+paused.ID, &whole)
	var args noteArgs
	if err := json.Unmarshal(whole.Interrupts[0].Arguments, &args); err != nil || args.Note != long || whole.Interrupts[0].Truncated != nil {
		t.Fatalf("the session lost its arguments: %d bytes", len(args.Note))
	}
	get("/v1/sessions/"+done.ID, &whole)
	if whole.Output != long || whole.Truncated != nil {
		t.Fatalf("the session lost its output: %d bytes", len(whole.Output))
	}
}

// A session carries the start of the user's last message as its request
// (what an approver reads beside a pending call), bounded so that every
// listing and stream that reads the session's summary stays small.
func TestSessionsCarryTheStartOfTheRequest(t *testing.T) {
	long := strings.Repeat("ü", 1<<16)
	m := model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		return &model.Response{Message: model.Message{Role: model.RoleAssistant, Content: "done"}}, nil
	})
	r, err := cairn.NewRunner([]*cairn.Agent{{Name: "main", Model: m}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	hs := httptest.NewServer(server.New(r, nil))
	defer hs.Close()
	s := check.NoErr(t)(r.Start(t.Context(), "main", "first", nil))
	s = check.NoErr(t)(r.Send(t.Context(), s.ID, "Deploy the build. "+long, s.Seq, nil))
	if !strings.HasPrefix(s.Request, "Deploy the build. ü") || !strings.HasSuffix(s.Request, "…") || len(s.Request) > session.RequestBytes+len("…") || !utf8.ValidString(s.Request) {
		t.Fatalf("the session's request is %d bytes: %.40q", len(s.Request), s.Request)
	}
	resp, err := http.Get(hs.URL + "/v1/sessions")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct{ Sessions []cairn.Session }
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	if got := list.Sessions[0]; got.Request != s.Request || got.Truncated != nil {
		t.Fatalf("the listing's request: %d bytes, truncated %v", len(got.Request), got.Truncated)
	}
	short := check.NoErr(t)(r.Send(t.Context(), s.ID, "Ship it.", s.Seq, nil))
	if short.Request != "Ship it." {
		t.Fatalf("the request after the next message: %q", short.Request)
	}
}

// GET /v1/sessions?agent= lists one agent's sessions, a page at a time;
// an agent that does not exist is a 400 that says which one was meant.
func TestListOneAgentsSessions(t *testing.T) {
	m := model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		return &model.Response{Message: model.Message{Role: model.RoleAssistant, Content: "done"}}, nil
	})
	r, err := cairn.NewRunner([]*cairn.Agent{{Name: "main", Model: m}, {Name: "billing", Model: m}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	hs := httptest.NewServer(server.New(r, nil))
	defer hs.Close()
	want := map[string]bool{}
	for i := range 5 {
		agent := []string{"main", "billing"}[i%2]
		s := check.NoErr(t)(r.Start(t.Context(), agent, "hi", nil))
		if agent == "billing" {
			want[s.ID] = true
		}
	}
	get := func(path string) (int, map[string]any) {
		resp, err := http.Get(hs.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var v map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, v
	}
	seen := map[string]bool{}
	path := "/v1/sessions?agent=billing&limit=1"
	for pages := 0; ; pages++ {
		code, page := get(path)
		if code != 200 || pages > 3 {
			t.Fatalf("%s: %d %v", path, code, page)
		}
		for _, s := range page["sessions"].([]any) {
			s := s.(map[string]any)
			if s["agent"] != "billing" || seen[s["id"].(string)] {
				t.Fatalf("page %d: %v", pages, s)
			}
			seen[s["id"].(string)] = true
		}
		next, _ := page["next_cursor"].(string)
		if next == "" {
			break
		}
		path = "/v1/sessions?agent=billing&limit=1&cursor=" + next
	}
	if len(seen) != len(want) {
		t.Fatalf("billing's sessions: %v, want %v", seen, want)
	}
	code, body := get("/v1/sessions?agent=biling")
	if msg, _ := body["error"].(map[string]any)["message"].(string); code != 400 || !strings.Contains(msg, `did you mean "billing"?`) {
		t.Fatalf("a misspelt agent: %d %q", code, msg)
	}
}
