package cairn_test

import (
	"testing"

	"github.com/cairnhq/cairn"
)

// runnerFor is how every test of this package builds a runner: agents on
// opts (nil: in memory), closed when the test ends (closing twice is fine,
// so a test may close it early to play a restart).
func runnerFor(t testing.TB, agents []*cairn.Agent, opts *cairn.RunnerOptions) *cairn.Runner {
	t.Helper()
	r, err := cairn.NewRunner(agents, opts)
	if err != nil {
		t.Fatalf("NewRunner: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// noErr fails t when a call under test errs, and returns its session:
// s := noErr(t)(r.Start(ctx, "main", "go", nil)).
func noErr(t testing.TB) func(*cairn.Session, error) *cairn.Session {
	return func(s *cairn.Session, err error) *cairn.Session {
		t.Helper()
		if err != nil {
			t.Fatalf("call under test: %v", err)
		}
		return s
	}
}
