package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/config"
	"github.com/cairnhq/cairn/internal/suggest"
	"github.com/cairnhq/cairn/session"
)

func newChatCmd(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	var cfgPath, agent, sessionID string
	var yes bool
	cmd := &cobra.Command{
		Use:   "chat",
		Short: "Talk to an agent in the terminal: approvals, questions and sub-agents included",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := config.Load(cfgPath)
			if err != nil {
				return err
			}
			defer cfg.Close()
			if err := cfg.Connect(cmd.Context()); err != nil {
				return err
			}
			if agent, err = pickAgent(cfg, agent); err != nil {
				return err
			}
			log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
			rt, err := openRuntime(cmd.Context(), cfg, cairn.RunnerOptions{AutoApprove: yes, Logger: log}, log, nil)
			if err != nil {
				return err
			}
			defer rt.Close()
			runner := rt.runner
			if len(cfg.Scripted) > 0 {
				fmt.Fprintf(stdout, "(model(s) %s are SCRIPTED: replies come from the config file)\n", strings.Join(cfg.Scripted, ", "))
			}
			if yes {
				fmt.Fprintln(stdout, "(--yes: every approval is granted automatically and recorded as such)")
			}
			c := &chatter{r: runner, in: bufio.NewScanner(stdin), out: stdout, agent: agent, editor: os.Getenv("EDITOR")}
			return c.run(cmd.Context(), sessionID)
		},
	}
	cmd.Flags().StringVar(&cfgPath, "config", "", "configuration file (YAML)")
	cmd.Flags().StringVar(&agent, "agent", "", "agent to talk to (default: main, or the first)")
	cmd.Flags().StringVar(&sessionID, "session", "", "continue this session (also one paused elsewhere) instead of starting one")
	cmd.Flags().BoolVar(&yes, "yes", false, "approve every gated tool call (each recorded as auto-approved)")
	_ = cmd.MarkFlagRequired("config")
	return cmd
}

// pickAgent checks --agent against the config, or picks main (or the first).
func pickAgent(cfg *config.Config, agent string) (string, error) {
	var names []string
	for _, a := range cfg.Agents {
		if a.Direct {
			continue // it takes calls (approvals, the gateway), not messages
		}
		names = append(names, a.Name)
		if agent == "" && a.Name == "main" {
			agent = "main"
		}
	}
	if len(names) == 0 {
		return "", fmt.Errorf("%s has no agent to chat with (it only takes approval requests and gateway calls): add one under agents", cfg.Path)
	}
	if agent == "" {
		return names[0], nil
	}
	for _, n := range names {
		if n == agent {
			return agent, nil
		}
	}
	return "", fmt.Errorf("--agent: unknown agent %q; the agents of %s are: %s%s", agent, cfg.Path, strings.Join(names, ", "), suggest.Hint(agent, names))
}

const chatHelp = `Type a message for the agent shown in the prompt. Commands:
  /help          this list
  /session       the session's id (continue it later with --session ID)
  /cancel        end the interactive agent on top of the stack
  /cancel all    cancel the whole turn
  /quit          leave (the session stays where it is)
When a call waits for approval: y approves, n rejects (then asks why),
a approves the tool for the rest of the session, r approves it and grants
a standing rule (asks its condition, pre-filled from the call, scope and
duration: later matching calls run without asking), e edits the arguments
($EDITOR, or JSON typed inline; JSON typed at the prompt is taken as new
arguments after you confirm), "never[: reason]" refuses the tool for the
rest of the session, and any other text rejects with that text as the
reason. The commands above work at every prompt: /cancel all there cancels
the turn instead of deciding.
`

// chatter is one terminal conversation.
type chatter struct {
	r      *cairn.Runner
	in     *bufio.Scanner
	out    io.Writer
	agent  string
	editor string
	s      *cairn.Session
	// started is when each running tool call started, for "done (0.2 s)".
	started map[string]time.Time
	// streamed is the text the model streamed in its last reply; a final
	// answer already shown that way is not printed again.
	streamed strings.Builder
	// refused holds, per interrupt, why its edited arguments were refused:
	// the next prompt for it asks for the JSON again.
	refused map[string]string
	// cancel, set by /cancel at a decision prompt, is the scope to cancel
	// instead of deciding.
	cancel cairn.CancelScope
}

