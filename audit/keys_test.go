package audit_test

import (
	"context"
	"crypto/ed25519"
	"database/sql"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/audit"
	"github.com/cairnhq/cairn/model/scripted"
	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/sqlite"
)

// recording is a signer that remembers the seqs it signed.
type recording struct {
	key  *audit.Key
	mu   sync.Mutex
	seqs []int64
}

func (r *recording) Sign(id string, seq int64, hash string, at time.Time) session.Checkpoint {
	r.mu.Lock()
	r.seqs = append(r.seqs, seq)
	r.mu.Unlock()
	return r.key.Sign(id, seq, hash, at)
}

func newKey(t testing.TB, id string) *audit.Key {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	k, err := audit.NewKey(id, priv)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func trust(t testing.TB, keys ...*audit.Key) audit.Keys {
	t.Helper()
	ks := audit.Keys{}
	for _, k := range keys {
		if err := ks.Add(k.ID(), k.Public()); err != nil {
			t.Fatal(err)
		}
	}
	return ks
}

// signedStore runs a session that pauses on an approval and completes
// after it, signed by key every 3 events, on a SQLite file: it returns
// the file, its session id and the seqs signed.
func signedStore(t *testing.T, key *audit.Key) (path, id string, signed []int64) {
	t.Helper()
	ctx := context.Background()
	path = filepath.Join(t.TempDir(), "cairn.db")
	st, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	pay := cairn.NewTool(&cairn.Tool{Name: "pay", Description: "Pay.", Approval: cairn.Always()},
		func(ctx context.Context, a struct{ Amount int }) (string, error) { return "paid", nil })
	lookup := cairn.NewTool(&cairn.Tool{Name: "lookup", Description: "Look up."},
		func(ctx context.Context, a struct{}) (string, error) { return "found", nil })
	model := scripted.New(
		scripted.Reply{ToolCalls: []scripted.Call{{Name: "lookup", Arguments: `{}`}}},
		scripted.Reply{ToolCalls: []scripted.Call{{Name: "lookup", Arguments: `{}`}}},
		scripted.Reply{ToolCalls: []scripted.Call{{Name: "pay", Arguments: `{"Amount":10}`}}},
		scripted.Reply{Text: "done"},
	)
	rec := &recording{key: key}
	r, err := cairn.NewRunner([]*cairn.Agent{{Name: "main", Model: model, Tools: []*cairn.Tool{pay, lookup}}},
		&cairn.RunnerOptions{Store: st, Signer: rec, CheckpointEvery: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	s, err := r.Start(ctx, "main", "pay 10", nil)
	if err != nil || s.Status != cairn.StatusPaused {
		t.Fatalf("%+v %v", s, err)
	}
	pausedAt := s.Seq
	if s, err = r.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove}}, nil); err != nil || s.Status != cairn.StatusCompleted {
		t.Fatalf("%+v %v", s, err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if !slices.Contains(rec.seqs, pausedAt) || rec.seqs[len(rec.seqs)-1] != s.Seq {
		t.Fatalf("signed at %v: want the pause (%d) and the end (%d)", rec.seqs, pausedAt, s.Seq)
	}
	mid := false // a checkpoint while the first turn ran, at a multiple of 3
	for _, seq := range rec.seqs {
		mid = mid || seq < pausedAt
	}
	if !mid {
		t.Fatalf("signed at %v: none while the first turn ran (every 3 events, %d of them)", rec.seqs, pausedAt)
	}
	return path, s.ID, rec.seqs
}

// Signed checkpoints: an untouched store verifies with the signer's key;
// with another key, a checkpoint is a break; so is a chain rewritten with
// its hashes recomputed (it holds as a chain, not against the signature),
// a log cut back to an earlier pause, and a tombstone changed after the
// purge. An older key kept for verification still verifies what it signed.
func TestSignedCheckpoints(t *testing.T) {
	ctx := context.Background()
	key := newKey(t, "k1")
	verify := func(path string, keys audit.Keys) audit.Report {
		t.Helper()
		st, err := sqlite.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		rep, err := audit.Verify(ctx, st, audit.Options{Keys: keys})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	broken := func(t *testing.T, rep audit.Report, says string) {
		t.Helper()
		if len(rep.Breaks) != 1 || !strings.Contains(rep.Breaks[0].Error(), says) {
			t.Fatalf("breaks %v, want one saying %q", rep.Breaks, says)
		}
	}
	edit := func(path string, f func(db *sql.DB)) {
		t.Helper()
		db, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		f(db)
	}
	exec := func(db *sql.DB, q string, args ...any) {
		t.Helper()
		if _, err := db.Exec(q, args...); err != nil {
			t.Fatal(err)
		}
	}

	path, _, _ := signedStore(t, key)
	rep := verify(path, trust(t, key))
	if len(rep.Breaks) != 0 || rep.Signed != 1 || rep.Unsigned != 0 || rep.Uncovered != 0 || rep.LastCheckpoint == nil || rep.LastCheckpoint.Key != "k1" {
		t.Fatalf("untouched: %+v", rep)
	}
	t.Run("another key", func(t *testing.T) {
		broken(t, verify(path, trust(t, newKey(t, "k2"))), `signed by key "k1", which is not among the keys trusted (k2)`)
	})
	t.Run("a rotation keeps the old key", func(t *testing.T) {
		if rep := verify(path, trust(t, newKey(t, "k2"), key)); len(rep.Breaks) != 0 || rep.Signed != 1 {
			t.Fatalf("%+v", rep)
		}
	})
	t.Run("a same-id key of someone else", func(t *testing.T) {
		impostor := newKey(t, "k1")
		broken(t, verify(path, trust(t, impostor)), "its signature by key k1 does not verify")
	})
	t.Run("rewritten with its hashes recomputed", func(t *testing.T) {
		path, id, _ := signedStore(t, key)
		st, err := sqlite.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		evs, err := st.Events(ctx, id, 0)
		st.Close()
		if err != nil {
			t.Fatal(err)
		}
		// Change the first event and recompute every hash after it, as
		// someone who read docs/audit.md would.
		changed := false
		for i := range evs {
			if text := string(evs[i].Data); strings.Contains(text, "pay 10") {
				evs[i].Data, changed = []byte(strings.Replace(text, "pay 10", "pay 9999", 1)), true
			}
		}
		if !changed {
			t.Fatal("no event says pay 10")
		}
		edit(path, func(db *sql.DB) {
			prev := ""
			for i := range evs {
				evs[i].Hash = session.EventHash(id, &evs[i], prev)
				prev = evs[i].Hash
				exec(db, `UPDATE events SET data=?, hash=? WHERE session_id=? AND seq=?`, []byte(evs[i].Data), evs[i].Hash, id, evs[i].Seq)
			}
		})
		rep := verify(path, trust(t, key))
		broken(t, rep, "signed at")
		broken(t, rep, "the events up to it were rewritten, hashes and all")
	})
	t.Run("cut back to the pause", func(t *testing.T) {
		path, id, signed := signedStore(t, key)
		end := signed[len(signed)-1]
		edit(path, func(db *sql.DB) {
			exec(db, `DELETE FROM events WHERE session_id=? AND seq>?`, id, end-2)
			exec(db, `UPDATE sessions SET seq=?, status='paused' WHERE id=?`, end-2, id)
		})
		broken(t, verify(path, trust(t, key)), "which the log lacks: events were cut off")
	})
	t.Run("a tombstone", func(t *testing.T) {
		path, id, signed := signedStore(t, key)
		st, err := sqlite.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Purge(ctx, store.PurgeOptions{Status: session.StatusCompleted, Before: time.Now().Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		st.Close()
		rep := verify(path, trust(t, key))
		if len(rep.Breaks) != 0 || rep.Sessions != 0 || rep.Tombstones != 1 || rep.UnsignedTombstones != 0 {
			t.Fatalf("after the purge: %+v", rep)
		}
		edit(path, func(db *sql.DB) { exec(db, `UPDATE tombstones SET seq=seq-1 WHERE session_id=?`, id) })
		broken(t, verify(path, trust(t, key)), "the tombstone of its purge says its log ended at event "+strconv.FormatInt(signed[len(signed)-1]-1, 10))
		edit(path, func(db *sql.DB) {
			var text string
			if err := db.QueryRow(`SELECT checkpoint FROM tombstones WHERE session_id=?`, id).Scan(&text); err != nil {
				t.Fatal(err)
			}
			cp, err := store.DecodeCheckpoint(text)
			if err != nil || cp == nil {
				t.Fatalf("%q: %v", text, err)
			}
			cp.At = cp.At.Add(-time.Hour) // purged, it says, an hour earlier
			exec(db, `UPDATE tombstones SET seq=seq+1, checkpoint=? WHERE session_id=?`, store.EncodeCheckpoint(cp), id)
		})
		broken(t, verify(path, trust(t, key)), "the tombstone of its purge: its signature by key k1 does not verify")
	})
}

// A time range keeps the sessions last updated in it, and the tombstones
// of purges then; an export since a time holds those sessions whole and
// verifies on its own.
func TestVerifyAndExportATimeRange(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	key := newKey(t, "k1")
	var mu sync.Mutex // the runner's sweeps read the clock too
	at := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	r, err := cairn.NewRunner([]*cairn.Agent{{Name: "main", Model: scripted.New(scripted.Reply{Text: "hello"})}},
		&cairn.RunnerOptions{Store: st, Signer: key, Now: func() time.Time { mu.Lock(); defer mu.Unlock(); return at }})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for day := range 3 { // one session on each of Nov 1, 2 and 3
		mu.Lock()
		at = time.Date(2026, 11, 1+day, 9, 0, 0, 0, time.UTC)
		mu.Unlock()
		if _, err := r.Start(ctx, "main", "hi", nil); err != nil {
			t.Fatal(err)
		}
	}
	nov2, nov3 := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 3, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		since, until time.Time
		want         int
	}{{time.Time{}, time.Time{}, 3}, {nov2, time.Time{}, 2}, {nov2, nov3, 1}, {time.Time{}, nov2, 1}} {
		rep, err := audit.Verify(ctx, st, audit.Options{Since: c.since, Until: c.until, Keys: trust(t, key)})
		if err != nil || rep.Sessions != c.want || rep.Signed != c.want || len(rep.Breaks) != 0 {
			t.Errorf("since %v until %v: %+v %v, want %d sessions", c.since, c.until, rep, err, c.want)
		}
	}
	var buf strings.Builder
	if rep, err := audit.Export(ctx, st, &buf, audit.ExportOptions{Since: nov2, Keys: trust(t, key)}); err != nil || rep.Sessions != 2 {
		t.Fatalf("export since Nov 2: %+v %v", rep, err)
	}
	rep, keys, err := audit.VerifyExport(strings.NewReader(buf.String()), nil)
	if err != nil || rep.Sessions != 2 || rep.Signed != 2 || len(rep.Breaks) != 0 || len(keys) != 1 {
		t.Fatalf("the export: %+v %v %v", rep, keys, err)
	}
	// Trusting another key only, the export's checkpoints do not verify.
	if rep, _, err := audit.VerifyExport(strings.NewReader(buf.String()), trust(t, newKey(t, "k2"))); err != nil || len(rep.Breaks) != 2 {
		t.Fatalf("trusting k2 only: %+v %v", rep, err)
	}
}
