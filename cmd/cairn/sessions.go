package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/suggest"
	"github.com/cairnhq/cairn/session"
)

// client talks to a running cairn server.
type client struct {
	base  string
	token string
	http  *http.Client
}

func (c *client) do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.base, "/")+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w (is `cairn serve` running at %s?)", method, path, err, c.base)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		var e struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		if json.Unmarshal(data, &e) == nil && e.Error.Code != "" {
			return fmt.Errorf("%d %s: %s", resp.StatusCode, e.Error.Code, e.Error.Message)
		}
		return fmt.Errorf("%s %s: HTTP %d: %s", method, path, resp.StatusCode, bytes.TrimSpace(data))
	}
	return json.Unmarshal(data, out)
}

func newSessionsCmd(stdout io.Writer) *cobra.Command {
	c := &client{http: &http.Client{Timeout: 10 * time.Minute}}
	cmd := &cobra.Command{
		Use:   "sessions",
		Short: "List, inspect and decide sessions on a running server",
	}
	cmd.PersistentFlags().StringVar(&c.base, "server", envOr("CAIRN_SERVER", "http://127.0.0.1:8080"), "server URL (env CAIRN_SERVER)")
	cmd.PersistentFlags().StringVar(&c.token, "token", os.Getenv("CAIRN_TOKEN"), "bearer token (env CAIRN_TOKEN)")

	var status string
	list := &cobra.Command{
		Use:   "list",
		Short: "List sessions, most recent first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var out struct{ Sessions []cairn.Session }
			if err := c.do(cmd.Context(), "GET", "/v1/sessions?status="+url.QueryEscape(status), nil, &out); err != nil {
				return err
			}
			tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tSTATUS\tAGENT\tSEQ\tUPDATED\tWAITS FOR / OUTPUT")
			for _, s := range out.Sessions {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", s.ID, s.Status, s.Agent, s.Seq, s.UpdatedAt.Local().Format(time.DateTime), brief(&s))
			}
			return tw.Flush()
		},
	}
	list.Flags().StringVar(&status, "status", "", "only sessions with this status (paused, completed, …)")

	show := &cobra.Command{
		Use:   "show SESSION",
		Short: "Show a session and its timeline (the audit trail)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var s cairn.Session
			if err := c.do(cmd.Context(), "GET", "/v1/sessions/"+url.PathEscape(args[0]), nil, &s); err != nil {
				return err
			}
			var evs struct{ Events []cairn.Event }
			if err := c.do(cmd.Context(), "GET", "/v1/sessions/"+url.PathEscape(args[0])+"/events", nil, &evs); err != nil {
				return err
			}
			var record struct{ Summary string }
			if err := c.do(cmd.Context(), "GET", "/v1/sessions/"+url.PathEscape(args[0])+"/audit", nil, &record); err != nil {
				return err
			}
			printSession(stdout, &s, record.Summary, evs.Events)
			return nil
		},
	}

	decide := func(use, short string, action cairn.Action) *cobra.Command {
		var reason, text, arguments, content, output string
		var remember, rule bool
		var grant cairn.RuleGrant
		var selectors []string
		var limit int
		bulk := action == cairn.ActionApprove || action == cairn.ActionReject
		args := cobra.RangeArgs(1, 2)
		if bulk {
			args = func(cmd *cobra.Command, a []string) error {
				if len(selectors) > 0 {
					if len(a) > 0 {
						return errors.New("with --select, name no session: the selector picks the calls")
					}
					return nil
				}
				return cobra.RangeArgs(1, 2)(cmd, a)
			}
		}
		d := &cobra.Command{
			Use:   use,
			Short: short,
			Args:  args,
			RunE: func(cmd *cobra.Command, args []string) error {
				ctx := cmd.Context()
				if len(selectors) > 0 {
					return c.decideSelected(ctx, stdout, action, selectors, reason, limit)
				}
				var s cairn.Session
				if err := c.do(ctx, "GET", "/v1/sessions/"+url.PathEscape(args[0]), nil, &s); err != nil {
					return err
				}
				id, err := pickInterrupt(&s, args[1:])
				if err != nil {
					return err
				}
				dec := cairn.Decision{InterruptID: id, Action: action, Reason: reason, Text: text}
				if arguments != "" {
					if !json.Valid([]byte(arguments)) {
						return fmt.Errorf("--args is not valid JSON: %s", arguments)
					}
					dec.Arguments = json.RawMessage(arguments)
				}
				if content != "" {
					if !json.Valid([]byte(content)) {
						return fmt.Errorf("--content is not valid JSON: %s", content)
					}
					dec.Content = json.RawMessage(content)
				}
				if action == cairn.ActionEdit {
					if !json.Valid([]byte(output)) {
						return fmt.Errorf("--output must be the edited answer, a JSON value matching the agent's output schema; got %q", output)
					}
					dec.Output = json.RawMessage(output)
				}
				if action == cairn.ActionComplete {
					if !json.Valid([]byte(output)) {
						return fmt.Errorf("--output must be the call's result, a JSON value (quote text: '\"done\"') matching the tool's result schema; got %q", output)
					}
					dec.Output = json.RawMessage(output)
				}
				if action == cairn.ActionAnswer && text == "" && content == "" && !urlQuestion(&s, id) {
					return errors.New("give --text (the answer), or --content (a JSON object) for a question with a schema")
				}
				if remember {
					dec.Remember = cairn.RememberSession
				}
				if rule {
					g := grant
					dec.Rule = &g
				}
				return c.post(ctx, stdout, "/v1/sessions/"+url.PathEscape(s.ID)+"/decisions", map[string]any{"seq": s.Seq, "decisions": []cairn.Decision{dec}})
			},
		}
		if bulk {
			d.Flags().StringSliceVar(&selectors, "select", nil, "decide every pending call that matches, across sessions (one request: POST /v1/decisions): tool=NAME, agent=NAME, kind=KIND, session=ID (repeat or comma-separate)")
			d.Flags().IntVar(&limit, "limit", 0, "with --select: at most this many calls (default 100, at most 1000)")
		}
		if bulk {
			d.Flags().BoolVar(&rule, "rule", false, "grant a standing rule: decide the tool's later matching calls the same way, without asking (docs/rules.md)")
			d.Flags().StringVar(&grant.If, "rule-if", "", "with --rule: the CEL condition over args a call must meet (default: every call)")
			d.Flags().StringVar((*string)(&grant.Scope), "rule-scope", "", "with --rule: session, agent (default) or tenant")
			d.Flags().StringVar(&grant.Duration, "rule-for", "", "with --rule: how long, like 72h or 30d (default 30d, or the tool's maximum)")
		}
		switch action {
		case cairn.ActionApprove:
			d.Flags().StringVar(&arguments, "args", "", "replacement arguments (JSON), validated against the tool's schema")
			d.Flags().BoolVar(&remember, "remember", false, "approve this tool for the rest of the session")
		case cairn.ActionReject:
			d.Flags().StringVar(&reason, "reason", "", "why (the model sees it)")
			d.Flags().BoolVar(&remember, "remember", false, "refuse this tool, with this reason, for the rest of the session")
		case cairn.ActionAnswer:
			d.Flags().StringVar(&text, "text", "", "the answer")
			d.Flags().StringVar(&content, "content", "", "the answer to a question with a schema: a JSON object valid under it")
		case cairn.ActionEdit:
			d.Flags().StringVar(&output, "output", "", "the edited answer: a JSON value matching the agent's output schema")
		case cairn.ActionComplete:
			d.Flags().StringVar(&output, "output", "", "the call's result: a JSON value matching the tool's result schema")
		case cairn.ActionFail:
			d.Flags().StringVar(&reason, "reason", "", "why the work failed (the model sees it)")
		}
		return d
	}
	cmd.AddCommand(list, show, newPurgeCmd(stdout), c.startCmd(stdout), c.sendCmd(stdout), c.cancelCmd(stdout), c.forkCmd(stdout), c.tailCmd(stdout),
		decide("approve SESSION [INTERRUPT] | --select tool=NAME", "Approve a pending call (the only one if INTERRUPT is omitted), or with --select every call that matches", cairn.ActionApprove),
		decide("reject SESSION [INTERRUPT] | --select tool=NAME", "Reject a pending call, or with --select every call that matches; the model sees --reason", cairn.ActionReject),
		decide("answer SESSION [INTERRUPT]", "Answer a question a tool asked", cairn.ActionAnswer),
		decide("edit SESSION [INTERRUPT]", "Replace an answer under review with --output and let it go (approve lets it go as it is; reject sends it back with --reason)", cairn.ActionEdit),
		decide("complete SESSION [INTERRUPT]", "Complete a call that waits on a system or the caller, with its result (--output)", cairn.ActionComplete),
		decide("fail SESSION [INTERRUPT]", "Fail a call that waits on a system or the caller; the model sees --reason", cairn.ActionFail),
	)
	return cmd
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func pickInterrupt(s *cairn.Session, args []string) (string, error) {
	if len(args) == 1 {
		return args[0], nil
	}
	var ids []string
	for _, in := range s.Interrupts {
		if !in.Ask().Reply {
			ids = append(ids, in.ID)
		}
	}
	switch len(ids) {
	case 1:
		return ids[0], nil
	case 0:
		return "", fmt.Errorf("session %s has no pending decision (status %s)", s.ID, s.Status)
	}
	return "", fmt.Errorf("session %s has %d pending interrupts; name one: %s", s.ID, len(ids), strings.Join(ids, ", "))
}