func (c *chatter) read(prompt string) (string, bool) {
	fmt.Fprint(c.out, prompt)
	if !c.in.Scan() {
		fmt.Fprintln(c.out)
		return "", false
	}
	return strings.TrimSpace(c.in.Text()), true
}

func (c *chatter) run(ctx context.Context, sessionID string) error {
	if sessionID != "" {
		s, err := c.r.Session(ctx, sessionID)
		if err != nil {
			return fmt.Errorf("--session %s: %w", sessionID, err)
		}
		c.s, c.agent = s, s.Agent
		fmt.Fprintf(c.out, "continuing session %s (agent %s, %s)\n", s.ID, s.Agent, s.Status)
		if !c.settle(ctx, nil) {
			return nil
		}
	}
	for {
		text, ok := c.read(fmt.Sprintf("you → %s> ", c.top()))
		if !ok {
			return nil
		}
		var err error
		switch {
		case text == "":
			continue
		case text == "/help":
			fmt.Fprint(c.out, chatHelp)
			continue
		case text == "/quit":
			return nil
		case text == "/session":
			if c.s == nil {
				fmt.Fprintln(c.out, "no session yet: your first message starts one")
			} else {
				fmt.Fprintln(c.out, c.s.ID)
			}
			continue
		case text == "/cancel" || text == "/cancel all":
			scope, ok := c.cancelScope(text)
			if !ok {
				continue
			}
			c.s, err = c.r.Cancel(ctx, c.s.ID, scope, c.opts())
		case strings.HasPrefix(text, "/"):
			fmt.Fprintf(c.out, "unknown command %s; /help lists them\n", text)
			continue
		case c.s == nil:
			c.s, err = c.r.Start(ctx, c.agent, text, &cairn.StartOptions{Observe: c.observe})
		default:
			c.s, err = c.r.Send(ctx, c.s.ID, text, 0, c.opts())
		}
		if !c.settle(ctx, err) {
			return nil
		}
	}
}

// cancelScope is what /cancel or /cancel all can end now; false, said
// why, when nothing.
func (c *chatter) cancelScope(text string) (cairn.CancelScope, bool) {
	switch {
	case c.s == nil:
		fmt.Fprintln(c.out, "nothing to cancel: no session yet (your first message starts one)")
		return "", false
	case text == "/cancel all":
		return cairn.CancelAll, true
	case len(c.s.Stack) <= 1:
		fmt.Fprintf(c.out, "no interactive agent is on top to end (you are talking to %s); /cancel all cancels the whole turn\n", c.top())
		return "", false
	}
	return cairn.CancelTop, true
}

// command runs a slash command typed at a decision prompt: true when it
// was one (the prompt asks again, unless it set c.cancel).
func (c *chatter) command(ans string) bool {
	if !strings.HasPrefix(ans, "/") {
		return false
	}
	switch ans {
	case "/help":
		fmt.Fprint(c.out, chatHelp)
	case "/session":
		fmt.Fprintln(c.out, c.s.ID)
	case "/cancel", "/cancel all":
		if scope, ok := c.cancelScope(ans); ok {
			c.cancel = scope
		}
	default:
		fmt.Fprintf(c.out, "%s is not a command here; /help lists them (to use it as a reason, type it after n)\n", ans)
	}
	return true
}

// looksLikeJSON reports whether a line is a JSON object or array: at an
// approval prompt, new arguments rather than a reason.
func looksLikeJSON(s string) bool {
	return (strings.HasPrefix(s, "{") || strings.HasPrefix(s, "[")) && json.Valid([]byte(s))
}

// top is the agent that gets the next message.
func (c *chatter) top() string {
	if c.s == nil || len(c.s.Stack) == 0 {
		return c.agent
	}
	return c.s.Stack[len(c.s.Stack)-1].Agent
}

func (c *chatter) opts() *cairn.TurnOptions { return &cairn.TurnOptions{Observe: c.observe} }

