package config

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"text/template"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/command"
	"github.com/cairnhq/cairn/internal/suggest"
	"github.com/cairnhq/cairn/session"
)

func (l *loader) tool(name string, tc ToolConfig) (*cairn.Tool, error) {
	p := "tools." + name
	if !toolName.MatchString(name) {
		return nil, l.errf(p, "tool names are 1–64 letters, digits, _ or -")
	}
	if tc.Builtin != "" && len(tc.Command) > 0 {
		return nil, l.errf(p+".command", "a builtin tool has no command")
	}
	switch tc.Kind {
	case "", "command":
	case "client":
		return l.clientTool(name, tc)
	default:
		return nil, l.errf(p+".kind", "unknown kind %q; a tool is run by Cairn (a command or a builtin; no kind) or by the caller (kind: client)", tc.Kind)
	}
	if tc.ResultSchema != nil && tc.Wait == nil {
		return nil, l.errf(p+".result_schema", "only a tool whose result arrives later has one: add wait: {timeout: …}, or kind: client")
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
	if err := l.checkRequired(p+".parameters", params); err != nil {
		return nil, err
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
	l.warnRule(p+".approval", tc.Approval, params)
	if err := l.approvers(p, tc, t, params); err != nil {
		return nil, err
	}
	if t.ResultSchema, err = l.resultSchema(p, tc.ResultSchema); err != nil {
		return nil, err
	}
	if tc.Wait != nil {
		if tc.Builtin != "" {
			return nil, l.errf(p+".wait", "a builtin tool answers at once; only a command tool waits")
		}
		if t.Wait, err = l.wait(p+".wait", *tc.Wait); err != nil {
			return nil, err
		}
	}
	if err := l.escalations(p, tc, t, params); err != nil {
		return nil, err
	}
	if tc.Preview != nil && t.Approval.IsNever() {
		return nil, l.errf(p+".preview", "a preview is shown to the person approving a call, and this tool never asks: set approval (always, or a CEL condition)")
	}
	if err := l.preview(p, name, tc.Preview, t); err != nil {
		return nil, err
	}
	if tc.Builtin == "echo" {
		// Answers with its arguments, in process: for demos and load tests
		// that should measure Cairn, not a forked command.
		t.Handler = func(ctx context.Context, args json.RawMessage) (string, error) { return string(args), nil }
		t.Runs = "the built-in echo: answers with its arguments"
	} else {
		t.Handler = command.Tool(name, tc.Command, l.dir, tc.Wait != nil)
		t.Runs = "the command " + shellLine(tc.Command)
	}
	return t, nil
}

// clientTool is a tool the caller runs: parameters, a result schema and
// approval settings, and no command.
func (l *loader) clientTool(name string, tc ToolConfig) (*cairn.Tool, error) {
	p := "tools." + name
	switch {
	case len(tc.Command) > 0:
		return nil, l.errf(p+".command", "a client tool has no command: the caller runs it and sends the result")
	case tc.Builtin != "":
		return nil, l.errf(p+".builtin", "a client tool is not a builtin: the caller runs it")
	case tc.Wait != nil:
		return nil, l.errf(p+".wait", "a client tool waits for the caller, with no deadline here")
	case tc.Timeout != "":
		return nil, l.errf(p+".timeout", "a client tool does not run here, so it has no timeout")
	}
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
	if err := l.checkRequired(p+".parameters", params); err != nil {
		return nil, err
	}
	spec := &cairn.Tool{Name: name, Description: tc.Description, Parameters: b, Confirmation: tc.Confirmation}
	if spec.ResultSchema, err = l.resultSchema(p, tc.ResultSchema); err != nil {
		return nil, err
	}
	if spec.Approval, err = approvalPolicy(tc.Approval); err != nil {
		return nil, l.errf(p+".approval", "%v", err)
	}
	l.warnRule(p+".approval", tc.Approval, params)
	if err := l.approvers(p, tc, spec, params); err != nil {
		return nil, err
	}
	if err := l.escalations(p, tc, spec, params); err != nil {
		return nil, err
	}
	return cairn.ClientTool(spec), nil
}

// approvers reads a tool's approvers and approval_rules into t.
func (l *loader) approvers(p string, tc ToolConfig, t *cairn.Tool, params map[string]any) error {
	if err := l.standingRules(p+".standing_rules", tc.StandingRules, t); err != nil {
		return err
	}
	if tc.Approvers == nil && len(tc.ApprovalRules) == 0 {
		return nil
	}
	if t.Approval.IsNever() {
		return l.errf(p+".approvers", "says who approves calls that never wait for approval: set approval (always, or a CEL rule over args)")
	}
	if tc.Approvers != nil {
		a, err := l.approversOf(p+".approvers", *tc.Approvers)
		if err != nil {
			return err
		}
		t.Approvers = a
	}
	for i, rc := range tc.ApprovalRules {
		rp := fmt.Sprintf("%s.approval_rules[%d]", p, i)
		if strings.TrimSpace(rc.If) == "" {
			return l.errf(rp+".if", "is required: a CEL condition over args, such as 'args.amount > 1000'")
		}
		cond, err := celPolicy("args", rc.If)
		if err != nil {
			return l.errf(rp+".if", "not a valid CEL condition over args: %v", err)
		}
		l.warnRule(rp+".if", rc.If, params)
		a, err := l.approversOf(rp, rc.ApproversConfig)
		if err != nil {
			return err
		}
		t.ApprovalRules = append(t.ApprovalRules, cairn.ApprovalRule{If: cond, Approvers: *a})
	}
	return nil
}

// escalations reads a tool's escalation and on_expiry, and its approval
// rules' own, into t (after approvers and wait).
func (l *loader) escalations(p string, tc ToolConfig, t *cairn.Tool, params map[string]any) error {
	var err error
	mayWait := !t.Approval.IsNever() || t.Wait != nil
	if t.Escalation, err = l.escalation(p, tc.Escalation, tc.OnExpiry, t, mayWait, params); err != nil {
		return err
	}
	for i, rc := range tc.ApprovalRules {
		rp := fmt.Sprintf("%s.approval_rules[%d]", p, i)
		if t.ApprovalRules[i].Escalation, err = l.escalation(rp, rc.Escalation, rc.OnExpiry, t, mayWait, params); err != nil {
			return err
		}
	}
	return nil
}

// escalation reads one escalation and on_expiry at key path p; nil when
// neither is set. Rules are named by their key paths. mayWait says
// whether t's calls may wait for a person at all.
func (l *loader) escalation(p string, steps []EscalationStepConfig, oc *OnExpiryConfig, t *cairn.Tool, mayWait bool, params map[string]any) (*cairn.Escalation, error) {
	if len(steps) == 0 && oc == nil {
		return nil, nil
	}
	deadline := t.ApprovalTTL > 0 || (t.Wait != nil && t.Wait.Timeout > 0)
	if !mayWait {
		return nil, l.errf(p+".escalation", "reminds about approvals and waits, but the tool's calls neither wait for approval (set approval) nor wait on a system (set wait)")
	}
	esc := &cairn.Escalation{}
	for i, sc := range steps {
		sp := fmt.Sprintf("%s.escalation[%d]", p, i)
		step := cairn.EscalationStep{Remind: sc.Remind, EscalateTo: sc.EscalateTo, HandOver: sc.HandOver, Rule: sp}
		switch {
		case (sc.After == "") == (sc.BeforeExpiry == ""):
			return nil, l.errf(sp, "give after (a duration since the approval was asked) or before_expiry (before its deadline), one of them")
		case sc.After != "":
			d, err := time.ParseDuration(sc.After)
			if err != nil || d <= 0 {
				return nil, l.errf(sp+".after", "%q is not a positive duration like 30m", sc.After)
			}
			step.After = d
		default:
			d, err := time.ParseDuration(sc.BeforeExpiry)
			if err != nil || d <= 0 {
				return nil, l.errf(sp+".before_expiry", "%q is not a positive duration like 10m", sc.BeforeExpiry)
			}
			if !deadline {
				return nil, l.errf(sp+".before_expiry", "counts back from a deadline the tool does not have: set approval_ttl (or wait.timeout)")
			}
			step.BeforeExpiry = d
		}
		switch {
		case !sc.Remind && len(sc.EscalateTo) == 0:
			return nil, l.errf(sp, "does nothing: set remind: true, escalate_to: [groups], or both")
		case sc.HandOver && len(sc.EscalateTo) == 0:
			return nil, l.errf(sp+".hand_over", "hands the decision to no group: set escalate_to")
		}
		for j, g := range sc.EscalateTo {
			if strings.TrimSpace(g) == "" {
				return nil, l.errf(fmt.Sprintf("%s.escalate_to[%d]", sp, j), "is empty: name a group of the tokens or the identity provider")
			}
		}
		esc.Steps = append(esc.Steps, step)
	}
	if oc != nil {
		op := p + ".on_expiry"
		if t.ApprovalTTL <= 0 {
			return nil, l.errf(op, "says what happens at an approval's deadline, but the tool has none: set approval_ttl")
		}
		rule := &cairn.ExpiryRule{Action: cairn.ExpiryAction(oc.Action), Reason: oc.Reason, Question: oc.Question, Rule: op}
		switch rule.Action {
		case cairn.ExpiryReject, cairn.ExpiryFail:
		case cairn.ExpiryApprove:
			if strings.TrimSpace(oc.If) == "" {
				return nil, l.errf(op+".if", "is required with approve: a CEL condition over args, such as 'args.amount < 100' (approving every call unattended is approval: never)")
			}
			cond, err := celPolicy("args", oc.If)
			if err != nil {
				return nil, l.errf(op+".if", "not a valid CEL condition over args: %v", err)
			}
			l.warnRule(op+".if", oc.If, params)
			rule.If = cond
		case cairn.ExpiryAsk:
			if strings.TrimSpace(oc.Question) == "" {
				return nil, l.errf(op+".question", "is required with ask: what the approvers are asked once the deadline passed")
			}
		default:
			return nil, l.errf(op+".action", "%q is none of reject, approve, fail, ask", oc.Action)
		}
		if oc.If != "" && rule.Action != cairn.ExpiryApprove {
			return nil, l.errf(op+".if", "is the condition of approve, not of %s", oc.Action)
		}
		esc.OnExpiry = rule
	}
	return esc, nil
}

// approversOf checks one approvers entry at key path p.
func (l *loader) approversOf(p string, ac ApproversConfig) (*cairn.Approvers, error) {
	if ac.Count < 0 {
		return nil, l.errf(p+".count", "%d is negative: say how many distinct people approve (2 for four-eyes)", ac.Count)
	}
	for i, g := range ac.Groups {
		if strings.TrimSpace(g) == "" {
			return nil, l.errf(fmt.Sprintf("%s.groups[%d]", p, i), "is empty: name a group of the tokens or the identity provider")
		}
	}
	return &cairn.Approvers{Groups: ac.Groups, Count: ac.Count, NotRequester: ac.NotRequester}, nil
}

// warnRule notes, for Preflight, what an approval rule at key path p
// reads that the parameters do not have.
func (l *loader) warnRule(p, rule string, params map[string]any) {
	switch strings.TrimSpace(rule) {
	case "", "never", "always":
		return
	}
	props, _ := params["properties"].(map[string]any)
	l.warnings = append(l.warnings, ruleReadsUnknownArgs(p, rule, props)...)
}

// resultSchema checks a tool's result_schema; nil when there is none.
func (l *loader) resultSchema(p string, doc map[string]any) (json.RawMessage, error) {
	if doc == nil {
		return nil, nil
	}
	b, err := json.Marshal(doc)
	if err == nil {
		err = cairn.CheckSchema(b)
	}
	if err != nil {
		return nil, l.errf(p+".result_schema", "not a valid JSON Schema: %v", err)
	}
	if err := l.checkRequired(p+".result_schema", doc); err != nil {
		return nil, err
	}
	return b, nil
}

// wait checks a tool's wait: {timeout, on_timeout, retries}.
func (l *loader) wait(p string, wc WaitConfig) (*cairn.Wait, error) {
	w := &cairn.Wait{OnTimeout: cairn.OnTimeout(wc.OnTimeout), Retries: wc.Retries}
	if wc.Timeout != "" {
		d, err := time.ParseDuration(wc.Timeout)
		if err != nil || d <= 0 {
			return nil, l.errf(p+".timeout", "%q is not a positive duration like 30m or 2h", wc.Timeout)
		}
		w.Timeout = d
	}
	switch w.OnTimeout {
	case "", cairn.OnTimeoutError, cairn.OnTimeoutRetry, cairn.OnTimeoutAsk:
	default:
		return nil, l.errf(p+".on_timeout", "%q is not error (the model is told), retry (the command runs again) or ask (a person decides)", wc.OnTimeout)
	}
	if w.OnTimeout != "" && w.Timeout == 0 {
		return nil, l.errf(p+".on_timeout", "there is no timeout to act on: add timeout: 30m (or the like)")
	}
	if wc.Retries < 0 || (wc.Retries > 0 && w.OnTimeout != cairn.OnTimeoutRetry) {
		return nil, l.errf(p+".retries", "bounds on_timeout: retry; give a positive number with it")
	}
	return w, nil
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
	return cairn.PolicyCEL(name, expr)
}

// shellLine writes argv as a shell would read it back, quoting the words
// that need it, for the approver to read what a call runs.
func shellLine(argv []string) string {
	words := make([]string, len(argv))
	for i, w := range argv {
		if w != "" && !strings.ContainsFunc(w, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r))
		}) {
			words[i] = w
			continue
		}
		words[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
	}
	return strings.Join(words, " ")
}

