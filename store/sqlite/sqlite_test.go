package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/sqlite"
	"github.com/cairnhq/cairn/store/storetest"
)

func TestSQLiteConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "cairn.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

func TestSynchronousOption(t *testing.T) {
	dir := t.TempDir()
	s, err := sqlite.Open(context.Background(), filepath.Join(dir, "a.db")+"?synchronous=normal")
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := sqlite.Open(context.Background(), filepath.Join(dir, "b.db")+"?synchronous=off"); err == nil {
		t.Fatal("synchronous=off accepted")
	}
	if _, err := sqlite.Open(context.Background(), filepath.Join(dir, "c.db")+"?cache=shared"); err == nil {
		t.Fatal("unknown option accepted")
	}
}

func TestSQLiteShared(t *testing.T) {
	storetest.RunShared(t, func(t *testing.T) (store.Store, store.Store) {
		path := filepath.Join(t.TempDir(), "cairn.db")
		var out [2]store.Store
		for i := range out {
			s, err := sqlite.Open(context.Background(), path)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			out[i] = s
		}
		return out[0], out[1]
	})
}
