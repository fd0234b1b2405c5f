package storetest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/store"
)

// CheckKinds lists s by each kind of want (paused sessions only, in List's
// order) and reports where the ids listed, comma-separated, differ from
// want's: for a store's own tests of how it keeps kinds (upgrades, writers
// of older versions).
func CheckKinds(t *testing.T, s store.Store, want map[session.Kind]string) {
	t.Helper()
	for kind, ids := range want {
		heads, err := s.List(context.Background(), store.ListOptions{Status: session.StatusPaused, Kind: kind})
		var got []string
		for _, h := range heads {
			got = append(got, h.ID)
		}
		if err != nil || strings.Join(got, ",") != ids {
			t.Errorf("kind %s: listed %v %v; want %s", kind, got, err, ids)
		}
	}
}

// AppendPaused stores, for each id → summary, a paused session updated at
// at, with one event: the rows a store's own tests of upgrades start from.
func AppendPaused(t *testing.T, s store.Store, at time.Time, summaries map[string]string) {
	t.Helper()
	for id, summary := range summaries {
		h := store.Head{ID: id, Agent: "main", Status: session.StatusPaused, Seq: 1, CreatedAt: at, UpdatedAt: at, Summary: []byte(summary)}
		if err := s.Append(context.Background(), h, 0, []session.Event{{Seq: 1, Type: session.EventUserMessage, Time: at, Data: []byte(`{}`)}}); err != nil {
			t.Fatal(err)
		}
	}
}
