package session_test

import (
	"slices"
	"testing"

	"github.com/cairnhq/cairn/session"
)

// What a person may do with an interrupt comes from its kind, so a front
// end draws its buttons from data.
func TestInterruptActionsFollowTheKind(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		kind    session.Kind
		want    []session.Action
		decided bool
	}{
		{session.KindApproval, []session.Action{session.ActionApprove, session.ActionReject}, true},
		{session.KindInput, []session.Action{session.ActionAnswer, session.ActionReject}, true},
		{session.KindMessage, nil, false},
		{session.Kind("from a newer server"), nil, false},
	} {
		in := session.Interrupt{Kind: c.kind}
		if got := in.Actions(); !slices.Equal(got, c.want) || c.kind.Decided() != c.decided {
			t.Errorf("%s: actions %v decided %v, want %v %v", c.kind, got, c.kind.Decided(), c.want, c.decided)
		}
	}
}
