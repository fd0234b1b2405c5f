package local

import (
	"regexp"
	"testing"
	"time"
)

func TestSessionIDsSortByCreation(t *testing.T) {
	at := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	shape := regexp.MustCompile(`^ses_[0-9a-f]{32}$`)
	seen := map[string]bool{}
	prev := ""
	for i := range 1000 {
		id := sessionIDAt(at.Add(time.Duration(i) * time.Millisecond))
		if !shape.MatchString(id) {
			t.Fatalf("id %q: want ses_ and 32 hex digits", id)
		}
		if id <= prev {
			t.Fatalf("id %q made a millisecond after %q sorts before it", id, prev)
		}
		prev = id
		// Ids of one millisecond differ in their random part.
		if same := sessionIDAt(at); seen[same] {
			t.Fatalf("id %q made twice", same)
		} else {
			seen[same] = true
		}
	}
}
