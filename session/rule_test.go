package session

import (
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/cond"
)

// The pre-filled condition holds for the arguments it was made from, and
// not for others.
func TestConditionForHoldsForItsCall(t *testing.T) {
	for _, c := range []struct{ args, want string }{
		{`{"env":"staging","replicas":2,"dry":false,"tags":["a"],"x-y":1}`, `args.dry == false && args.env == "staging" && args.replicas == 2`},
		{`{"q":"say \"hi\""}`, `args.q == "say \"hi\""`},
		{`{}`, ``},
		{`[1]`, ``},
	} {
		got := ConditionFor([]byte(c.args))
		if got != c.want {
			t.Errorf("%s: %q, want %q", c.args, got, c.want)
			continue
		}
		if got == "" {
			continue
		}
		k, err := cond.Compile("args", got)
		if err != nil {
			t.Fatalf("%q: %v", got, err)
		}
		if ok, err := k.EvalJSON([]byte(c.args)); err != nil || !ok {
			t.Errorf("%q does not hold for %s: %v", got, c.args, err)
		}
		if ok, _ := k.EvalJSON([]byte(`{"env":"prod","replicas":3,"dry":true,"q":"no"}`)); ok {
			t.Errorf("%q holds for other arguments", got)
		}
	}
}

func TestParseRuleDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{"72h": 72 * time.Hour, "30d": 30 * 24 * time.Hour, "90m": 90 * time.Minute} {
		if d, unbounded, err := ParseRuleDuration(in); err != nil || unbounded || d != want {
			t.Errorf("%s: %v %v %v", in, d, unbounded, err)
		}
	}
	if _, unbounded, err := ParseRuleDuration("unbounded"); err != nil || !unbounded {
		t.Errorf("unbounded: %v %v", unbounded, err)
	}
	for _, bad := range []string{"", "0d", "-1h", "1.5d", "soon", "0s"} {
		if _, _, err := ParseRuleDuration(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}
