package cairn_test

import (
	"encoding/json"
	"testing"

	"github.com/cairnhq/cairn"
)

// A policy says when it asks, in words, without reflection on functions.
func TestPolicyDescribesItself(t *testing.T) {
	big := cairn.ApprovalIf(func(a struct{ Amount int }) bool { return a.Amount > 100 })
	for _, c := range []struct {
		p          cairn.Policy
		rule       string
		never      bool
		asksFor200 bool
	}{
		{cairn.Policy{}, "never", true, false},
		{cairn.Never(), "never", true, false},
		{cairn.Always(), "always", false, true},
		{big, "policy", false, true},
		{big.Describe("amount over 100"), "amount over 100", false, true},
		{cairn.PolicyFunc("args.amount > 100", func(json.RawMessage) (bool, error) { return true, nil }), "args.amount > 100", false, true},
	} {
		asks, err := c.p.Asks(json.RawMessage(`{"Amount":200}`))
		if c.p.Rule() != c.rule || c.p.IsNever() != c.never || asks != c.asksFor200 || err != nil {
			t.Errorf("%q: rule %q never %v asks %v (%v)", c.rule, c.p.Rule(), c.p.IsNever(), asks, err)
		}
	}
	if !(cairn.Policy{}).IsZero() || cairn.Never().IsZero() {
		t.Error("only the zero Policy is zero; Never() says never on purpose")
	}
	if asks, _ := big.Asks(json.RawMessage(`{"Amount":5}`)); asks {
		t.Error("ApprovalIf asked for a small amount")
	}
}
