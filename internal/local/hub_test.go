package local

import (
	"context"
	"encoding/json"
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
	h.delta("s1", 3, true, session.Event{Type: session.EventModelDelta, Data: []byte(`{"text":"The"}`)})
	select {
	case ev := <-ch:
		if ev.Type != session.EventModelDelta {
			t.Fatalf("got %s, want the delta", ev.Type)
		}
	default:
		t.Fatal("the delta was dropped: the caught-up subscriber was still marked behind")
	}
}

// appendEvents records events from..to (inclusive) of session s1 in m.
func appendEvents(t *testing.T, m *store.Memory, from, to int64) []session.Event {
	t.Helper()
	now := time.Now()
	var evs []session.Event
	for seq := from; seq <= to; seq++ {
		evs = append(evs, session.Event{Seq: seq, Type: "tool_result", Time: now, Data: []byte(`{}`)})
	}
	if err := m.Append(context.Background(), store.Head{ID: "s1", Seq: to, Status: "running", CreatedAt: now, UpdatedAt: now, Summary: []byte(`{}`)}, from-1, evs); err != nil {
		t.Fatal(err)
	}
	return evs
}

// caughtUp returns a hub on m with one subscriber of s1 served its backlog.
func caughtUp(t *testing.T, m *store.Memory) (*hub, <-chan session.Event) {
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

func textDelta(i int) session.Event {
	return session.Event{Type: session.EventModelDelta, Data: []byte(fmt.Sprintf(`{"text":"%d "}`, i))}
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
// that reply, nor of a reply that begins while it is still as far behind:
// what it streamed is a beginning of the text, and the marker comes before
// the reply's model_response. Its memory stays bounded, and a reply that
// begins once there is room streams again.
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
	// A reply that begins while the subscriber is still as far behind is
	// skipped too, under the same marker: none of its deltas, no second one.
	h.delta("s1", 4, true, textDelta(-1))
	h.published("s1", appendEvents(t, m, 4, 5)) // the replies' model_responses
	var got []session.Event
	for len(got) == 0 || got[len(got)-1].Seq != 5 {
		select {
		case ev := <-ch:
			got = append(got, ev)
		default:
			h.catchUp(context.Background()) // what the worker's retry does
		}
	}
	kept := subscriberBuffer + maxHeldDeltas
	if len(got) != kept+3 || got[kept+1].Seq != 4 {
		t.Fatalf("got %d events, want %d deltas, the marker, seq 4 and 5", len(got), kept)
	}
	for i, ev := range got[:kept] {
		if want := fmt.Sprintf(`{"text":"%d "}`, i); string(ev.Data) != want {
			t.Fatalf("delta %d: %s, want %s", i, ev.Data, want)
		}
	}
	if mk := got[kept]; mk.Type != session.EventModelDeltasSkipped || string(mk.Data) != `{"reason":"behind"}` {
		t.Fatalf("after the deltas that fit: %s %s, want the marker", mk.Type, mk.Data)
	}
	h.delta("s1", 5, true, textDelta(0)) // a reply that begins once it has caught up
	if ev := <-ch; ev.Type != session.EventModelDelta {
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

// FuzzHubPlacesEveryDelta plays a turn of this process against one
// subscriber, in the interleaving the input picks: the turn's commits,
// each handed to the hub after it is stored (published) and echoed by the
// store's feed at any time after that, also before; its replies' deltas,
// each after the commit before it was handed over; a resync; the worker's
// store reads, with other steps run in the middle of a read; the reader
// taking what it was sent; and the subscriber coming in at any point, from
// any seq. Whatever the order, the subscriber gets every event once in seq
// order, each delta after the event its reply follows and before the next,
// every delta of a reply that began after it subscribed, and of a reply
// it joined midway a marker and no delta.
func FuzzHubPlacesEveryDelta(f *testing.F) {
	f.Add([]byte{6, 0, 1, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{6, 5, 0, 2, 1, 0, 0, 4, 5, 0, 2, 0, 1, 0, 0})
	f.Add([]byte{0, 1, 0, 6, 0, 0, 2, 0, 4, 7, 0, 1, 5, 0, 0, 0})
	f.Add([]byte{0, 0, 0, 14, 4, 2, 0, 0, 0, 5, 4, 0, 0, 0, 7, 4, 0, 5})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 1000 {
			return
		}
		ctx := context.Background()
		mem := store.NewMemory()
		appendEvents(t, mem, 1, 1)
		h := &hub{}
		var (
			ch        <-chan session.Event
			subAfter  = int64(-1)     // the subscriber's after; -1: not subscribed
			seq       = int64(1)      // stored
			unhanded  []session.Event // stored, not yet handed to the hub
			echoes    []int64         // stored commits the feed has not echoed yet
			replies   []int           // deltas sent per reply, by reply number
			replyAt   []int64         // the seq each reply follows
			joinedAt  = -1            // the reply in progress when the subscriber came in
			before    int             // replies whose first delta went out before it came in
			deltaLeft int
			got       []session.Event
		)
		plain := echoStore{Store: mem, during: func() {}}
		h.store = plain
		step := func(op byte) {
			switch op % 8 {
			case 0: // the turn's next move
				switch {
				case len(unhanded) > 0:
					h.published("s1", unhanded)
					unhanded = nil
					if len(replies) < 12 {
						replies, replyAt = append(replies, 0), append(replyAt, seq)
						deltaLeft = int(op/8)%6 + 1
					}
				case deltaLeft > 0:
					i := len(replies) - 1
					data := fmt.Sprintf(`{"reply":%d,"n":%d}`, i, replies[i])
					h.delta("s1", replyAt[i], replies[i] == 0, session.Event{Type: session.EventModelDelta, Data: []byte(data)})
					replies[i]++
					deltaLeft--
				default:
					n := int64(op/8)%2 + 1
					unhanded = appendEvents(t, mem, seq+1, seq+n)
					seq += n
					echoes = append(echoes, seq)
				}
			case 1, 2: // the feed echoes the oldest stored commit
				if len(echoes) > 0 {
					h.changed(store.Change{SessionID: "s1", Seq: echoes[0]})
					echoes = echoes[1:]
				}
			case 3:
				h.changed(store.Change{}) // the feed lost changes: resync
			case 4:
				h.catchUp(ctx)
			case 5:
				for len(ch) > 0 {
					got = append(got, <-ch)
				}
			case 6:
				if subAfter < 0 {
					subAfter = int64(op/8) % (seq + 1)
					for i, n := range replies {
						if n > 0 {
							before = i + 1
						}
					}
					if deltaLeft > 0 && before == len(replies) {
						joinedAt = len(replies) - 1
					}
					var cancel func()
					ch, cancel = h.subscribe("s1", subAfter)
					t.Cleanup(cancel)
				}
			}
		}
		for i := 0; i < len(ops); i++ {
			if op := ops[i]; op%8 == 7 && i+1 < len(ops) && ops[i+1]%8 != 4 && ops[i+1]%8 != 7 {
				// The next step happens in the middle of the worker's next
				// store read (or not at all, if no read comes).
				i++
				next := ops[i]
				h.store = echoStore{Store: mem, during: func() {
					h.store = plain
					step(next)
				}}
				continue
			}
			step(ops[i])
		}
		// The turn ends and everything is taken.
		for deltaLeft > 0 || len(unhanded) > 0 {
			step(0)
		}
		h.store = plain
		if subAfter < 0 {
			return
		}
		for range 1000 {
			for len(ch) > 0 {
				got = append(got, <-ch)
			}
			if len(got) > 0 && got[len(got)-1].Seq == seq || subAfter >= seq {
				break
			}
			h.catchUp(ctx)
		}

		last := subAfter
		seen := map[int]int{}    // reply → deltas received
		marked := map[int]bool{} // replies with a marker after their last received delta
		reply := -1              // the reply whose slot the stream is in
		for _, ev := range got {
			// A filter of event types.
			//exhaustive:ignore
			switch ev.Type {
			case session.EventModelDelta:
				var d struct{ Reply, N int }
				if err := json.Unmarshal(ev.Data, &d); err != nil {
					t.Fatal(err)
				}
				if replyAt[d.Reply] != last {
					t.Fatalf("reply %d's delta %d after seq %d, want after %d", d.Reply, d.N, last, replyAt[d.Reply])
				}
				if d.N != seen[d.Reply] || marked[d.Reply] {
					t.Fatalf("reply %d: delta %d after %d deltas (marked: %v)", d.Reply, d.N, seen[d.Reply], marked[d.Reply])
				}
				seen[d.Reply]++
				reply = d.Reply
			case session.EventModelDeltasSkipped:
				for i, at := range replyAt {
					if at == last {
						reply = i
					}
				}
				marked[reply] = true
			default:
				if ev.Seq != last+1 {
					t.Fatalf("event %d after %d", ev.Seq, last)
				}
				last = ev.Seq
			}
		}
		if last != max(seq, subAfter) {
			t.Fatalf("the stream ends at seq %d, want %d", last, seq)
		}
		for i, n := range replies {
			switch {
			case i < before && i != joinedAt:
				if seen[i] > 0 {
					t.Fatalf("reply %d, over before the subscription, streamed to it", i)
				}
			case i == joinedAt:
				if seen[i] > 0 || !marked[i] {
					t.Fatalf("joined reply %d: %d deltas, marked %v; want none and a marker", i, seen[i], marked[i])
				}
			case seen[i] != n:
				t.Fatalf("reply %d: %d of %d deltas reached a subscriber that had come in before it", i, seen[i], n)
			}
		}
	})
}
