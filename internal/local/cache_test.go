package local

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/model"
)

func sized(id string, bytes int) *engine.State {
	return &engine.State{SessionID: id, Log: engine.LogStats{TailBytes: bytes - 512}}
}

// The cache holds at most maxBytes, evicting the least recently used.
func TestStateCacheBoundedByBytes(t *testing.T) {
	c := stateCache{maxEntries: 1000, maxBytes: 10_000}
	for i := range 5 {
		c.put(sized(fmt.Sprint("s", i), 3_000))
	}
	if n, b := c.size(); n != 3 || b != 9_000 {
		t.Fatalf("held %d states, %d bytes; want 3, 9000", n, b)
	}
	if c.take("s0") != nil || c.take("s1") != nil {
		t.Fatal("the least recently used states were kept")
	}
	st := c.take("s2")
	if st == nil {
		t.Fatal("s2 evicted")
	}
	c.put(st)                  // s2 is now the most recent
	c.put(sized("big", 6_000)) // evicts s3 and s4, not s2
	if c.take("s3") != nil || c.take("s2") == nil {
		t.Fatal("eviction is not least recently used first")
	}
	c.put(sized("huge", 20_000))
	if c.take("huge") != nil {
		t.Fatal("a state larger than the cache was kept")
	}
	if _, b := c.size(); b > 10_000 {
		t.Fatalf("%d bytes held, over the bound", b)
	}
}

// 160 sessions with 1 MB inputs on a runner with an 8 MB cache: the cache
// never holds more than 8 MB, and every session still resumes (a miss
// replays from the store).
func TestRunnerCacheStaysWithinBytes(t *testing.T) {
	ctx := context.Background()
	m := &echoModel{}
	r, err := New([]*Agent{{Name: "main", Model: m}}, &Options{CacheBytes: 8 << 20}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	input := strings.Repeat("x", 1<<20)
	var ids []string
	for range 160 {
		s, err := r.Start(ctx, "main", input, nil)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s.ID)
		if _, b := r.cache.size(); b > 8<<20 {
			t.Fatalf("cache holds %d bytes, over 8 MiB", b)
		}
	}
	for _, id := range ids[:5] {
		if _, err := r.Send(ctx, id, "again", 0, nil); err != nil {
			t.Fatalf("resume after eviction: %v", err)
		}
	}
}

// echoModel answers every request with a short text.
type echoModel struct{}

func (*echoModel) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	return &model.Response{Message: model.Message{Role: model.RoleAssistant, Content: "ok"}}, nil
}
