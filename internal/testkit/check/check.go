// Package check holds the tests' assertions on calls under test that
// several packages share.
package check

import (
	"testing"

	"github.com/cairnhq/cairn"
)

// NoErr fails t when a call under test errs, and returns its session:
//
//	s := check.NoErr(t)(r.Start(ctx, "main", "go", nil))
func NoErr(t testing.TB) func(*cairn.Session, error) *cairn.Session {
	return func(s *cairn.Session, err error) *cairn.Session {
		t.Helper()
		if err != nil {
			t.Fatalf("call under test: %v", err)
		}
		return s
	}
}

// Events fails t when a read of events errs, and returns them:
//
//	evs := check.Events(t)(r.Events(ctx, s.ID, 0))
func Events(t testing.TB) func([]cairn.Event, error) []cairn.Event {
	return func(evs []cairn.Event, err error) []cairn.Event {
		t.Helper()
		if err != nil {
			t.Fatalf("reading events: %v", err)
		}
		return evs
	}
}

// Must fails t when a call under test errs, and returns its value:
//
//	rules := check.Must[[]cairn.Rule](t)(r.Rules(ctx, actor, q))
func Must[T any](t testing.TB) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatalf("call under test: %v", err)
		}
		return v
	}
}