// settle asks for every decision the session waits for, then prints where
// it ended; false when the input ended.
func (c *chatter) settle(ctx context.Context, err error) bool {
	for err == nil && c.s.Status == cairn.StatusPaused && hasDecisions(c.s) {
		var ds []cairn.Decision
		for _, it := range c.s.Interrupts {
			d, ok := c.ask(it)
			if !ok {
				return false
			}
			if c.cancel != "" {
				break
			}
			if d != nil {
				ds = append(ds, *d)
			}
		}
		if scope := c.cancel; scope != "" {
			c.cancel = ""
			var s *cairn.Session
			if s, err = c.r.Cancel(ctx, c.s.ID, scope, c.opts()); err == nil {
				c.s = s
			}
			continue
		}
		var s *cairn.Session
		s, err = c.r.Resume(ctx, c.s.ID, c.s.Seq, ds, c.opts())
		if errors.Is(err, cairn.ErrInvalidArguments) || errors.Is(err, cairn.ErrInvalidOutput) {
			var e *cairn.Error
			if errors.As(err, &e) && e.Interrupt != "" && errors.Is(err, cairn.ErrInvalidArguments) {
				// Said once, where the arguments are asked for again (ask).
				if c.refused == nil {
					c.refused = map[string]string{}
				}
				c.refused[e.Interrupt] = e.Message
			} else {
				fmt.Fprintln(c.out, "refused:", err)
			}
			err = nil // the session is unchanged: ask again
			continue
		}
		if err == nil {
			c.s = s
		}
	}
	if err != nil {
		fmt.Fprintln(c.out, "error:", err)
		return true
	}
	who := c.top()
	switch {
	case c.s.Error != nil:
		fmt.Fprintf(c.out, "%s failed: %s\n", who, c.s.Error.Message)
	case c.s.Status == cairn.StatusCancelled:
		fmt.Fprintln(c.out, "(the turn was cancelled; your next message starts a new one)")
	case c.s.Status == cairn.StatusRunning:
		fmt.Fprintf(c.out, "(%s is still running elsewhere; /session gives its id)\n", c.s.ID)
	case c.s.Status == cairn.StatusPaused && waitsOnSystems(c.s):
		for _, in := range c.s.Interrupts {
			if notAskedHere(in) {
				ask := in.Ask()
				fmt.Fprintf(c.out, "(%s %s: %s; `cairn sessions %s %s` decides it from elsewhere)\n", ask.Subject, ask.Label, ask.Text, ask.Choices[0].Action, c.s.ID)
			}
		}
	case c.streamed.Len() > 0 && c.streamed.String() == c.s.Output:
		// shown as it streamed
	default:
		fmt.Fprintf(c.out, "%s> %s\n", who, c.s.Output)
	}
	return true
}

// waitsOnSystems reports whether the paused session waits on another
// system, which this chat does not ask about.
func waitsOnSystems(s *cairn.Session) bool { return slices.ContainsFunc(s.Interrupts, notAskedHere) }

// notAskedHere reports whether in is not for the person at this chat: a
// wait on a system, decided by its callback or an approver elsewhere.
func notAskedHere(in cairn.Interrupt) bool {
	ask := in.Ask()
	return !ask.Reply && !in.Kind.ForPerson() && ask.Decider != session.DeciderOwner && len(ask.Choices) > 0
}

// clientResult asks the person to run a client tool and type its result:
// JSON (checked against the tool's result schema), or plain text; /fail
// with a reason says it could not be done.
func (c *chatter) clientResult(where string, it cairn.Interrupt) (*cairn.Decision, bool) {
	fmt.Fprintf(c.out, "%s%s is yours to run, with %s\n", where, it.Tool, clip(string(it.Arguments), 2000))
	if len(it.ResultSchema) > 0 {
		fmt.Fprintf(c.out, "  its result must match %s\n", clip(string(it.ResultSchema), 2000))
	}
	ans, ok := c.read("result (JSON or text), or /fail and why: ")
	if !ok {
		return nil, false
	}
	if reason, failed := strings.CutPrefix(ans, "/fail"); failed {
		return &cairn.Decision{InterruptID: it.ID, Action: cairn.ActionFail, Reason: cmp.Or(strings.TrimSpace(reason), "could not be run")}, true
	}
	out := json.RawMessage(ans)
	if !json.Valid(out) {
		out, _ = json.Marshal(ans) // plain text: the model reads it as is
	}
	return &cairn.Decision{InterruptID: it.ID, Action: cairn.ActionComplete, Output: out}, true
}

