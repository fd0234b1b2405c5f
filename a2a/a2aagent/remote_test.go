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
		io.Copy(io.Discard, resp.Body)
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
