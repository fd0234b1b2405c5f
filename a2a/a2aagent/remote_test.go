package a2aagent_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/a2a/a2aagent"
	"github.com/cairnhq/cairn/a2a/a2aserver"
	"github.com/cairnhq/cairn/model/scripted"
	"github.com/cairnhq/cairn/store/sqlite"
)

// bookingServer serves, over A2A, a Cairn agent "booking" whose tool asks
// the user for a date; it counts the tool's runs with an answer and the
// A2A requests it gets.
type bookingServer struct {
	url              string
	answered, posted atomic.Int32
}

func newBookingServer(t *testing.T) *bookingServer {
	t.Helper()
	b := &bookingServer{}
	ask := cairn.NewTool(&cairn.Tool{Name: "ask_date", Description: "Ask the user for a date."}, func(ctx context.Context, a struct{}) (string, error) {
		date, err := cairn.Ask(ctx, "Which date?")
		if err != nil {
			return "", err
		}
		b.answered.Add(1)
		return "table booked for " + date, nil
	})
	m := scripted.New(scripted.Reply{ToolCalls: []scripted.Call{{Name: "ask_date", Arguments: `{}`}}}, scripted.Reply{Text: "{{.LastResult}}"})
	r, err := cairn.NewRunner([]*cairn.Agent{{Name: "booking", Model: m, Tools: []*cairn.Tool{ask}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	h, err := a2aserver.New(r, "booking", nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodPost {
			b.posted.Add(1)
		}
		h.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	b.url = srv.URL
	return b
}

// caller is a runner on the SQLite file at path whose agent "main" calls
// the remote agent at url as its tool "partner".
func caller(t *testing.T, path, url string) *cairn.Runner {
	t.Helper()
	partner, err := a2aagent.Tool(a2aagent.Options{Name: "partner", URL: url, Attempts: 2})
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	m := scripted.New(scripted.Reply{ToolCalls: []scripted.Call{{Name: "partner", Arguments: `{"input":"book a table"}`}}}, scripted.Reply{Text: "partner: {{.LastResult}}"})
	r, err := cairn.NewRunner([]*cairn.Agent{{Name: "main", Model: m, Tools: []*cairn.Tool{partner}}}, &cairn.RunnerOptions{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// A remote Cairn agent's question becomes an interrupt of the calling
// session, with the remote task and the path through the remote agent;
// answered on another runner of the store, it reaches the remote task
// once, and the remote's answer is the call's result.
func TestRemoteQuestionBecomesAnInterrupt(t *testing.T) {
	ctx := context.Background()
	booking := newBookingServer(t)
	path := filepath.Join(t.TempDir(), "cairn.db")
	first := caller(t, path, booking.url)

	s, err := first.Start(ctx, "main", "book dinner", nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != cairn.StatusPaused || len(s.Interrupts) != 1 {
		t.Fatalf("the caller: %s, %d interrupts", s.Status, len(s.Interrupts))
	}
	in := s.Interrupts[0]
	if in.Kind != cairn.KindInput || in.Question != "Which date?" || in.Remote == nil || in.Remote.URL != booking.url || in.Remote.TaskID == "" {
		t.Fatalf("the interrupt: %+v", in)
	}
	if got := pathOf(in); got != "main/partner>booking/ask_date" {
		t.Fatalf("the path %s does not go through the remote agent", got)
	}
	pending, err := first.PendingInterrupts(ctx)
	if err != nil || len(pending) != 1 || pending[0].Remote == nil {
		t.Fatalf("the inbox: %v %+v", err, pending)
	}

	// Another process of the store takes the answer.
	second := caller(t, path, booking.url)
	posted := booking.posted.Load()
	s, err = second.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: in.ID, Action: cairn.ActionAnswer, Text: "May 3"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != cairn.StatusCompleted || s.Output != "partner: table booked for May 3" {
		t.Fatalf("after the answer: %s %q", s.Status, s.Output)
	}
	if n := booking.answered.Load(); n != 1 {
		t.Fatalf("the remote tool ran %d times with the answer, want once", n)
	}
	if n := booking.posted.Load() - posted; n < 2 {
		t.Fatalf("%d requests after the answer: want the task read and the answer sent", n)
	}
	if _, err := second.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: in.ID, Action: cairn.ActionAnswer, Text: "May 4"}}, nil); err == nil {
		t.Fatal("a second answer was taken")
	}
	if n := booking.answered.Load(); n != 1 {
		t.Fatalf("the remote tool ran %d times, want once", n)
	}
}

// An answer whose reply is lost (the connection drops after the remote
// took it) is not sent again: the call reads the task back, sees it moved
// on, and goes on with it.
func TestAnswerWhoseReplyIsLostIsNotSentAgain(t *testing.T) {
	ctx := context.Background()
	booking := newBookingServer(t)
	var answers atomic.Int32
	drop := &dropOnce{match: `"May 3"`, sent: &answers}
	partner, err := a2aagent.Tool(a2aagent.Options{Name: "partner", URL: booking.url, HTTPClient: &http.Client{Transport: drop}, Backoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	m := scripted.New(scripted.Reply{ToolCalls: []scripted.Call{{Name: "partner", Arguments: `{"input":"book a table"}`}}}, scripted.Reply{Text: "partner: {{.LastResult}}"})
	r, err := cairn.NewRunner([]*cairn.Agent{{Name: "main", Model: m, Tools: []*cairn.Tool{partner}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	s, err := r.Start(ctx, "main", "book dinner", nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err = r.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionAnswer, Text: "May 3"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !drop.dropped.Load() {
		t.Fatal("the answer's reply was not dropped: the test tests nothing")
	}
	if s.Status != cairn.StatusCompleted || s.Output != "partner: table booked for May 3" {
		t.Fatalf("after a lost reply: %s %q", s.Status, s.Output)
	}
	if n := answers.Load(); n != 1 {
		t.Fatalf("the answer was sent %d times, want once", n)
	}
	if n := booking.answered.Load(); n != 1 {
		t.Fatalf("the remote tool ran %d times with the answer, want once", n)
	}
}

// dropOnce passes requests on, counting those whose body holds match; the
// first such one reaches the server but its reply is lost.
type dropOnce struct {
	match   string
	sent    *atomic.Int32
	dropped atomic.Bool
}

func (d *dropOnce) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		body, _ = io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil || !bytes.Contains(body, []byte(d.match)) {
		return resp, err
	}
	d.sent.Add(1)
	if d.dropped.CompareAndSwap(false, true) {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return nil, errors.New("connection reset by peer")
	}
	return resp, nil
}

func pathOf(in cairn.Interrupt) string {
	var steps []string
	for _, p := range in.Path {
		steps = append(steps, p.Agent+"/"+p.Tool)
	}
	return strings.Join(steps, ">")
}

func TestRemoteDownIsAnErrorTheModelReads(t *testing.T) {
	ctx := context.Background()
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there any more
	r := caller(t, filepath.Join(t.TempDir(), "cairn.db"), url)
	s, err := r.Start(ctx, "main", "book dinner", nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != cairn.StatusCompleted || !strings.Contains(s.Output, "remote agent partner") || !strings.Contains(s.Output, "agent card") {
		t.Fatalf("a remote that is down: %s %q", s.Status, s.Output)
	}
}

// opsServer serves over A2A a Cairn agent "ops" whose deploy needs
// approval; it counts the deploys.
func opsServer(t *testing.T) (string, *atomic.Int32) {
	t.Helper()
	var deploys atomic.Int32
	deploy := cairn.NewTool(&cairn.Tool{Name: "deploy", Description: "Deploy.", Approval: cairn.Always()},
		func(ctx context.Context, a struct {
			Service string `json:"service"`
		}) (string, error) {
			deploys.Add(1)
			return "deployed " + a.Service, nil
		})
	m := scripted.New(scripted.Reply{ToolCalls: []scripted.Call{{Name: "deploy", Arguments: `{"service":"web"}`}}}, scripted.Reply{Text: "ops: {{.LastResult}}"})
	r, err := cairn.NewRunner([]*cairn.Agent{{Name: "ops", Model: m, Tools: []*cairn.Tool{deploy}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	h, err := a2aserver.New(r, "ops", nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL, &deploys
}

// A remote Cairn agent's approval is an approval of the calling session
// (approvers decide it), with the path through both agents; approved
// there, the remote tool runs once; rejected, it never runs.
func TestRemoteApprovalIsAnApproval(t *testing.T) {
	ctx := context.Background()
	for _, action := range []cairn.Action{cairn.ActionApprove, cairn.ActionReject} {
		t.Run(string(action), func(t *testing.T) {
			url, deploys := opsServer(t)
			r := caller(t, filepath.Join(t.TempDir(), "cairn.db"), url)
			s, err := r.Start(ctx, "main", "ship web", nil)
			if err != nil {
				t.Fatal(err)
			}
			if s.Status != cairn.StatusPaused || len(s.Interrupts) != 1 {
				t.Fatalf("the caller: %s %+v", s.Status, s.Interrupts)
			}
			in := s.Interrupts[0]
			if in.Kind != cairn.KindApproval || !strings.Contains(in.Ask().Text, "deploy") || in.Remote == nil || pathOf(in) != "main/partner>ops/deploy" {
				t.Fatalf("the interrupt: kind %s, ask %q, remote %+v, path %s", in.Kind, in.Ask().Text, in.Remote, pathOf(in))
			}
			// Who may decide is the caller's decision point: a user may not.
			if _, err := r.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: in.ID, Action: action}}, &cairn.TurnOptions{Actor: cairn.Actor{Name: "uma", Role: "user", Via: cairn.ViaToken}}); err == nil {
				t.Fatal("a user decided a remote approval")
			}
			s, err = r.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: in.ID, Action: action, Reason: "not now"}}, &cairn.TurnOptions{Actor: cairn.Actor{Name: "ada", Role: "approver", Via: cairn.ViaToken}})
			if err != nil {
				t.Fatal(err)
			}
			want, runs := "partner: ops: deployed web", int32(1)
			if action == cairn.ActionReject {
				want, runs = "partner: ops: ", 0
			}
			if s.Status != cairn.StatusCompleted || !strings.HasPrefix(s.Output, want) || deploys.Load() != runs {
				t.Fatalf("after %s: %s %q, %d deploys", action, s.Status, s.Output, deploys.Load())
			}
		})
	}
}

// A remote whose answer is larger than the cap fails the call with an
// error the model reads; nothing of it is kept.
func TestRemoteAnswerIsBounded(t *testing.T) {
	ctx := context.Background()
	var card atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodGet && !card.Load() {
			card.Store(true)
			_, _ = io.WriteString(w, `{"name":"big","supportedInterfaces":[{"url":"http://`+req.Host+`/","protocolBinding":"JSONRPC","protocolVersion":"1.0"}],"capabilities":{},"defaultInputModes":[],"defaultOutputModes":[],"description":"","skills":[],"version":"1"}`)
			return
		}
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"task":{"id":"t","contextId":"c","status":{"state":"TASK_STATE_COMPLETED"},"artifacts":[{"artifactId":"a","parts":[{"text":"`)
		chunk := strings.Repeat("x", 1<<20)
		for range 5 {
			_, _ = io.WriteString(w, chunk)
		}
		_, _ = io.WriteString(w, `"}]}]}}}`)
	}))
	defer srv.Close()
	r := caller(t, filepath.Join(t.TempDir(), "cairn.db"), srv.URL)
	s, err := r.Start(ctx, "main", "go", nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != cairn.StatusCompleted || !strings.Contains(s.Output, "larger than") || len(s.Output) > 4096 {
		t.Fatalf("an answer past the cap: %s %.300q", s.Status, s.Output)
	}
}
