package cairn

import (
	"context"
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
	h.delta("s1", Event{Type: EventModelDelta, Data: []byte(`{"text":"The"}`)})
	select {
	case ev := <-ch:
		if ev.Type != EventModelDelta {
			t.Fatalf("got %s, want the delta", ev.Type)
		}
	default:
		t.Fatal("the delta was dropped: the caught-up subscriber was still marked behind")
	}
}
