package local_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/model/scripted"
	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/store"
)

// echoFirstStore orders what a real store leaves to chance. Its change feed
// carries each commit to the runner before Append returns, as SQLite's and
// the memory store's feeds may (they publish when the commit is durable, on
// the writer's goroutine, racing the committer): the feed is unbuffered and
// each change is sent twice, so the second send returns only once the
// runner has handled the first. And while held, its reads of the events
// after a seq (the subscribers' worker reading what they lack) wait: a
// subscriber gets only what a commit or a delta hands it.
type echoFirstStore struct {
	store.Store
	mu     sync.Mutex
	feed   chan store.Change
	closed bool
	held   chan struct{} // nil: reads go through; else closed when they may
}

func (s *echoFirstStore) Watch(ctx context.Context) (<-chan store.Change, error) {
	ch := make(chan store.Change)
	s.mu.Lock()
	s.feed = ch
	s.mu.Unlock()
	context.AfterFunc(ctx, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.closed = true
		close(ch)
	})
	return ch, nil
}

func (s *echoFirstStore) Append(ctx context.Context, head store.Head, expected int64, events []session.Event) error {
	if err := s.Store.Append(ctx, head, expected, events); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.feed != nil && !s.closed {
		c := store.Change{SessionID: head.ID, Seq: head.Seq}
		s.feed <- c
		s.feed <- c // returns once the runner has handled the first
	}
	return nil
}

func (s *echoFirstStore) Events(ctx context.Context, id string, after int64) ([]session.Event, error) {
	s.mu.Lock()
	held := s.held
	s.mu.Unlock()
	if held != nil && after > 0 {
		select {
		case <-held:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return s.Store.Events(ctx, id, after)
}

func (s *echoFirstStore) hold() {
	s.mu.Lock()
	s.held = make(chan struct{})
	s.mu.Unlock()
}

func (s *echoFirstStore) release() {
	s.mu.Lock()
	if s.held != nil {
		close(s.held)
		s.held = nil
	}
	s.mu.Unlock()
}

// A subscriber that has read its backlog gets every event and every text
// delta of the turn a decision starts, even when the store's feed echoes
// each commit before the runner hands the commit to the subscribers. The
// echo marked the caught-up subscriber behind; the commit's events then
// skipped it (left to the store reader) and the turn's deltas, not stored,
// were dropped: TestEventsListAndSSE lost them about once in 20 runs under
// load, and streams over HTTP in 0.03–14 % of turns.
func TestCaughtUpSubscriberGetsDeltasWhenTheFeedEchoesFirst(t *testing.T) {
	ctx := context.Background()
	st := &echoFirstStore{Store: store.NewMemory()}
	t.Cleanup(st.release)
	var runs counter
	m := &scripted.Model{Replies: deleteScript().Replies, Stream: true}
	r := runnerFor(t, []*cairn.Agent{{Name: "main", Model: m, Tools: []*cairn.Tool{deleteTool(&runs)}}}, &cairn.RunnerOptions{Store: st})
	s, err := r.Start(ctx, "main", "Delete test.txt", nil)
	if err != nil || s.Status != cairn.StatusPaused {
		t.Fatalf("start: %v %v", s, err)
	}
	fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	next := puller(t, r.Follow(fctx, s.ID, 0))
	for caughtUp := false; !caughtUp; {
		caughtUp = next().Type == session.EventTurnPaused
	}

	st.hold() // from here the subscriber gets only what the turn hands it
	s, err = r.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove}}, nil)
	if err != nil || s.Status != cairn.StatusCompleted {
		t.Fatalf("resume: %v %v", s, err)
	}
	st.release() // the subscriber's worker may read the store again
	var types []string
	var text strings.Builder
	for done := false; !done; {
		ev := next()
		done = ev.Type == session.EventTurnCompleted
		if ev.Type == cairn.EventModelDelta {
			text.WriteString(string(ev.Data))
			if len(types) > 0 && types[len(types)-1] == string(ev.Type) {
				continue
			}
		}
		types = append(types, string(ev.Type))
	}
	want := "decision tool_started tool_result model_delta model_response turn_completed"
	if got := strings.Join(types, " "); got != want {
		t.Fatalf("live events: %s, want %s", got, want)
	}
	if got := text.String(); got != `{"text":"Result: "}{"text":"Deleted "}{"text":"test.txt"}` {
		t.Fatalf("deltas: %s", got)
	}
}
