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