// ask prompts for one interrupt; nil for a message interrupt (the next
// line answers it).
// review asks for a decision on an answer under review: let it go, edit it
// (a JSON line, checked by the server against the schema), or send it back
// with a reason.
func (c *chatter) review(where string, it cairn.Interrupt) (*cairn.Decision, bool) {
	fmt.Fprintf(c.out, "%sthe answer waits for review:\n  %s\n", where, clip(string(it.Output), 2000))
	for {
		ans, ok := c.read("let it go? [y]es [e]dit [n]o (send it back): ")
		if !ok {
			return nil, false
		}
		switch strings.ToLower(ans) {
		case "y", "yes":
			return &cairn.Decision{InterruptID: it.ID, Action: cairn.ActionApprove}, true
		case "e", "edit":
			edited, ok := c.read("the answer (JSON, one line): ")
			if !ok {
				return nil, false
			}
			if !json.Valid([]byte(edited)) {
				fmt.Fprintln(c.out, "that is not JSON; nothing was sent")
				continue
			}
			return &cairn.Decision{InterruptID: it.ID, Action: cairn.ActionEdit, Output: json.RawMessage(edited)}, true
		case "n", "no":
			reason, ok := c.read("why (the model sees it and answers again): ")
			if !ok {
				return nil, false
			}
			return &cairn.Decision{InterruptID: it.ID, Action: cairn.ActionReject, Reason: reason}, true
		}
	}
}

// choose asks for an interrupt whose shape this chat has no prompt of its
// own for, from its Ask: the text, then one of its choices as
// "/ACTION [value]".
func (c *chatter) choose(where string, it cairn.Interrupt, ask session.Ask) (*cairn.Decision, bool) {
	fmt.Fprintf(c.out, "%s%s (%s): %s\n", where, ask.Subject, ask.Label, clip(ask.Text, 2000))
	if ask.Warning != "" {
		fmt.Fprintf(c.out, "%swarning: %s\n", where, ask.Warning)
	}
	var opts []string
	for _, ch := range ask.Choices {
		opt := "/" + string(ch.Action)
		if ch.Field != "" {
			opt += " " + string(ch.Field)
			if ch.Field.JSON() {
				opt += " (JSON)"
			}
		}
		opts = append(opts, opt)
	}
	for {
		ans, ok := c.read(fmt.Sprintf("%s%s: ", where, strings.Join(opts, ", ")))
		if !ok {
			return nil, false
		}
		d, err := chosen(it, ans)
		if d != nil {
			return d, true
		}
		if err != nil {
			fmt.Fprintln(c.out, err)
			continue
		}
		if c.command(ans) {
			if c.cancel != "" {
				return nil, true
			}
			continue
		}
		fmt.Fprintf(c.out, "type one of %s\n", strings.Join(opts, ", "))
	}
}

// chosen reads "/ACTION [value]" as a choice the interrupt offers: the
// decision, or why the value does not fit; neither when the line names no
// choice of it (a chat command, or an answer).
func chosen(it cairn.Interrupt, line string) (*cairn.Decision, error) {
	name, value, _ := strings.Cut(strings.TrimPrefix(line, "/"), " ")
	if !strings.HasPrefix(line, "/") {
		return nil, nil
	}
	if _, ok := it.Ask().Choice(cairn.Action(name)); !ok {
		return nil, nil
	}
	d, err := it.Choose(cairn.Action(name), value)
	if err != nil {
		return nil, err
	}
	return &d, nil
}

