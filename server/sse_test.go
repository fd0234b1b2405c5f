package server

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testkit/testwait"
	"github.com/cairnhq/cairn/model/scripted"
)

// Ten subscribers of one session: each event is encoded once, and every
// stream carries the same bytes.
func TestSSEEncodesEachEventOnce(t *testing.T) {
	ctx := context.Background()
	deploy := cairn.NewTool(&cairn.Tool{Name: "deploy", Description: "Deploy.", Approval: cairn.Always()},
		func(ctx context.Context, _ struct{}) (string, error) { return "deployed", nil })
	runner, err := cairn.NewRunner([]*cairn.Agent{{Name: "ops", Tools: []*cairn.Tool{deploy}, Model: scripted.New(
		scripted.Reply{ToolCalls: []scripted.Call{{Name: "deploy", Arguments: `{}`}}},
		scripted.Reply{Text: "done"})}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer runner.Close()
	srv := New(runner, nil)
	api := httptest.NewServer(srv)
	defer api.Close()
	s, err := runner.Start(ctx, "ops", "ship", nil)
	if err != nil {
		t.Fatal(err)
	}
	const subscribers = 10
	bodies := make([]string, subscribers)
	var ready, done sync.WaitGroup
	for i := range subscribers {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			req, _ := http.NewRequestWithContext(sctx, "GET", api.URL+"/v1/sessions/"+s.ID+"/events", nil)
			req.Header.Set("Accept", "text/event-stream")
			resp, err := http.DefaultClient.Do(req)
			ready.Done()
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			var b strings.Builder
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				b.WriteString(sc.Text() + "\n")
				if sc.Text() == "event: turn_completed" {
					sc.Scan()
					b.WriteString(sc.Text() + "\n")
					break
				}
			}
			bodies[i] = b.String()
		}()
	}
	ready.Wait()
	if _, err := runner.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove}}, nil); err != nil {
		t.Fatal(err)
	}
	done.Wait()
	for i, b := range bodies {
		if b != bodies[0] || strings.Count(b, "\nevent: ") != 10 {
			t.Fatalf("stream %d:\n%s\nstream 0:\n%s", i, b, bodies[0])
		}
	}
	if n := srv.sse.encoded.Load(); n != 10 {
		t.Fatalf("%d encodings for 10 events and %d subscribers, want 10", n, subscribers)
	}
}

// flushCounter is a ResponseWriter that counts frames and flushes. Its
// first frame is slow, so that whatever follows queues up meanwhile.
type flushCounter struct {
	mu              sync.Mutex
	header          http.Header
	body            strings.Builder
	frames, flushes int
	slowFirstFrame  time.Duration
}

func (c *flushCounter) Header() http.Header { return c.header }
func (c *flushCounter) WriteHeader(int)     {}
func (c *flushCounter) Write(b []byte) (int, error) {
	c.mu.Lock()
	first := c.frames == 0
	c.frames++
	c.body.Write(b)
	c.mu.Unlock()
	if first {
		time.Sleep(c.slowFirstFrame) // elapsed time: a client slow to take the first frame
	}
	return len(b), nil
}
func (c *flushCounter) Flush() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.flushes++
}

// A stream that finds several events waiting writes them all and flushes
// once they are drained, not once per event.
func TestSSECoalescesFlushes(t *testing.T) {
	ctx := context.Background()
	lookup := cairn.NewTool(&cairn.Tool{Name: "lookup", Description: "Look up."},
		func(ctx context.Context, _ struct{}) (string, error) { return "found", nil })
	runner, err := cairn.NewRunner([]*cairn.Agent{{Name: "ops", Tools: []*cairn.Tool{lookup}, Model: scripted.New(
		scripted.Reply{ToolCalls: []scripted.Call{{Name: "lookup", Arguments: `{}`}}},
		scripted.Reply{Text: "done"})}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer runner.Close()
	srv := New(runner, nil)
	s, err := runner.Start(ctx, "ops", "look", nil)
	if err != nil || s.Status != cairn.StatusCompleted {
		t.Fatal(s, err)
	}
	// The whole log (7 events) reaches the stream's channel at once while
	// its first frame is written.
	w := &flushCounter{header: http.Header{}, slowFirstFrame: 500 * time.Millisecond}
	sctx, cancel := context.WithCancel(ctx)
	req := httptest.NewRequestWithContext(sctx, "GET", "http://127.0.0.1/v1/sessions/"+s.ID+"/events", nil)
	req.Header.Set("Accept", "text/event-stream")
	served := make(chan struct{})
	go func() { defer close(served); srv.ServeHTTP(w, req) }()
	testwait.For(t, 10*time.Second, "turn_completed in the stream", func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return strings.Contains(w.body.String(), "event: turn_completed")
	})
	cancel()
	<-served
	// One flush opens the stream (its headers); the 7 frames need one more.
	if w.frames != 7 || w.flushes > 2 {
		t.Fatalf("%d frames, %d flushes; want 7 frames and at most 2 flushes", w.frames, w.flushes)
	}
}

// BenchmarkSSEFanout: one turn (a message in, the answer out: 3 events) of
// a session that N clients follow over SSE; an op ends when every client
// has the turn's last event. Compare N=1 with N=100 (issue 15: ≤ 5×).
func BenchmarkSSEFanout(b *testing.B) {
	for _, n := range []int{1, 10, 100, 1000} {
		b.Run(fmt.Sprintf("subscribers=%d", n), func(b *testing.B) {
			ctx := context.Background()
			replies := make([]scripted.Reply, 1)
			replies[0] = scripted.Reply{Text: "ok"}
			runner, err := cairn.NewRunner([]*cairn.Agent{{Name: "chat", Model: scripted.New(replies...)}}, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer runner.Close()
			api := httptest.NewServer(New(runner, &Options{MaxStreamsPerSession: n, MaxStreams: n}))
			defer api.Close()
			s, err := runner.Start(ctx, "chat", "hi", nil)
			if err != nil {
				b.Fatal(err)
			}
			seen := make(chan struct{}, n*4)
			sctx, cancel := context.WithCancel(ctx)
			defer cancel()
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n, MaxConnsPerHost: 0}}
			for range n {
				req, _ := http.NewRequestWithContext(sctx, "GET", fmt.Sprintf("%s/v1/sessions/%s/events?after=%d", api.URL, s.ID, s.Seq), nil)
				req.Header.Set("Accept", "text/event-stream")
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				go func() {
					defer resp.Body.Close()
					sc := bufio.NewScanner(resp.Body)
					for sc.Scan() {
						if sc.Text() == "event: turn_completed" {
							seen <- struct{}{}
						}
					}
				}()
			}
			b.ResetTimer()
			for range b.N {
				if _, err := runner.Send(ctx, s.ID, "again", 0, nil); err != nil {
					b.Fatal(err)
				}
				for range n {
					<-seen
				}
			}
		})
	}
}
