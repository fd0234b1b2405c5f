package sqlite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/sqlite"
)

// BenchmarkAppendSessions: the four commits of an approval cycle (2, 3, 2
// and 3 events of a few hundred bytes, a ~1 KB summary each) for sessions
// written by 1 and 64 goroutines at once, synchronous=normal (no fsync:
// the writer's own cost). An op is one whole session.
func BenchmarkAppendSessions(b *testing.B) {
	for _, writers := range []int{1, 64} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			ctx := context.Background()
			st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "b.db")+"?synchronous=normal")
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			summary := []byte(`{"id":"x","agent":"main","status":"paused","output":"` + string(make([]byte, 0)) + fmt.Sprintf("%0900d", 0) + `"}`)
			data := []byte(`{"message":{"role":"assistant","content":"` + fmt.Sprintf("%0200d", 0) + `"}}`)
			steps := []int{2, 3, 2, 3}
			var next atomic.Int64
			b.ReportAllocs()
			b.ResetTimer()
			var wg sync.WaitGroup
			for range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						n := next.Add(1)
						if n > int64(b.N) {
							return
						}
						id := fmt.Sprintf("s%d", n)
						now := time.Now()
						seq := int64(0)
						for _, k := range steps {
							evs := make([]session.Event, k)
							for i := range evs {
								evs[i] = session.Event{Seq: seq + int64(i) + 1, Type: "model_response", Time: now, Frame: "f1", Agent: "main", Data: data}
							}
							h := store.Head{ID: id, Agent: "main", Status: "running", Seq: seq + int64(k), CreatedAt: now, UpdatedAt: now, Summary: summary,
								Lease: store.Lease{Owner: "n1", Until: now.Add(time.Minute)}}
							if err := st.Append(ctx, h, seq, evs); err != nil {
								b.Error(err)
								return
							}
							seq += int64(k)
						}
					}
				}()
			}
			wg.Wait()
			commits, writes := st.Stats()
			b.ReportMetric(float64(writes)/float64(max(commits, 1)), "writes/commit")
		})
	}
}
