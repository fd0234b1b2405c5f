package cairn

import (
	"encoding/json"

	"github.com/cairnhq/cairn/internal/cond"
)

// Policy decides whether a call waits for a person's decision, and says
// when in words, for people and clients (Runner.Agents, GET /v1/agents):
// "always", a CEL expression, "amount over 100". The library, the config
// file (never, always, CEL), MCP tool annotations and /v1/agents all use
// it. A policy must be deterministic: the same arguments give the same
// answer. The zero Policy never asks.
type Policy struct {
	rule string
	ask  func(args json.RawMessage) (bool, error)
	// over is the variable of a CEL policy (PolicyCEL), whose rule is its
	// expression: data, which a session's stored definition rebuilds.
	over string
}

// Never is the policy that never asks (the zero Policy, described "never").
func Never() Policy { return Policy{rule: "never"} }

// Always is the policy that asks a person before every call.
func Always() Policy { return Policy{rule: "always", ask: always} }

func always(json.RawMessage) (bool, error) { return true, nil }

// ApprovalIf is the policy that asks a person when pred returns true for
// the call's arguments, decoded into Args. It is described as "policy";
// Describe gives it better words.
func ApprovalIf[Args any](pred func(Args) bool) Policy {
	return PolicyFunc("policy", func(raw json.RawMessage) (bool, error) {
		var a Args
		if err := json.Unmarshal(raw, &a); err != nil {
			return false, err
		}
		return pred(a), nil
	})
}

// PolicyFunc is the policy that asks when ask returns true for the call's
// argument JSON (an error asks too: policies fail closed), described by
// rule. A nil ask never asks.
func PolicyFunc(rule string, ask func(args json.RawMessage) (bool, error)) Policy {
	return Policy{rule: rule, ask: ask}
}

// PolicyCEL is the policy that asks when the CEL expression expr holds for
// the JSON it is asked about, bound to variable: "args" for a tool's
// calls, "output" for a review. It is described by expr. An expression
// that fails to evaluate asks (fail closed). Unlike a Go function, a CEL
// policy is data: a session paused under it resumes under it after the
// deployment changed it (see docs/operations.md).
func PolicyCEL(variable, expr string) (Policy, error) {
	c, err := cond.Compile(variable, expr)
	if err != nil {
		return Policy{}, err
	}
	return Policy{rule: expr, ask: c.EvalJSON, over: variable}, nil
}

// Describe returns p described by rule instead.
func (p Policy) Describe(rule string) Policy {
	p.rule = rule
	p.over = "" // its words no longer say what it does
	return p
}

// Rule says when p asks: "never", "always", a CEL expression, or the words
// it was given.
func (p Policy) Rule() string {
	switch {
	case p.rule != "":
		return p.rule
	case p.ask == nil:
		return "never"
	}
	return "policy"
}

// Asks reports whether a call with these arguments waits for a person.
func (p Policy) Asks(args json.RawMessage) (bool, error) {
	if p.ask == nil {
		return false, nil
	}
	return p.ask(args)
}

// IsNever reports whether p never asks, whatever the arguments.
func (p Policy) IsNever() bool { return p.ask == nil }

// IsZero reports whether p is the zero Policy: no policy was given (it
// never asks). Never() is not zero: it says so on purpose.
func (p Policy) IsZero() bool { return p.rule == "" && p.ask == nil }
