package local

import (
	"context"
	"encoding/json"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/store"
)

// hub delivers a session's events to subscribers in seq order, with no gap
// and none twice, whichever process recorded them. Events this process
// commits go out at once; for the rest (another process's commits, a
// subscriber that fell behind, the backlog of a new subscriber) a worker
// reads the missing events from the store when the store's change feed, a
// local commit or a retry tick says something is missing.
type hub struct {
	store store.Store
	mu    sync.Mutex
	subs  map[string]map[*subscriber]struct{}
	// gen counts the changes seen per session, so the worker knows whether
	// something happened while it read from the store.
	gen map[string]uint64
	// latest is the highest seq known committed per session (unknownSeq
	// after a resync): a subscriber that has it is up to date, whatever
	// changes were counted meanwhile.
	latest map[string]int64
	wake   chan struct{}
	// followers counts the subscribers, read without the lock by the
	// store feed's filter (see Runner.startFeed).
	followers atomic.Int64
}

// unknownSeq: changes may have been missed; no subscriber is known up to date.
const unknownSeq = math.MaxInt64

type subscriber struct {
	ch     chan session.Event
	last   int64 // seq of the last event delivered
	behind bool  // events after last exist that the worker must deliver
	// held keeps, in order, text deltas whose place is after events this
	// subscriber has not been sent yet (or that found its channel full):
	// they go out right after those events, before the next ones.
	held []heldDelta
	// reply is the reply (the seq its deltas follow) whose first delta
	// this subscriber was given: a later delta of another reply means it
	// came in after that reply began.
	reply int64
	// muted: deltas were skipped and a model_deltas_skipped marker is
	// sent (or held) in their place; no delta goes out until a reply
	// begins while there is room to hold its deltas.
	muted bool
}

// heldDelta is a text delta (or a skip marker) waiting for its place.
type heldDelta struct {
	after int64 // the seq of the last event recorded before it
	ev    session.Event
}

const (
	// subscriberBuffer is each subscriber's channel capacity; past it the
	// subscriber is behind and is served from the store.
	subscriberBuffer = 64
	// maxHeldDeltas bounds the deltas a subscriber holds for their place;
	// past it the rest of the reply is skipped, with a marker.
	maxHeldDeltas = 256
)

func (h *hub) init() {
	if h.subs == nil {
		h.subs = map[string]map[*subscriber]struct{}{}
		h.gen = map[string]uint64{}
		h.latest = map[string]int64{}
		h.wake = make(chan struct{}, 1)
	}
}

func (h *hub) poke() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

func (h *hub) subscribe(id string, after int64) (<-chan session.Event, func()) {
	sub := &subscriber{ch: make(chan session.Event, subscriberBuffer), last: after, behind: true}
	h.mu.Lock()
	h.init()
	if h.subs[id] == nil {
		h.subs[id] = map[*subscriber]struct{}{}
	}
	h.subs[id][sub] = struct{}{}
	h.followers.Add(1)
	h.mu.Unlock()
	h.poke()
	var once sync.Once
	return sub.ch, func() {
		once.Do(func() {
			h.mu.Lock()
			defer h.mu.Unlock()
			delete(h.subs[id], sub)
			h.followers.Add(-1)
			if len(h.subs[id]) == 0 {
				delete(h.subs, id)
				delete(h.gen, id)
				delete(h.latest, id)
			}
			close(sub.ch)
		})
	}
}

// published delivers events this process just committed, to every
// subscriber they continue, also one the change feed has already marked
// behind: the store may echo a commit before its writer gets here, and the
// turn's next deltas must find the subscriber caught up.
func (h *hub) published(id string, events []session.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	subs := h.subs[id]
	if len(subs) == 0 {
		return
	}
	h.gen[id]++
	if last := events[len(events)-1].Seq; last > h.latest[id] {
		h.latest[id] = last
	}
	poke := false
	for sub := range subs {
		sub.behind = !sub.deliver(events) || sub.last < h.latest[id]
		poke = poke || sub.behind
	}
	if poke {
		h.poke()
	}
}