// decideSelected decides the pending calls selectors pick in one bulk
// request and prints a line per call: what happened to it.
func (c *client) decideSelected(ctx context.Context, stdout io.Writer, action cairn.Action, selectors []string, reason string, limit int) error {
	sel := &cairn.Selector{}
	for _, s := range selectors {
		key, value, ok := strings.Cut(s, "=")
		if !ok || value == "" {
			return fmt.Errorf("--select %q: use KEY=VALUE, with KEY tool, agent, kind or session", s)
		}
		switch key {
		case "tool":
			sel.Tool = value
		case "agent":
			sel.Agent = value
		case "kind":
			sel.Kind = cairn.Kind(value)
		case "session":
			sel.SessionIDs = append(sel.SessionIDs, value)
		default:
			return fmt.Errorf("--select %q: %q is not tool, agent, kind or session%s", s, key, suggest.Hint(key, []string{"tool", "agent", "kind", "session"}))
		}
	}
	var out cairn.BulkResponse
	if err := c.do(ctx, "POST", "/v1/decisions", cairn.BulkRequest{Select: sel, Action: action, Reason: reason, Limit: limit}, &out); err != nil {
		return err
	}
	failed := 0
	for _, r := range out.Results {
		line := fmt.Sprintf("%s %s: %sd", r.SessionID, r.InterruptID, action)
		if r.Status == 200 {
			line += ", the session is " + string(r.SessionStatus)
		} else {
			failed++
			line = fmt.Sprintf("%s %s: %d %s: %s", r.SessionID, r.InterruptID, r.Status, r.Error.Code, r.Error.Message)
		}
		fmt.Fprintln(stdout, line)
	}
	fmt.Fprintf(stdout, "batch %s: %d of %d %sd\n", out.Batch, len(out.Results)-failed, len(out.Results), action)
	return nil
}