func (c *chatter) ask(it cairn.Interrupt) (*cairn.Decision, bool) {
	where := ""
	if len(it.Path) > 1 {
		var parts []string
		for _, p := range it.Path {
			parts = append(parts, p.Agent)
		}
		where = "[" + strings.Join(parts, " › ") + "] "
	}
	// The prompt follows the interrupt's first choice (see session.Ask):
	// each shape of answer has its own prompt, and a shape this chat
	// does not know is asked for from the Ask alone.
	ask := it.Ask()
	if ask.Reply || notAskedHere(it) || len(ask.Choices) == 0 {
		return nil, true // the next line answers it, or the system it waits on does
	}
	first := ask.Choices[0]
	_, reviews := ask.Choice(cairn.ActionEdit)
	switch {
	case first.Action == cairn.ActionAnswer && first.Field == session.FieldContent:
		return c.form(where, it)
	case first.Action == cairn.ActionAnswer && ask.Link != "":
		fmt.Fprintf(c.out, "%s%s asks: %s\n  open %s\n", where, it.Tool, ask.Text, ask.Link)
		ans, ok := c.read("press Enter when done, or n to decline: ")
		if !ok {
			return nil, false
		}
		if strings.EqualFold(ans, "n") || strings.EqualFold(ans, "no") {
			return &cairn.Decision{InterruptID: it.ID, Action: cairn.ActionReject, Reason: "declined"}, true
		}
		return &cairn.Decision{InterruptID: it.ID, Action: cairn.ActionAnswer}, true
	case first.Action == cairn.ActionAnswer && first.Field == session.FieldText:
		ans, ok := c.read(fmt.Sprintf("%s%s asks: %s > ", where, it.Tool, ask.Text))
		if !ok {
			return nil, false
		}
		return &cairn.Decision{InterruptID: it.ID, Action: cairn.ActionAnswer, Text: ans}, true
	case first.Action == cairn.ActionApprove && reviews:
		return c.review(where, it)
	case first.Action == cairn.ActionComplete:
		return c.clientResult(where, it)
	case first.Action == cairn.ActionApprove && first.Field == session.FieldArguments:
		// below: yes, no, always, edit
	default:
		return c.choose(where, it, ask)
	}
	if it.InDoubt {
		fmt.Fprintf(c.out, "%swarning: %s was running when Cairn stopped and may already have taken effect (idempotency key %s); if you know how it ended, /complete RESULT or /fail WHY settles it without running it again\n", where, it.Tool, it.IdempotencyKey)
	}
	if why, ok := c.refused[it.ID]; ok {
		// The edit was refused: ask for the JSON again, not for a decision.
		delete(c.refused, it.ID)
		fmt.Fprintf(c.out, "%sthe new arguments were refused (%s); type them again, or /back for the other choices\n", where, clip(why, 500))
		for {
			args, ok := c.read("new arguments (JSON): ")
			if !ok {
				return nil, false
			}
			if args == "/back" {
				break
			}
			if c.command(args) {
				if c.cancel != "" {
					return nil, true
				}
				continue
			}
			if !json.Valid([]byte(args)) {
				fmt.Fprintln(c.out, "not valid JSON; try again, or /back")
				continue
			}
			return &cairn.Decision{InterruptID: it.ID, Action: cairn.ActionApprove, Arguments: json.RawMessage(args)}, true
		}
	}
	agent := c.agent
	if n := len(it.Path); n > 0 {
		agent = it.Path[n-1].Agent
	}
	fmt.Fprintf(c.out, "%s%s wants to run %s with %s\n", where, agent, it.Tool, clip(string(it.Arguments), 300))
	fmt.Fprint(c.out, previewBlock(it.Preview, where+"  ", maxPreviewLines))
	if note := deadlineNote(it, time.Now()); note != "" {
		fmt.Fprintf(c.out, "%s  %s\n", where, note)
	}
	for {
		ans, ok := c.read(fmt.Sprintf("%sapprove? %s [y]es [n]o [a]lways [r]ule [e]dit, never[: why], /cancel all, /help, or a reason: ", where, clip(it.Message, 2000)))
		if !ok {
			return nil, false
		}
		if d, err := chosen(it, ans); d != nil && d.Action.Completes() {
			return d, true // a call in doubt, settled
		} else if err != nil {
			fmt.Fprintln(c.out, err)
			continue
		}
		if c.command(ans) {
			if c.cancel != "" {
				return nil, true
			}
			continue
		}
		if looksLikeJSON(ans) {
			yes, ok := c.read("approve with these arguments instead? [y]es [n]o: ")
			if !ok {
				return nil, false
			}
			if strings.EqualFold(yes, "y") || strings.EqualFold(yes, "yes") {
				return &cairn.Decision{InterruptID: it.ID, Action: cairn.ActionApprove, Arguments: json.RawMessage(ans)}, true
			}
			continue
		}
		switch strings.ToLower(ans) {
		case "n", "no":
			reason, ok := c.read("reason (optional, the model sees it): ")
			if !ok {
				return nil, false
			}
			return &cairn.Decision{InterruptID: it.ID, Action: cairn.ActionReject, Reason: reason}, true
		case "r", "rule":
			g, ok := c.grant(it)
			if !ok {
				return nil, false
			}
			return &cairn.Decision{InterruptID: it.ID, Action: cairn.ActionApprove, Rule: g}, true
		case "e", "edit":
			args, ok := c.edit(it.Arguments)
			if !ok {
				return nil, false
			}
			if args == nil {
				continue // not JSON: ask again
			}
			return &cairn.Decision{InterruptID: it.ID, Action: cairn.ActionApprove, Arguments: args}, true
		}
		d := approvalAnswer(it.ID, ans)
		return &d, true
	}
}

