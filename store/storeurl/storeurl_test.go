package storeurl_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/store/storeurl"
)

func TestNormalize(t *testing.T) {
	for _, c := range []struct{ raw, want, err string }{
		{"", "sqlite:/etc/cairn/cairn.db", ""},
		{"memory", "memory:", ""},
		{"sqlite:./state/c.db", "sqlite:/etc/cairn/state/c.db", ""},
		{"sqlite:/var/lib/c.db", "sqlite:/var/lib/c.db", ""},
		{"postgresql://u@db/c", "postgresql://u@db/c", ""},
		{"sqlite:", "", "sqlite: needs a path"},
		{"mysql://db", "", `"mysql://db" is not a store URL; use memory, sqlite:PATH or postgres://…`},
	} {
		got, err := storeurl.Normalize(c.raw, "/etc/cairn")
		if got != c.want || (err == nil) != (c.err == "") || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("Normalize(%q) = %q, %v; want %q, %q", c.raw, got, err, c.want, c.err)
		}
	}
	if k := storeurl.Kind("postgresql://u@db/c"); k != "postgres" {
		t.Errorf("Kind = %q", k)
	}
}

func TestOpen(t *testing.T) {
	ctx := context.Background()
	for _, url := range []string{"memory:", "sqlite:" + filepath.Join(t.TempDir(), "c.db")} {
		s, err := storeurl.Open(ctx, url)
		if err != nil {
			t.Fatalf("Open(%q): %v", url, err)
		}
		if c, ok := s.(interface{ Close() error }); ok {
			_ = c.Close() // the store was only opened
		}
	}
	if _, err := storeurl.Open(ctx, "sqlite-ish"); err == nil {
		t.Fatal("an unknown scheme opened")
	}
}
