package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/config"
)

func newChatCmd(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	var cfgPath, agent string
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
			st, err := openStore(cmd.Context(), cfg.Store)
			if err != nil {
				return err
			}
			defer st.Close()
			runner, err := cairn.NewRunner(cfg.Agents, &cairn.RunnerOptions{Store: st, AutoApprove: yes, Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
			if err != nil {
				return err
			}
			defer runner.Close()
			if agent == "" {
				agent = cfg.Agents[0].Name
				for _, a := range cfg.Agents {
					if a.Name == "main" {
						agent = "main"
					}
				}
			}
			if len(cfg.Scripted) > 0 {
				fmt.Fprintf(stdout, "(model(s) %s are SCRIPTED: replies come from the config file)\n", strings.Join(cfg.Scripted, ", "))
			}
			if yes {
				fmt.Fprintln(stdout, "(--yes: every approval is granted automatically and recorded as such)")
			}
			return chat(cmd.Context(), runner, agent, stdin, stdout)
		},
	}
	cmd.Flags().StringVar(&cfgPath, "config", "", "configuration file (YAML)")
	cmd.Flags().StringVar(&agent, "agent", "", "agent to talk to (default: main, or the first)")
	cmd.Flags().BoolVar(&yes, "yes", false, "approve every gated tool call (each recorded as auto-approved)")
	_ = cmd.MarkFlagRequired("config")
	return cmd
}

// chat runs the conversation: the user's lines, the agents' answers, and a
// prompt for each approval or question.
func chat(ctx context.Context, r *cairn.Runner, agent string, stdin io.Reader, out io.Writer) error {
	in := bufio.NewScanner(stdin)
	read := func(prompt string) (string, bool) {
		fmt.Fprint(out, prompt)
		if !in.Scan() {
			return "", false
		}
		return strings.TrimSpace(in.Text()), true
	}
	var s *cairn.Session
	for {
		top := agent
		if s != nil {
			top = s.Stack[len(s.Stack)-1].Agent
		}
		text, ok := read(fmt.Sprintf("you → %s> ", top))
		if !ok {
			fmt.Fprintln(out)
			return nil
		}
		if text == "" {
			continue
		}
		var err error
		switch {
		case s == nil:
			s, err = r.Start(ctx, agent, text, nil)
		case text == "/cancel":
			s, err = r.Cancel(ctx, s.ID, "top", nil)
		default:
			s, err = r.Send(ctx, s.ID, text, 0, nil)
		}
		for err == nil && s.Status == cairn.StatusPaused && hasDecisions(s) {
			var ds []cairn.Decision
			for _, it := range s.Interrupts {
				switch it.Kind {
				case cairn.KindApproval:
					ans, ok := read(fmt.Sprintf("approve? %s [y = yes, a = always, N or a reason = no, never[: reason] = never] ", it.Message))
					if !ok {
						return nil
					}
					ds = append(ds, approvalAnswer(it.ID, ans))
				case cairn.KindInput:
					ans, ok := read(fmt.Sprintf("%s asks: %s > ", it.Tool, it.Question))
					if !ok {
						return nil
					}
					ds = append(ds, cairn.Decision{InterruptID: it.ID, Action: cairn.ActionAnswer, Text: ans})
				}
			}
			s, err = r.Resume(ctx, s.ID, s.Seq, ds, nil)
		}
		if err != nil {
			fmt.Fprintln(out, "error:", err)
			continue
		}
		who := s.Stack[len(s.Stack)-1].Agent
		if s.Error != nil {
			fmt.Fprintf(out, "%s failed: %s\n", who, s.Error.Message)
			continue
		}
		fmt.Fprintf(out, "%s> %s\n", who, s.Output)
	}
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

func hasDecisions(s *cairn.Session) bool {
	for _, in := range s.Interrupts {
		if in.Kind != cairn.KindMessage {
			return true
		}
	}
	return false
}
