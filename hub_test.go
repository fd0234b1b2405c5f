package cairn

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/store"
)

// echoStore runs during in the middle of each Events read: the change feed
// echoing a commit while the hub's worker reads the backlog.
type echoStore struct {
	store.Store
	during func()
}

func (e echoStore) Events(ctx context.Context, id string, after int64) ([]session.Event, error) {
	evs, err := e.Store.Events(ctx, id, after)
	e.during()
	return evs, err
}

// A subscriber served its backlog is up to date even when the feed's echo
// of a commit it already has arrives during the read: the next text delta
// reaches it (it was dropped while the subscriber was wrongly kept behind).
func TestCaughtUpSubscriberGetsDeltas(t *testing.T) {
	ctx := context.Background()
	mem := store.NewMemory()
	now := time.Now()
	evs := []session.Event{{Seq: 1, Type: "session_started", Time: now, Data: []byte(`{}`)},
		{Seq: 2, Type: "user_message", Time: now, Data: []byte(`{}`)},
		{Seq: 3, Type: "turn_paused", Time: now, Data: []byte(`{}`)}}
	if err := mem.Append(ctx, store.Head{ID: "s1", Seq: 3, Status: "paused", CreatedAt: now, UpdatedAt: now, Summary: []byte(`{}`)}, 0, evs); err != nil {
		t.Fatal(err)
	}
	h := &hub{}
	h.store = echoStore{Store: mem, during: func() { h.changed(store.Change{SessionID: "s1", Seq: 3}) }}
	ch, cancel := h.subscribe("s1", 0)
	defer cancel()
	for h.catchUp(ctx) {
		if len(ch) == 3 {
			break // one read delivered the backlog; the echo asks for another
		}
	}
	for want := int64(1); want <= 3; want++ {
		if ev := <-ch; ev.Seq != want {
			t.Fatalf("event %d, want %d", ev.Seq, want)
		}
	}
	h.delta("s1", 3, true, Event{Type: EventModelDelta, Data: []byte(`{"text":"The"}`)})
	select {
	case ev := <-ch:
		if ev.Type != EventModelDelta {
			t.Fatalf("got %s, want the delta", ev.Type)
		}
	default:
		t.Fatal("the delta was dropped: the caught-up subscriber was still marked behind")
	}
}

// appendEvents records events from..to (inclusive) of session s1 in m.
func appendEvents(t *testing.T, m *store.Memory, from, to int64) []Event {
	t.Helper()
	now := time.Now()
	var evs []Event
	for seq := from; seq <= to; seq++ {
		evs = append(evs, session.Event{Seq: seq, Type: "tool_result", Time: now, Data: []byte(`{}`)})
	}
	if err := m.Append(context.Background(), store.Head{ID: "s1", Seq: to, Status: "running", CreatedAt: now, UpdatedAt: now, Summary: []byte(`{}`)}, from-1, evs); err != nil {
		t.Fatal(err)
	}
	return evs
}

// caughtUp returns a hub on m with one subscriber of s1 served its backlog.
func caughtUp(t *testing.T, m *store.Memory) (*hub, <-chan Event) {
	t.Helper()
	h := &hub{store: m}
	ch, cancel := h.subscribe("s1", 0)
	t.Cleanup(cancel)
	for h.catchUp(context.Background()) {
	}
	head, err := m.Head(context.Background(), "s1")
	if err != nil {
		t.Fatal(err)
	}
	for want := int64(1); want <= head.Seq; want++ {
		if ev := <-ch; ev.Seq != want {
			t.Fatalf("backlog: event %d, want %d", ev.Seq, want)
		}
	}
	return h, ch
}

func textDelta(i int) Event {
	return Event{Type: EventModelDelta, Data: []byte(fmt.Sprintf(`{"text":"%d "}`, i))}
}

// The store's feed may echo a commit of this process before the committer
// hands it to the hub: the commit still reaches the caught-up subscriber at
// once (not only through a store read), and so do the deltas after it.
func TestCommitReachesSubscriberTheEchoMarkedBehind(t *testing.T) {
	m := store.NewMemory()
	appendEvents(t, m, 1, 3)
	h, ch := caughtUp(t, m)
	evs := appendEvents(t, m, 4, 5)
	h.changed(store.Change{SessionID: "s1", Seq: 5}) // the echo first
	h.published("s1", evs)
	h.delta("s1", 5, true, textDelta(0))
	for _, want := range []int64{4, 5, 0} {
		select {
		case ev := <-ch:
			if ev.Seq != want {
				t.Fatalf("got seq %d (%s), want %d", ev.Seq, ev.Type, want)
			}
		default:
			t.Fatalf("seq %d did not arrive without a store read", want)
		}
	}
}