// delta passes on an unstored event (a text delta of one model reply) to
// every subscriber, in its place: after the event with seq after, the last
// one recorded before the model call. first marks the reply's first delta.
func (h *hub) delta(id string, after int64, first bool, ev session.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for sub := range h.subs[id] {
		sub.delta(after, first, ev)
	}
}

// changed notes a change from the store's feed (maybe another process's).
func (h *hub) changed(c store.Change) {
	h.mu.Lock()
	defer h.mu.Unlock()
	poke := false
	if c.SessionID == "" { // a resync: any followed session may have changed
		for id, subs := range h.subs {
			poke = h.mark(id, subs, c) || poke
		}
	} else if subs := h.subs[c.SessionID]; len(subs) > 0 {
		poke = h.mark(c.SessionID, subs, c)
	}
	if poke {
		h.poke()
	}
}

// mark notes c for session id's subscribers and reports whether any of
// them is now behind. h.mu is held.
func (h *hub) mark(id string, subs map[*subscriber]struct{}, c store.Change) bool {
	h.gen[id]++
	switch {
	case c.SessionID == "":
		h.latest[id] = unknownSeq
	case c.Seq > h.latest[id]:
		h.latest[id] = c.Seq
	}
	behind := false
	for sub := range subs {
		if c.SessionID == "" || sub.last < c.Seq {
			sub.behind, behind = true, true
		}
	}
	return behind
}

// deliver sends the events after sub.last, in order, without blocking, each
// after the held deltas that come before it. It reports whether all of them,
// and the deltas that follow the last, fit; it stops at a gap.
func (sub *subscriber) deliver(events []session.Event) bool {
	for _, ev := range events {
		switch {
		case ev.Seq <= sub.last:
			continue
		case ev.Seq != sub.last+1:
			return false // a gap: the worker reads it from the store
		}
		if sub.flush(); sub.due() || !sub.send(ev) {
			return false
		}
		sub.last = ev.Seq
	}
	sub.flush()
	return !sub.due()
}

// delta places one text delta of the reply that follows seq after: sent at
// once when the subscriber has every event before it, else held until it
// has. A delta that finds no room skips the rest of its reply, and so does
// a subscriber that came in after the reply began: a model_deltas_skipped
// marker takes their place, so the deltas a stream carries are always a
// beginning of the reply's text and model_response has the whole of it.
func (sub *subscriber) delta(after int64, first bool, ev session.Event) {
	sub.flush()
	switch {
	case sub.muted && (!first || len(sub.held) >= maxHeldDeltas):
		return // the marker covers it: at most one is held beyond the deltas
	case first:
		sub.muted, sub.reply = false, after
	case after != sub.reply:
		sub.skip(after, ev, skippedJoined)
		return
	}
	if len(sub.held) >= maxHeldDeltas {
		sub.skip(after, ev, skippedBehind)
		return
	}
	sub.put(after, ev)
}

// Why a stream skipped deltas (model_deltas_skipped's reason).
const (
	skippedBehind = "behind" // its reader fell behind the reply
	skippedJoined = "joined" // it started after the reply began
)

// skip mutes sub's deltas from here and puts the marker in their place.
func (sub *subscriber) skip(after int64, ev session.Event, reason string) {
	sub.muted = true
	sub.put(after, session.Event{Type: session.EventModelDeltasSkipped, Time: ev.Time, Frame: ev.Frame, Agent: ev.Agent,
		Data: mustJSON(session.ModelDeltasSkipped{Reason: reason})})
}

// put sends ev (a delta or a marker following seq after) at once when
// nothing waits before it and the channel has room, else holds it.
func (sub *subscriber) put(after int64, ev session.Event) {
	if len(sub.held) == 0 && sub.last >= after && sub.send(ev) {
		return
	}
	sub.held = append(sub.held, heldDelta{after, ev})
}

// flush sends, in order, the held deltas whose events sub has, while its
// channel has room.
func (sub *subscriber) flush() {
	n := 0
	for n < len(sub.held) && sub.held[n].after <= sub.last && sub.send(sub.held[n].ev) {
		n++
	}
	switch {
	case n == len(sub.held):
		sub.held = nil
	case n > 0:
		sub.held = sub.held[n:]
	}
}

