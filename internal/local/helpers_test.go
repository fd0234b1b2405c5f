package local_test

import (
	"iter"
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

// puller pulls from seq one item at a time: each call returns the next,
// failing the test if the sequence yields an error or ends first (give it
// a context with a deadline, so that a missing item ends it).
func puller[T any](t *testing.T, seq iter.Seq2[T, error]) func() T {
	next, stop := iter.Pull2(seq)
	t.Cleanup(stop)
	return func() T {
		t.Helper()
		v, err, ok := next()
		if !ok {
			t.Fatal("the sequence ended before the item the test waits for (its context timed out?)")
		}
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}