// preview reads a tool's preview: (p is the tool's key path) into
// t.Preview: a command's stdout, or an MCP tool's result, read as its
// format.
func (l *loader) preview(p, name string, pc *PreviewConfig, t *cairn.Tool) error {
	if pc == nil {
		return nil
	}
	p += ".preview"
	format := cairn.PreviewFormat(cmp.Or(pc.Format, string(cairn.PreviewText)))
	if !format.Known() {
		return l.errf(p+".format", "%q is not a preview format; use text, diff or json", pc.Format)
	}
	timeout, err := l.duration(p+".timeout", pc.Timeout, 0) // 0: the runner's default
	if err != nil {
		return err
	}
	t.PreviewTimeout = timeout
	switch {
	case len(pc.Command) > 0 && pc.MCP != "":
		return l.errf(p, "give command or mcp, not both")
	case len(pc.Command) > 0:
		run := command.Preview(name, pc.Command, l.dir, cairn.MaxPreviewBytes)
		t.Preview = func(ctx context.Context, args json.RawMessage) (cairn.Preview, error) {
			out, cut, err := run(ctx, args)
			if err != nil {
				return cairn.Preview{}, err
			}
			if cut && format == cairn.PreviewJSON {
				return cairn.Preview{}, fmt.Errorf("the preview printed more than %d bytes of JSON", cairn.MaxPreviewBytes)
			}
			pv := session.PreviewOfOutput(format, out)
			pv.Truncated = pv.Truncated || cut // what Normalize cuts next says so too
			return pv, nil
		}
	case pc.MCP != "":
		server, tool, ok := strings.Cut(pc.MCP, ".")
		if !ok || server == "" || tool == "" {
			return l.errf(p+".mcp", "%q is not SERVER.TOOL, an MCP server's tool to call with the call's arguments", pc.MCP)
		}
		if l.hub != nil { // an MCP tool's override, read once its server runs
			if names := l.hub.ToolNames(server); !slices.Contains(names, tool) {
				return l.errf(p+".mcp", "MCP server %s has no tool %q; its tools: %s%s", server, tool, strings.Join(names, ", "), suggest.Hint(tool, names))
			}
		}
		l.previewTools = append(l.previewTools, keyed[string]{p + ".mcp", pc.MCP})
		t.Preview = func(ctx context.Context, args json.RawMessage) (cairn.Preview, error) {
			if l.hub == nil {
				return cairn.Preview{}, fmt.Errorf("the MCP server %s is not connected", server)
			}
			out, err := l.hub.CallText(ctx, server, tool, args)
			if err != nil {
				return cairn.Preview{}, err
			}
			return session.PreviewOfOutput(format, out), nil
		}
	default:
		return l.errf(p, "give command (the argv of a dry run: arguments on stdin, stdout is the preview) or mcp (SERVER.TOOL)")
	}
	return nil
}

// standingRules reads a tool's standing_rules: {allow, max_duration}.
func (l *loader) standingRules(p string, c *StandingRulesConfig, t *cairn.Tool) error {
	if c == nil {
		return nil
	}
	if c.Allow != nil && !*c.Allow {
		if c.MaxDuration != "" {
			return l.errf(p+".max_duration", "rules are not allowed (allow: false): drop max_duration")
		}
		t.StandingRules.Forbidden = true
		return nil
	}
	if c.MaxDuration == "" {
		return nil
	}
	d, unbounded, err := session.ParseRuleDuration(c.MaxDuration)
	switch {
	case err != nil:
		return l.errf(p+".max_duration", "%v; or unbounded", err)
	case unbounded:
		t.StandingRules.Unbounded, t.StandingRules.MaxDuration = true, 100*365*24*time.Hour
	default:
		t.StandingRules.MaxDuration = d
	}
	return nil
}