// due reports whether a held delta is due (its events delivered) but did
// not fit: nothing more may go out before it.
func (sub *subscriber) due() bool {
	return len(sub.held) > 0 && sub.held[0].after <= sub.last
}

// send puts ev on the channel if there is room.
func (sub *subscriber) send(ev session.Event) bool {
	select {
	case sub.ch <- ev:
		return true
	default:
		return false
	}
}

// run is the worker: it serves subscribers that are behind from the store
// until ctx ends.
func (h *hub) run(ctx context.Context) {
	h.mu.Lock()
	h.init()
	wake := h.wake
	h.mu.Unlock()
	retry := time.NewTicker(250 * time.Millisecond) // for subscribers whose channel was full
	defer retry.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-wake:
		case <-retry.C:
		}
		for h.catchUp(ctx) && ctx.Err() == nil {
		}
	}
}

// catchUp serves each session with a subscriber behind once; it reports
// whether something changed meanwhile (run it again).
func (h *hub) catchUp(ctx context.Context) (again bool) {
	type todo struct {
		session string
		from    int64
		gen     uint64
	}
	h.mu.Lock()
	var work []todo
	for id, subs := range h.subs {
		from, found := int64(-1), false
		for sub := range subs {
			if sub.behind && (!found || sub.last < from) {
				from, found = sub.last, true
			}
		}
		if found {
			work = append(work, todo{id, from, h.gen[id]})
		}
	}
	h.mu.Unlock()
	for _, w := range work {
		evs, err := h.store.Events(ctx, w.session, w.from)
		if err != nil {
			continue // not created yet, or the store failed: the retry tick comes back
		}
		h.mu.Lock()
		if h.gen[w.session] == w.gen { // the read saw everything committed
			read := w.from
			if len(evs) > 0 {
				read = evs[len(evs)-1].Seq
			}
			if h.latest[w.session] == unknownSeq || read > h.latest[w.session] {
				h.latest[w.session] = read
			}
		}
		for sub := range h.subs[w.session] {
			if !sub.behind {
				continue
			}
			// Up to date when nothing changed during the read, or when what
			// changed is already delivered (the feed's echo of a commit).
			if sub.deliver(evs) && (h.gen[w.session] == w.gen || sub.last >= h.latest[w.session]) {
				sub.behind = false
			}
		}
		if h.gen[w.session] != w.gen {
			again = true
		}
		h.mu.Unlock()
	}
	return again
}

// startFeed follows the store's change feed: it wakes the hub for other
// processes' commits and passes cancel requests to this runner's turns.
func (r *Runner) startFeed() error {
	var changes <-chan store.Change
	var err error
	if w, ok := r.store.(store.SelectiveWatcher); ok {
		// Only what this goroutine acts on: cancel requests, and any change
		// while someone follows a session or the cross-session feed here.
		// The rest (every commit, when nobody follows) would wake it for
		// nothing. A follower that starts meanwhile reads the store after
		// subscribing, so a change skipped just before is not lost.
		changes, err = w.WatchSome(r.background, func(c store.Change) bool {
			return c.CancelRequested || r.hub.followers.Load() > 0 || r.feed.out.Subscribed()
		})
	} else {
		changes, err = r.store.Watch(r.background)
	}
	if err != nil {
		return err
	}
	r.wg.Add(3)
	go func() {
		defer r.wg.Done()
		r.hub.run(r.background)
	}()
	go func() {
		defer r.wg.Done()
		r.feed.run(r.background, r.Session)
	}()
	go func() {
		defer r.wg.Done()
		for c := range changes {
			if c.CancelRequested {
				if t := r.active.get(c.SessionID); t != nil {
					t.requestCancel()
				}
			}
			r.hub.changed(c)
			r.feed.changed(c)
		}
	}()
	return nil
}

// mustJSON encodes a value that cannot fail to encode (strings only).
func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}
