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