// edit returns new arguments from $EDITOR or typed inline; nil when they
// are not JSON (said so), false when the input ended.
func (c *chatter) edit(current json.RawMessage) (json.RawMessage, bool) {
	var text string
	if c.editor != "" {
		var err error
		if text, err = runEditor(c.editor, current); err != nil {
			fmt.Fprintln(c.out, "editor:", err)
			return nil, true
		}
	} else {
		var ok bool
		fmt.Fprintf(c.out, "arguments now: %s\n", current)
		if text, ok = c.read("new arguments (JSON): "); !ok {
			return nil, false
		}
	}
	if !json.Valid([]byte(text)) {
		fmt.Fprintln(c.out, "not valid JSON; try again (the tool's schema is checked next)")
		return nil, true
	}
	return json.RawMessage(text), true
}

// runEditor opens the arguments, pretty-printed, in the user's editor.
func runEditor(editor string, current json.RawMessage) (string, error) {
	f, err := os.CreateTemp("", "cairn-args-*.json")
	if err != nil {
		return "", err
	}
	defer os.Remove(f.Name())
	var pretty bytes.Buffer
	if json.Indent(&pretty, current, "", "  ") != nil {
		pretty.Write(current)
	}
	pretty.WriteByte('\n')
	if _, err := f.Write(pretty.Bytes()); err != nil {
		f.Close()
		return "", fmt.Errorf("write the arguments for the editor: %w", err)
	}
	f.Close()
	fields := strings.Fields(editor)
	cmd := exec.Command(fields[0], append(fields[1:], f.Name())...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s: %w", editor, err)
	}
	b, err := os.ReadFile(f.Name())
	return strings.TrimSpace(string(b)), err
}