// A delta whose events a subscriber has not been sent yet waits for them:
// a subscriber still reading its backlog gets the turn's deltas after it,
// in their place, not before it and not never.
func TestDeltasWaitForTheirEvents(t *testing.T) {
	m := store.NewMemory()
	appendEvents(t, m, 1, 3)
	h := &hub{store: m}
	ch, cancel := h.subscribe("s1", 0)
	defer cancel()
	h.delta("s1", 3, true, textDelta(0)) // the backlog is not read yet
	h.delta("s1", 3, false, textDelta(1))
	if len(ch) != 0 {
		t.Fatal("a delta went out before the events it follows")
	}
	for h.catchUp(context.Background()) {
	}
	var got []string
	for len(ch) > 0 {
		ev := <-ch
		got = append(got, fmt.Sprintf("%d:%s", ev.Seq, ev.Data))
	}
	want := `1:{} 2:{} 3:{} 0:{"text":"0 "} 0:{"text":"1 "}`
	if strings.Join(got, " ") != want {
		t.Fatalf("got %s\nwant %s", strings.Join(got, " "), want)
	}
}

// A subscriber that cannot take a reply's deltas as fast as they come gets
// as many as fit, then a model_deltas_skipped marker and none of the rest of
// that reply: what it streamed is a beginning of the text, and the marker
// comes before the reply's model_response. Its memory stays bounded, and
// the next reply streams again once it has caught up.
func TestSlowSubscriberGetsAMarker(t *testing.T) {
	m := store.NewMemory()
	appendEvents(t, m, 1, 3)
	h, ch := caughtUp(t, m)
	const n = subscriberBuffer + maxHeldDeltas + 100
	for i := range n {
		h.delta("s1", 3, i == 0, textDelta(i))
		h.mu.Lock()
		for sub := range h.subs["s1"] {
			if len(sub.held) > maxHeldDeltas+1 {
				t.Fatalf("%d deltas held", len(sub.held))
			}
		}
		h.mu.Unlock()
	}
	h.published("s1", appendEvents(t, m, 4, 4)) // the reply's model_response
	var got []Event
	for len(got) == 0 || got[len(got)-1].Seq != 4 {
		select {
		case ev := <-ch:
			got = append(got, ev)
		default:
			h.catchUp(context.Background()) // what the worker's retry does
		}
	}
	kept := subscriberBuffer + maxHeldDeltas
	if len(got) != kept+2 {
		t.Fatalf("got %d events, want %d deltas, the marker and seq 4", len(got), kept)
	}
	for i, ev := range got[:kept] {
		if want := fmt.Sprintf(`{"text":"%d "}`, i); string(ev.Data) != want {
			t.Fatalf("delta %d: %s, want %s", i, ev.Data, want)
		}
	}
	if mk := got[kept]; mk.Type != EventModelDeltasSkipped || string(mk.Data) != `{"reason":"behind"}` {
		t.Fatalf("after the deltas that fit: %s %s, want the marker", mk.Type, mk.Data)
	}
	h.delta("s1", 4, true, textDelta(0)) // the next reply
	if ev := <-ch; ev.Type != EventModelDelta {
		t.Fatalf("the next reply: %s, want its delta", ev.Type)
	}
}

// A subscriber that comes in while a reply streams gets a marker instead
// of the rest of that reply (it missed its beginning), then the next reply.
func TestSubscriberJoiningMidReplyGetsAMarker(t *testing.T) {
	m := store.NewMemory()
	appendEvents(t, m, 1, 3)
	h, ch := caughtUp(t, m)
	h.delta("s1", 3, false, textDelta(5))
	h.delta("s1", 3, false, textDelta(6))
	h.published("s1", appendEvents(t, m, 4, 4))
	h.delta("s1", 4, true, textDelta(0))
	var got []string
	for len(ch) > 0 {
		ev := <-ch
		got = append(got, fmt.Sprintf("%d:%s:%s", ev.Seq, ev.Type, ev.Data))
	}
	want := `0:model_deltas_skipped:{"reason":"joined"} 4:tool_result:{} 0:model_delta:{"text":"0 "}`
	if strings.Join(got, " ") != want {
		t.Fatalf("got %s\nwant %s", strings.Join(got, " "), want)
	}
}
