// Package testwait is how the tests wait for what happens on another
// goroutine or in another process: poll a condition until it holds, or
// fail the test naming what did not happen. A bound here is a guard
// against a hang, not a measure: speed lives in benchmarks.
package testwait

import (
	"testing"
	"time"
)

// Poll is how often For checks its condition.
const Poll = 20 * time.Millisecond

// For checks cond until it holds, every Poll, and fails t with "waited
// <within> for <what>" when it has not held within that time.
func For(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", within, what)
		}
		time.Sleep(Poll)
	}
}
