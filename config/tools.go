package config

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"text/template"
	"time"

	"cel.dev/cel-go/cel"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/command"
)

func (l *loader) tool(name string, tc ToolConfig) (*cairn.Tool, error) {
	p := "tools." + name
	if !toolName.MatchString(name) {
		return nil, l.errf(p, "tool names are 1–64 letters, digits, _ or -")
	}
	if tc.Builtin != "" && len(tc.Command) > 0 {
		return nil, l.errf(p+".command", "a builtin tool has no command")
	}
	switch tc.Builtin {
	case "":
	case "ask_user":
		return cairn.AskUser(name), nil
	case "echo":
	default:
		return nil, l.errf(p+".builtin", "unknown built-in %q; the built-ins are: ask_user, echo", tc.Builtin)
	}
	if len(tc.Command) == 0 && tc.Builtin == "" {
		return nil, l.errf(p+".command", "missing; give the argv to run, e.g. [\"./deploy.sh\"] (arguments JSON on stdin, stdout is the result)")
	}
	t := &cairn.Tool{Name: name, Description: tc.Description, Confirmation: tc.Confirmation, Idempotent: tc.Idempotent}
	params := tc.Parameters
	if params == nil {
		params = map[string]any{"type": "object", "properties": map[string]any{}}
	}
	b, err := json.Marshal(params)
	if err != nil {
		return nil, l.errf(p+".parameters", "%v", err)
	}
	if err := cairn.CheckSchema(b); err != nil {
		return nil, l.errf(p+".parameters", "not a valid JSON Schema: %v", err)
	}
	t.Parameters = b
	if tc.Timeout != "" {
		d, err := time.ParseDuration(tc.Timeout)
		if err != nil || d <= 0 {
			return nil, l.errf(p+".timeout", "%q is not a positive duration like 30s or 2m", tc.Timeout)
		}
		t.Timeout = d
	}
	if tc.ApprovalTTL != "" {
		d, err := time.ParseDuration(tc.ApprovalTTL)
		if err != nil || d <= 0 {
			return nil, l.errf(p+".approval_ttl", "%q is not a positive duration like 15m or 1h", tc.ApprovalTTL)
		}
		t.ApprovalTTL = d
	}
	if tc.Confirmation != "" {
		if _, err := template.New(name).Parse(tc.Confirmation); err != nil {
			return nil, l.errf(p+".confirmation", "not a valid Go template: %v", err)
		}
	}
	if t.Approval, err = approvalPolicy(tc.Approval); err != nil {
		return nil, l.errf(p+".approval", "%v", err)
	}
	if tc.Builtin == "echo" {
		// Answers with its arguments, in process: for demos and load tests
		// that should measure Cairn, not a forked command.
		t.Handler = func(ctx context.Context, args json.RawMessage) (string, error) { return string(args), nil }
	} else {
		t.Handler = command.Tool(name, tc.Command, l.dir)
	}
	return t, nil
}

// approvalPolicy parses never (or empty), always, or a CEL expression over
// args, described by the key's own text.
func approvalPolicy(s string) (cairn.Policy, error) { return policyOver("args", s) }

// reviewPolicy parses an agent's review: never (or empty), always, or a
// CEL expression over output (the answer's JSON value).
func reviewPolicy(s string) (cairn.Policy, error) { return policyOver("output", s) }

// policyOver parses never, always or a CEL expression over the variable
// name (the decoded JSON a policy is asked about).
func policyOver(name, s string) (cairn.Policy, error) {
	switch a := strings.TrimSpace(s); a {
	case "", "never":
		return cairn.Never(), nil
	case "always":
		return cairn.Always(), nil
	default:
		pol, err := celPolicy(name, a)
		if err != nil {
			return cairn.Policy{}, fmt.Errorf("not never, always or a valid CEL expression over %s: %w", name, err)
		}
		return pol, nil
	}
}

// celPolicy compiles a CEL expression over the variable name (the decoded
// arguments, or answer) to a policy. It is compiled once, here.
func celPolicy(name, expr string) (cairn.Policy, error) {
	env, err := cel.NewEnv(cel.Variable(name, cel.DynType))
	if err != nil {
		return cairn.Policy{}, err
	}
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		return cairn.Policy{}, iss.Err()
	}
	if ast.OutputType() != cel.BoolType {
		return cairn.Policy{}, fmt.Errorf("the expression gives %s, not bool", ast.OutputType())
	}
	prg, err := env.Program(ast)
	if err != nil {
		return cairn.Policy{}, err
	}
	return cairn.PolicyFunc(expr, func(raw json.RawMessage) (bool, error) {
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return false, err
		}
		out, _, err := prg.Eval(map[string]any{name: v})
		if err != nil {
			return false, fmt.Errorf("expression %q: %w", expr, err)
		}
		b, ok := out.Value().(bool)
		if !ok {
			return false, fmt.Errorf("expression %q gave %v, not a bool", expr, out.Value())
		}
		return b, nil
	}), nil
}