// askLine is one line on an interrupt, from its Ask: what it is, what to
// read, and the commands that decide it ("approve [--arguments]").
func askLine(in cairn.Interrupt) string {
	ask := in.Ask()
	line := ask.Label + ": "
	if ask.Subject != "" && !strings.Contains(ask.Text, ask.Subject) {
		line += ask.Subject + ": "
	}
	line += ask.Text
	if ask.Link != "" {
		line += " (open " + ask.Link + ")"
	}
	if len(in.Output) > 0 {
		line += " " + string(in.Output)
	}
	if ask.Warning != "" {
		line += " — " + ask.Warning
	}
	if ask.Reply {
		return line + " (reply with cairn sessions send)"
	}
	if who := whoDecides(in); who != "" {
		line += " [" + who + "]"
	}
	if in.MayDecide != nil && !*in.MayDecide {
		return line + " (you may see this; someone else decides it)"
	}
	var cmds []string
	for _, c := range ask.Choices {
		cmd := string(c.Action)
		if c.Field != "" {
			flag := "--" + string(c.Field)
			if c.Field == session.FieldArguments {
				flag = "--args"
			}
			if c.Optional {
				flag = "[" + flag + "]"
			}
			cmd += " " + flag
		}
		cmds = append(cmds, cmd)
	}
	if len(cmds) > 0 {
		line += " (" + strings.Join(cmds, ", ") + ")"
	}
	return line
}

