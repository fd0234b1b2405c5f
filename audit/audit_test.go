package audit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/audit"
	"github.com/cairnhq/cairn/model/scripted"
	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/sqlite"
)

// chained is a session's log as the engine writes it: n events, each
// hashed with the one before; the first legacy ones without hashes.
func chained(id string, n, legacy int) []session.Event {
	evs := make([]session.Event, n)
	prev := ""
	for i := range evs {
		ev := &evs[i]
		ev.Seq, ev.Type, ev.Time = int64(i+1), session.EventUserMessage, time.Date(2026, 11, 28, 12, 0, i, 1500, time.UTC)
		ev.Data = json.RawMessage(fmt.Sprintf(`{"text":"message %d"}`, i))
		if i < legacy {
			continue
		}
		ev.Prev = prev
		ev.Hash = session.EventHash(id, ev, prev)
		prev = ev.Hash
	}
	return evs
}

func TestChain(t *testing.T) {
	edit := func(f func(evs []session.Event) []session.Event) []session.Event { return f(chained("s", 6, 0)) }
	for _, c := range []struct {
		name string
		evs  []session.Event
		head int64
		says string // "" holds
	}{
		{"intact", chained("s", 6, 0), 6, ""},
		{"after events from before the chain", chained("s", 6, 2), 6, ""},
		{"data changed", edit(func(e []session.Event) []session.Event {
			e[2].Data = json.RawMessage(`{"text":"pay mallory"}`)
			return e
		}), 6, "event 3: it does not match its hash"},
		{"time changed", edit(func(e []session.Event) []session.Event { e[3].Time = e[3].Time.Add(time.Second); return e }), 6, "event 4: it does not match"},
		{"another session's id", chained("t", 6, 0), 6, "event 1: it does not match"},
		{"deleted", edit(func(e []session.Event) []session.Event { return append(e[:2:2], e[3:]...) }), 6, "event 4: seq 4 follows seq 2"},
		{"moved", edit(func(e []session.Event) []session.Event {
			e[1], e[2] = e[2], e[1]
			e[1].Seq, e[2].Seq = 2, 3
			return e
		}), 6, "event 2: its prev"},
		{"stripped", edit(func(e []session.Event) []session.Event { e[4].Hash, e[4].Prev = "", ""; return e }), 6, "event 5: it has no hash"},
		{"cut off", edit(func(e []session.Event) []session.Event { return e[:4] }), 6, "the log ends at event 4 but the session's head says 6"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := audit.Chain("s", c.evs, c.head)
			switch {
			case c.says == "" && b != nil:
				t.Fatalf("broken: %v", b)
			case c.says != "" && (b == nil || !strings.Contains(b.Error(), c.says)):
				t.Fatalf("got %v, want it to say %q", b, c.says)
			}
		})
	}
}

// A runner's sessions verify: the engine chains every event it records,
// and a store that was not touched holds every chain.
func TestVerifyARunnersStore(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	r, err := cairn.NewRunner([]*cairn.Agent{{Name: "main", Model: scripted.New(scripted.Reply{Text: "hello"})}}, &cairn.RunnerOptions{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for range 3 {
		if _, err := r.Start(ctx, "main", "hi", nil); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := audit.Verify(ctx, st, audit.Options{})
	if err != nil || rep.Sessions != 3 || rep.Events == 0 || rep.Unchained != 0 || len(rep.Breaks) != 0 {
		t.Fatalf("%+v %v", rep, err)
	}
}

// BenchmarkVerify100k verifies 100,000 events (1,000 sessions of 100,
// each with a signed checkpoint at its last event) in a memory store: the
// cost of a walk, without the store's reads from disk.
func BenchmarkVerify100k(b *testing.B) {
	ctx := context.Background()
	st := store.NewMemory()
	key := newKey(b, "k1")
	for s := range 1000 {
		id := fmt.Sprintf("ses_%04d", s)
		evs := chained(id, 100, 0)
		at := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
		cp := key.Sign(id, 100, evs[99].Hash, at)
		if err := st.Append(ctx, store.Head{ID: id, Agent: "main", Status: session.StatusCompleted, Seq: 100, CreatedAt: at, UpdatedAt: at.Add(time.Duration(s) * time.Second),
			Summary: json.RawMessage(`{}`), Checkpoint: &cp}, 0, evs); err != nil {
			b.Fatal(err)
		}
	}
	keys := trust(b, key)
	b.ResetTimer()
	for b.Loop() {
		r, err := audit.Verify(ctx, st, audit.Options{Keys: keys})
		if err != nil || r.Events != 100_000 || r.Signed != 1000 || len(r.Breaks) != 0 {
			b.Fatal(r, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/100_000, "ns/event")
}

// Chunked snapshots, and a runner that loads a session from one (another
// process, after a restart), leave the chain whole: a new event chains
// to the last recorded one's hash, kept in the snapshot's state.
func TestVerifyAfterSnapshots(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "cairn.db")
	agents := func() []*cairn.Agent {
		return []*cairn.Agent{{Name: "main", Model: scripted.New(scripted.Reply{Text: strings.Repeat("a long answer ", 40)})}}
	}
	open := func() (*cairn.Runner, store.Store) {
		st, err := sqlite.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		r, err := cairn.NewRunner(agents(), &cairn.RunnerOptions{Store: st})
		if err != nil {
			t.Fatal(err)
		}
		return r, st
	}
	r, st := open()
	s, err := r.Start(ctx, "main", "hi", nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 60 {
		if s, err = r.Send(ctx, s.ID, fmt.Sprintf("message %d", i), 0, nil); err != nil {
			t.Fatal(err)
		}
	}
	if seq, _, err := st.LatestSnapshot(ctx, s.ID); err != nil || seq == 0 {
		t.Fatalf("no snapshot was written: %d %v", seq, err)
	}
	_ = r.Close()
	_ = st.Close()
	r, st = open() // loads the session from its snapshot
	defer st.Close()
	defer r.Close()
	if _, err := r.Send(ctx, s.ID, "after the restart", 0, nil); err != nil {
		t.Fatal(err)
	}
	rep, err := audit.Verify(ctx, st, audit.Options{Session: s.ID})
	if err != nil || len(rep.Breaks) != 0 || rep.Events < 180 || rep.Unchained != 0 {
		t.Fatalf("%+v %v", rep, err)
	}
}
