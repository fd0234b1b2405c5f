// Package storeurl names a store with a URL and opens it: "memory:",
// "sqlite:PATH" or "postgres://…". The config file and the CLI use it, so
// the schemes are parsed in one place.
package storeurl

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/postgres"
	"github.com/cairnhq/cairn/store/sqlite"
)

// Normalize checks raw and returns it in the form Open takes: "" is a
// SQLite file cairn.db in dir, "memory" is "memory:", and a relative
// SQLite path is made absolute against dir (the config file's directory).
// A PostgreSQL URL is returned as it is. The error says what to write.
func Normalize(raw, dir string) (string, error) {
	switch {
	case raw == "":
		return "sqlite:" + filepath.Join(dir, "cairn.db"), nil
	case raw == "memory:" || raw == "memory":
		return "memory:", nil
	case strings.HasPrefix(raw, "sqlite:"):
		p := strings.TrimPrefix(raw, "sqlite:")
		if p == "" {
			return "", fmt.Errorf("sqlite: needs a path, e.g. sqlite:./cairn.db")
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		return "sqlite:" + p, nil
	case isPostgres(raw):
		return raw, nil
	}
	return "", fmt.Errorf("%q is not a store URL; use memory, sqlite:PATH or postgres://…", raw)
}

// Open opens the store a normalized URL names.
func Open(ctx context.Context, url string) (store.Store, error) {
	switch {
	case url == "memory:":
		return store.NewMemory(), nil
	case strings.HasPrefix(url, "sqlite:"):
		return sqlite.Open(ctx, strings.TrimPrefix(url, "sqlite:"))
	case isPostgres(url):
		return postgres.Open(ctx, url)
	}
	return nil, fmt.Errorf("%q is not a store URL; use memory:, sqlite:PATH or postgres://…", url)
}

// Kind is the scheme of a normalized URL: "memory", "sqlite" or "postgres".
func Kind(url string) string {
	if isPostgres(url) {
		return "postgres"
	}
	kind, _, _ := strings.Cut(url, ":")
	return kind
}

func isPostgres(url string) bool {
	return strings.HasPrefix(url, "postgres://") || strings.HasPrefix(url, "postgresql://")
}