// whoDecides says who may approve a call and its approvals so far, as the
// page does: "finance-leads, 1 of 2 approvals: fin1".
func whoDecides(in cairn.Interrupt) string {
	var parts []string
	if a := in.Approvers; a != nil && len(a.Groups) > 0 {
		parts = append(parts, strings.Join(a.Groups, " or "))
	}
	if in.Required > 1 {
		var names []string
		for _, ap := range in.Approvals {
			names = append(names, ap.Actor.Who())
		}
		got := fmt.Sprintf("%d of %d approvals", len(in.Approvals), in.Required)
		if len(names) > 0 {
			got += ": " + strings.Join(names, ", ")
		}
		parts = append(parts, got)
	}
	return strings.Join(parts, ", ")
}

// brief is one line on what a session waits for, or what it said.
func brief(s *cairn.Session) string {
	if len(s.Interrupts) > 0 {
		in := s.Interrupts[0]
		more := ""
		if len(s.Interrupts) > 1 {
			more = fmt.Sprintf(" (+%d more)", len(s.Interrupts)-1)
		}
		return askLine(in) + more
	}
	if s.Error != nil {
		return "error: " + s.Error.Message
	}
	return oneLine(s.Output, 80)
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		n--
		for n > 0 && !utf8.RuneStart(s[n]) { // not inside a character
			n--
		}
		return s[:n] + "…"
	}
	return s
}

// clip cuts s after n characters and says how many more there were: a
// terminal shows a long value's start, not 100,000 characters.
func clip(s string, n int) string {
	head, rest := session.Fold(s, n)
	if rest == "" {
		return s
	}
	return head + fmt.Sprintf("… (%d more characters)", utf8.RuneCountInString(rest))
}

// printSession prints a session, what its record proves (record: the
// audit summary) and its timeline.
func printSession(w io.Writer, s *cairn.Session, record string, evs []cairn.Event) {
	fmt.Fprintf(w, "session %s  agent %s  status %s  seq %d\n", s.ID, s.Agent, s.Status, s.Seq)
	if s.Owner != "" {
		fmt.Fprintf(w, "owner   %s\n", s.Owner)
	}
	if f := s.ForkedFrom; f != nil {
		fmt.Fprintf(w, "forked  from %s at %d\n", f.SessionID, f.Seq)
	}
	if d := s.Definition; d != nil {
		fmt.Fprintf(w, "version %s (%s)\n", shortHash(d.Hash), versionNote(d.Current))
	}
	for _, in := range s.Interrupts {
		fmt.Fprintf(w, "waits   %s %s\n", in.ID, brief(&cairn.Session{Interrupts: []cairn.Interrupt{in}}))
		if note := deadlineNote(in, time.Now()); note != "" {
			fmt.Fprintf(w, "        %s\n", note)
		}
		fmt.Fprint(w, previewBlock(in.Preview, "        ", maxPreviewLines))
	}
	if s.Output != "" {
		fmt.Fprintf(w, "output  %s\n", oneLine(s.Output, 200))
	}
	if record != "" {
		fmt.Fprintf(w, "record  %s\n", record)
	}
	fmt.Fprintln(w, "\ntimeline (⑂: a point to fork at, cairn sessions fork --seq N):")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, ev := range evs {
		mark := ""
		if ev.Type.IsForkPoint() {
			mark = "⑂"
		}
		fmt.Fprintf(tw, "%d%s\t%s\t%s\t%s\t%s\n", ev.Seq, mark, ev.Time.Local().Format("15:04:05.000"), ev.Agent, ev.Type, describe(ev))
	}
	tw.Flush()
}

