package sqlite_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/sqlite"
)

// BenchmarkPurge times one purge batch of 500 completed sessions, each of
// four events and a summary the size of a finished chat's, among 50,000
// paused sessions that stay: with random session ids, and with ids that
// begin with their creation time, as the runner makes them.
func BenchmarkPurge(b *testing.B) {
	for _, ids := range []struct {
		name string
		id   func(n int) string
	}{
		{"ids=random", func(n int) string { return fmt.Sprintf("ses_%x", sha256.Sum256(fmt.Append(nil, n)))[:36] }},
		{"ids=time-ordered", func(n int) string {
			return fmt.Sprintf("ses_%012x%x", n, sha256.Sum256(fmt.Append(nil, n)))[:36]
		}},
	} {
		b.Run(ids.name, func(b *testing.B) { benchmarkPurge(b, ids.id) })
	}
}

func benchmarkPurge(b *testing.B, id func(n int) string) {
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "cairn.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	summary := json.RawMessage(`{"text":"` + strings.Repeat("x", 900) + `"}`)
	add := func(n int, status session.Status, events int) {
		var evs []session.Event
		for seq := int64(1); seq <= int64(events); seq++ {
			evs = append(evs, session.Event{Seq: seq, Type: "user_message", Time: at, Frame: "f1", Agent: "main", Data: json.RawMessage(`{"text":"` + strings.Repeat("y", 200) + `"}`)})
		}
		h := store.Head{ID: id(n), Agent: "main", Status: status, Seq: int64(events), CreatedAt: at, UpdatedAt: at.Add(time.Duration(n) * time.Millisecond), Summary: summary}
		if err := s.Append(ctx, h, 0, evs); err != nil {
			b.Fatal(err)
		}
	}
	n := 0
	for range 50_000 {
		n++
		add(n, session.StatusPaused, 1)
	}
	for b.Loop() {
		b.StopTimer()
		for range 500 {
			n++
			add(n, session.StatusCompleted, 4)
		}
		b.StartTimer()
		done, err := s.Purge(ctx, store.PurgeOptions{Status: session.StatusCompleted, Before: at.Add(1000 * time.Hour)})
		if err != nil || len(done) != 500 {
			b.Fatalf("purged %d sessions (want 500): %v", len(done), err)
		}
	}
}
