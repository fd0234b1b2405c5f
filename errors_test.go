package cairn_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/session"
)

// A lost lease is a conflict, but a conflict is not a lost lease: the wrap
// goes one way, so a caller can tell a takeover from a stale seq.
func TestLeaseLostIsAConflictNotTheOtherWayRound(t *testing.T) {
	lost := fmt.Errorf("session s1: %w", cairn.ErrLeaseLost)
	stale := &session.Error{Code: session.CodeConflict, Message: "stale seq 3: session s1 is at seq 5"}
	switch {
	case !errors.Is(lost, cairn.ErrLeaseLost) || !errors.Is(lost, cairn.ErrConflict):
		t.Fatal("a lost lease is not ErrLeaseLost and ErrConflict")
	case errors.Is(stale, cairn.ErrLeaseLost) || errors.Is(cairn.ErrConflict, cairn.ErrLeaseLost):
		t.Fatal("a stale seq counts as a lost lease")
	case !errors.Is(stale, cairn.ErrConflict):
		t.Fatal("a stale seq is not ErrConflict")
	case cairn.ErrorCode(lost) != "lease_lost" || cairn.ErrorCode(stale) != "conflict":
		t.Fatalf("ErrorCode(lost lease) = %q, ErrorCode(stale seq) = %q; want lease_lost and conflict (both HTTP 409)", cairn.ErrorCode(lost), cairn.ErrorCode(stale))
	}
}