// maxPreviewLines is how many lines of a preview a terminal shows; the
// rest is counted (the page and the API have it whole).
const maxPreviewLines = 60

// previewBlock is a call's preview as a terminal shows it: a heading
// ("preview (diff):"), then its lines indented, at most maxLines of them;
// "" when there is none. The writer marks hidden characters (visible.go).
func previewBlock(p *cairn.Preview, indent string, maxLines int) string {
	if p == nil {
		return ""
	}
	if p.Error != "" {
		return indent + "preview failed: " + p.Error + "\n"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%spreview (%s):\n", indent, p.Format)
	lines := strings.Split(strings.TrimRight(p.Text(), "\n"), "\n")
	for i, line := range lines {
		if i == maxLines {
			fmt.Fprintf(&b, "%s  … %d more lines\n", indent, len(lines)-maxLines)
			break
		}
		b.WriteString(indent + "  " + line + "\n")
	}
	return b.String()
}

// deadlineNote says when an interrupt must be decided by, what its
// schedule did and does next, and what happens at its deadline
// (docs/escalation.md): "decide by 12:03:00 UTC (in 14m); reminded;
// escalated to finance-leads; next: escalate to cfo at 11:55:00 UTC; then:
// rejected (Nobody approved in time.)". "" for an interrupt with none.
func deadlineNote(in cairn.Interrupt, now time.Time) string {
	var parts []string
	if in.ExpiresAt != nil {
		parts = append(parts, fmt.Sprintf("decide by %s (in %s)", in.ExpiresAt.UTC().Format("15:04:05 UTC"), max(in.ExpiresAt.Sub(now), 0).Round(time.Second)))
	}
	var next *cairn.ScheduledStep
	for i, st := range in.Schedule {
		switch {
		case st.FiredAt == nil && next == nil:
			next = &in.Schedule[i]
		case st.FiredAt != nil && len(st.EscalateTo) > 0:
			parts = append(parts, "escalated to "+strings.Join(st.EscalateTo, ", "))
		case st.FiredAt != nil:
			parts = append(parts, "reminded")
		}
	}
	if next != nil {
		what := "a reminder"
		if len(next.EscalateTo) > 0 {
			what = "escalate to " + strings.Join(next.EscalateTo, ", ")
		}
		parts = append(parts, fmt.Sprintf("next: %s at %s", what, next.At.UTC().Format("15:04:05 UTC")))
	}
	if o := in.OnExpiry; o != nil && in.ExpiresAt != nil {
		then := map[cairn.ExpiryAction]string{cairn.ExpiryReject: "rejected", cairn.ExpiryApprove: "approved", cairn.ExpiryFail: "the session fails", cairn.ExpiryAsk: "asked again"}[o.Action]
		if o.Reason != "" {
			then += " (" + session.Visible(o.Reason) + ")"
		}
		parts = append(parts, "then: "+then)
	}
	return strings.Join(parts, "; ")
}

// actorOf names who made a decision: "ana (approver)", or "anonymous"
// when the server had no auth.
func actorOf(a cairn.Actor) string {
	switch {
	case a.Name == "" && a.Role == "":
		return "anonymous"
	case a.Role == "":
		return a.Name
	case a.Name == "":
		return "(" + a.Role + ")"
	}
	return a.Name + " (" + a.Role + ")"
}

// describe summarises an event's data for the timeline.
// shortHash is a definition's hash as people compare them: its first
// twelve hex digits, as git shortens commits.
func shortHash(h string) string {
	hex := strings.TrimPrefix(h, "sha256:")
	if len(hex) > 12 {
		hex = hex[:12]
	}
	return hex
}

func versionNote(current bool) string {
	if current {
		return "the agent's current definition"
	}
	return "not the current definition: the configuration changed since the session started"
}

func describe(ev cairn.Event) string {
	p, err := session.DecodeEvent(ev)
	if err != nil {
		return ""
	}
	switch d := p.(type) {
	case *session.DefinitionChanged:
		return fmt.Sprintf("from %s to %s (on_new_version: latest)", shortHash(d.From), shortHash(d.To))
	case *session.UserMessage:
		return oneLine(d.Text, 80)
	case *session.AgentMessage:
		return oneLine(d.Text, 80)
	case *session.ModelResponse:
		if calls := d.Message.ToolCalls; len(calls) > 0 {
			var names []string
			for _, c := range calls {
				names = append(names, fmt.Sprintf("%s(%s)", c.Name, c.Arguments))
			}
			return "calls " + oneLine(strings.Join(names, ", "), 100)
		}
		return oneLine(d.Message.Content, 80)
	case *session.InterruptRequested:
		text := d.Interrupt.Message
		if d.Interrupt.Question != "" {
			text = d.Interrupt.Question
		}
		return fmt.Sprintf("%s %s", d.Interrupt.ID, oneLine(text, 80))
	case *session.DecisionMade:
		out := fmt.Sprintf("%s %s by %s", d.Action, d.Tool, actorOf(d.Actor))
		// What the person decided on, in full: the arguments approved (the
		// ones they put instead, and those the model asked for), the
		// answer, the result or the edited answer.
		switch {
		case len(d.NewArgs) > 0:
			out += fmt.Sprintf(" with %s (the model asked for %s)", oneLine(compact(d.NewArgs), 200), oneLine(compact(d.Arguments), 200))
		case len(d.Arguments) > 0 && d.Action == session.ActionApprove:
			out += " with " + oneLine(compact(d.Arguments), 200)
		case len(d.Arguments) > 0:
			out += " of " + oneLine(compact(d.Arguments), 200)
		}
		if d.Text != "" {
			out += fmt.Sprintf(" answer %q", d.Text)
		}
		if len(d.Content) > 0 {
			out += " answer " + oneLine(compact(d.Content), 200)
		}
		if len(d.Output) > 0 {
			out += " output " + oneLine(compact(d.Output), 200)
		}
		if d.Reason != "" {
			out += ": " + d.Reason
		}
		if d.Remember != "" {
			out += " [remember " + d.Remember + "]"
		}
		if d.Granted != nil {
			out += " [granted standing rule " + d.Granted.ID + "]"
		}
		if d.Rule != "" {
			out += " (" + d.Rule + ")"
		}
		return out
	case *session.EscalationFired:
		what := "reminded"
		if len(d.EscalateTo) > 0 {
			what = "escalated to " + strings.Join(d.EscalateTo, ", ")
			if d.HandOver {
				what = "handed to " + strings.Join(d.EscalateTo, ", ")
			}
			if d.Remind {
				what += ", reminded"
			}
		}
		return fmt.Sprintf("%s %s %s (%s)", d.InterruptID, d.Tool, what, d.Rule)
	case *session.ToolStarted:
		return fmt.Sprintf("%s %s", d.Tool, compact(d.Arguments))
	case *session.ToolResult:
		prefix := ""
		if d.IsError {
			prefix = "error: "
		}
		return fmt.Sprintf("%s → %s%s", d.Tool, prefix, oneLine(d.Content, 80))
	case *session.FramePushed:
		return fmt.Sprintf("%s (%s) %s", d.Agent, d.Mode, d.Frame)
	case *session.FramePopped:
		return fmt.Sprintf("%s %s: %s", d.Frame, d.Reason, oneLine(d.Result, 60))
	case *session.Handoff:
		return "to " + d.Agent
	case *session.TurnCompleted:
		return oneLine(d.Output, 80)
	case *session.TurnFailed:
		return d.Error.Message
	case *session.SessionForked:
		return fmt.Sprintf("a fork of %s at %d", d.From.SessionID, d.From.Seq)
	}
	return ""
}

// compact is JSON on one line ("null" for none), as the timeline shows
// arguments.
func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if len(raw) == 0 || json.Compact(&b, raw) != nil {
		return "null"
	}
	return b.String()
}

// urlQuestion reports whether interrupt id asks the user to visit a URL
// (answered without text once done).
func urlQuestion(s *cairn.Session, id string) bool {
	for _, in := range s.Interrupts {
		if in.ID == id {
			return in.URL != ""
		}
	}
	return false
}