// observe shows the turn as it happens: streamed text, tools running and
// done, and which agent speaks when sub-agents are at work.
func (c *chatter) observe(ev cairn.Event) {
	p, err := session.DecodeEvent(ev)
	if err != nil {
		return
	}
	switch d := p.(type) {
	case *session.SessionStarted:
		fmt.Fprintf(c.out, "(session %s: continue it later with --session %s)\n", d.SessionID, d.SessionID)
	case *session.ModelDelta:
		if c.streamed.Len() == 0 {
			fmt.Fprintf(c.out, "%s> ", ev.Agent)
		}
		c.streamed.WriteString(d.Text)
		fmt.Fprint(c.out, d.Text)
	case *session.ModelResponse:
		if c.streamed.Len() > 0 {
			fmt.Fprintln(c.out)
		}
	case *session.UserMessage:
		c.streamed.Reset()
	case *session.ToolStarted:
		if c.started == nil {
			c.started = map[string]time.Time{}
		}
		c.started[d.CallID] = time.Now()
		fmt.Fprintf(c.out, "  running %s…\n", d.Tool)
		c.streamed.Reset()
	case *session.ToolResult:
		at, ok := c.started[d.CallID]
		if !ok {
			return // a refused or rejected call: it never ran
		}
		delete(c.started, d.CallID)
		took := time.Since(at).Round(100 * time.Millisecond).Seconds()
		if d.IsError {
			fmt.Fprintf(c.out, "  %s failed (%.1f s): %s\n", d.Tool, took, oneLine(d.Content, 80))
		} else {
			fmt.Fprintf(c.out, "  %s done (%.1f s)\n", d.Tool, took)
		}
	case *session.FramePushed:
		fmt.Fprintf(c.out, "  → %s (%s) for %s\n", d.Agent, d.Mode, ev.Agent)
		c.streamed.Reset()
	case *session.FramePopped:
		fmt.Fprintf(c.out, "  ← %s %s\n", ev.Agent, d.Reason)
		c.streamed.Reset()
	case *session.Handoff:
		fmt.Fprintf(c.out, "  → %s hands the conversation to %s\n", ev.Agent, d.Agent)
		c.streamed.Reset()
	}
}

// grant asks for a standing rule's condition (pre-filled from the call:
// an empty line keeps it, "-" drops it), scope and duration.
func (c *chatter) grant(it cairn.Interrupt) (*cairn.RuleGrant, bool) {
	suggested := session.ConditionFor(it.Arguments)
	cond, ok := c.read(fmt.Sprintf("standing rule for %s, if [%s] (- for every call): ", it.Tool, suggested))
	if !ok {
		return nil, false
	}
	switch cond = strings.TrimSpace(cond); cond {
	case "":
		cond = suggested
	case "-":
		cond = ""
	}
	scope, ok := c.read("for this [a]gent (default), this [s]ession or the [t]enant: ")
	if !ok {
		return nil, false
	}
	g := &cairn.RuleGrant{If: cond, Scope: cairn.ScopeAgent}
	switch strings.ToLower(strings.TrimSpace(scope)) {
	case "s", "session":
		g.Scope = cairn.ScopeSession
	case "t", "tenant":
		g.Scope = cairn.ScopeTenant
	}
	if g.Duration, ok = c.read("for how long [30d] (like 72h or 7d): "); !ok {
		return nil, false
	}
	g.Duration = strings.TrimSpace(g.Duration)
	return g, true
}

// approvalAnswer reads the answer to an approval prompt: y approves, a
// approves the tool for the rest of the session, "never" (or "never: why")
// refuses it for the rest of the session, anything else rejects, the text
// being the reason the model sees.
func approvalAnswer(id, ans string) cairn.Decision {
	switch low := strings.ToLower(ans); {
	case low == "y" || low == "yes":
		return cairn.Decision{InterruptID: id, Action: cairn.ActionApprove}
	case low == "a" || low == "always":
		return cairn.Decision{InterruptID: id, Action: cairn.ActionApprove, Remember: cairn.RememberSession}
	case low == "never" || strings.HasPrefix(low, "never:"):
		reason := strings.TrimSpace(ans[len("never"):])
		reason = strings.TrimSpace(strings.TrimPrefix(reason, ":"))
		return cairn.Decision{InterruptID: id, Action: cairn.ActionReject, Reason: reason, Remember: cairn.RememberSession}
	}
	return cairn.Decision{InterruptID: id, Action: cairn.ActionReject, Reason: ans}
}

// hasDecisions reports whether the person at the terminal decides
// something: not a message (the next line answers it), nor a wait on
// another system (its callback completes it).
func hasDecisions(s *cairn.Session) bool {
	for _, in := range s.Interrupts {
		if !in.Ask().Reply && !notAskedHere(in) {
			return true
		}
	}
	return false
}

