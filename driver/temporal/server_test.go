package temporal_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
	ctemporal "github.com/cairnhq/cairn/driver/temporal"
	"github.com/cairnhq/cairn/internal/testkit/temporaltest"
	"github.com/cairnhq/cairn/model/scripted"
	"github.com/cairnhq/cairn/store/sqlite"
)

// A tool result of 3 MB (over Temporal's 2 MB payload limit) travels
// through Cairn's store by reference: the session completes. Without the
// blob converter the same session fails on the server's limit.
func TestLargePayloadsGoToTheStore(t *testing.T) {
	addr := temporaltest.Server(t)
	ctx := context.Background()
	dbPath := filepath.Join(t.TempDir(), "c.db")
	st, err := sqlite.Open(ctx, dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	readLog := cairn.NewTool(&cairn.Tool{Name: "read_log", Description: "Read the build log."},
		func(ctx context.Context, _ struct{}) (string, error) {
			return strings.Repeat("log line\n", 3<<20/9), nil
		})
	agents := func() []*cairn.Agent {
		return []*cairn.Agent{{Name: "ops", Tools: []*cairn.Tool{readLog}, Model: scripted.New(
			scripted.Reply{ToolCalls: []scripted.Call{{Name: "read_log", Arguments: `{}`}}},
			scripted.Reply{Text: "read it"})}}
	}
	run := func(queue, id string, withBlobs bool) (*cairn.Session, error) {
		opts := ctemporal.ClientOptions{HostPort: addr, Namespace: "default"}
		if withBlobs {
			opts.Blobs = st
		}
		c, err := ctemporal.Dial(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close) // after the worker stops (cleanups run last first)
		startWorker(t, c, queue, newRunner(t, agents(), &cairn.RunnerOptions{Store: st}))
		wctx, cancel := context.WithTimeout(ctx, 20e9)
		defer cancel()
		return ctemporal.NewDriver(c, queue).Start(wctx, driver.Start{ID: id, Agent: "ops", Input: "read the log"}, false)
	}
	s, err := run("blobs", "big-1", true)
	if err != nil || s.Status != cairn.StatusCompleted || s.Output != "read it" {
		t.Fatalf("with the store keeping large payloads: %v %+v", err, s)
	}
	db, err := sql.Open("sqlite", dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var blobs, biggest int
	if err := db.QueryRow(`SELECT count(*), coalesce(max(length(data)), 0) FROM blobs`).Scan(&blobs, &biggest); err != nil || blobs == 0 || biggest < 3<<20 {
		t.Fatalf("blobs in the store: %d, the largest %d bytes (%v); want the 3 MB result among them", blobs, biggest, err)
	}
	s, err = run("plain", "big-2", false)
	if err == nil && s.Status == cairn.StatusCompleted {
		t.Fatalf("without the blob converter the 3 MB result passed through Temporal: %+v (the test no longer shows anything)", s)
	}
	t.Logf("without the blob converter: %v; session %s %+v %+v", err, s.Status, s.Error, s.Interrupts)
}