// form asks for each field of a question's schema (an MCP server's form),
// required ones first, and answers with the object; /decline rejects it.
func (c *chatter) form(where string, it cairn.Interrupt) (*cairn.Decision, bool) {
	fmt.Fprintf(c.out, "%s%s asks: %s\n  (an empty line keeps the default or leaves the field out; /decline rejects the question)\n", where, it.Tool, it.Question)
	fields, err := formFields(it.Schema)
	if err != nil {
		fmt.Fprintln(c.out, "  the form cannot be shown:", err)
		return &cairn.Decision{InterruptID: it.ID, Action: cairn.ActionReject, Reason: "the form could not be shown"}, true
	}
	content := map[string]any{}
	for _, f := range fields {
		for {
			ans, ok := c.read("  " + f.prompt())
			if !ok {
				return nil, false
			}
			if ans == "/decline" {
				return &cairn.Decision{InterruptID: it.ID, Action: cairn.ActionReject, Reason: "declined"}, true
			}
			v, set, err := f.value(ans)
			if err != nil {
				fmt.Fprintln(c.out, "  ", err)
				continue
			}
			if set {
				content[f.Name] = v
			}
			break
		}
	}
	b, _ := json.Marshal(content)
	return &cairn.Decision{InterruptID: it.ID, Action: cairn.ActionAnswer, Content: b}, true
}

// formField is one property of a flat form schema, in the schema's order.
type formField struct {
	Name        string
	Type        string `json:"type"`
	Title       string `json:"title"`
	Description string `json:"description"`
	Enum        []any  `json:"enum"`
	Default     any    `json:"default"`
	Required    bool
}

func formFields(schema json.RawMessage) ([]formField, error) {
	var doc struct {
		Properties json.RawMessage `json:"properties"`
		Required   []string        `json:"required"`
	}
	if err := json.Unmarshal(schema, &doc); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(doc.Properties))
	if _, err := dec.Token(); err != nil { // {
		return nil, nil
	}
	var out []formField
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var f formField
		if err := dec.Decode(&f); err != nil {
			return nil, err
		}
		f.Name, _ = key.(string)
		f.Required = slices.Contains(doc.Required, f.Name)
		out = append(out, f)
	}
	// Required fields first; the rest in the schema's order.
	slices.SortStableFunc(out, func(a, b formField) int {
		switch {
		case a.Required == b.Required:
			return 0
		case a.Required:
			return -1
		}
		return 1
	})
	return out, nil
}

func (f formField) prompt() string {
	var b strings.Builder
	b.WriteString(cmp.Or(f.Title, f.Name))
	if f.Description != "" {
		fmt.Fprintf(&b, " — %s", f.Description)
	}
	fmt.Fprintf(&b, " (%s", cmp.Or(f.Type, "string"))
	if len(f.Enum) > 0 {
		fmt.Fprintf(&b, ", one of %v", f.Enum)
	}
	if f.Type == "array" {
		b.WriteString(", comma-separated")
	}
	if f.Required {
		b.WriteString(", required")
	}
	b.WriteString(")")
	if f.Default != nil {
		fmt.Fprintf(&b, " [%v]", f.Default)
	}
	b.WriteString(": ")
	return b.String()
}

// value converts what was typed to the field's type; set is false for an
// empty line without a default.
func (f formField) value(typed string) (v any, set bool, err error) {
	typed = strings.TrimSpace(typed)
	if typed == "" {
		return f.Default, f.Default != nil, nil
	}
	switch f.Type {
	case "boolean":
		switch strings.ToLower(typed) {
		case "y", "yes", "true":
			return true, true, nil
		case "n", "no", "false":
			return false, true, nil
		}
		return nil, false, fmt.Errorf("%q: answer y or n", typed)
	case "integer":
		n, err := strconv.ParseInt(typed, 10, 64)
		if err != nil {
			return nil, false, fmt.Errorf("%q is not a whole number", typed)
		}
		return n, true, nil
	case "number":
		n, err := strconv.ParseFloat(typed, 64)
		if err != nil {
			return nil, false, fmt.Errorf("%q is not a number", typed)
		}
		return n, true, nil
	case "array":
		var items []any
		for _, p := range strings.Split(typed, ",") {
			items = append(items, strings.TrimSpace(p))
		}
		return items, true, nil
	}
	return typed, true, nil
}
