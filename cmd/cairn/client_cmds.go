package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn"
)

// printOutcome prints what a session does after a request.
func printOutcome(w io.Writer, s *cairn.Session) {
	fmt.Fprintf(w, "%s: %s\n", s.ID, s.Status)
	if b := brief(s); b != "" {
		fmt.Fprintln(w, b)
	}
}

// post sends body to path and prints the session it answers.
func (c *client) post(ctx context.Context, w io.Writer, path string, body any) error {
	var s cairn.Session
	if err := c.do(ctx, "POST", path, body, &s); err != nil {
		return err
	}
	printOutcome(w, &s)
	return nil
}

func (c *client) startCmd(stdout io.Writer) *cobra.Command {
	var detach bool
	cmd := &cobra.Command{
		Use:   "start AGENT TEXT",
		Short: "Start a session with the user's first message",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.post(cmd.Context(), stdout, "/v1/sessions", map[string]any{"agent": args[0], "input": args[1], "wait": !detach})
		},
	}
	cmd.Flags().BoolVar(&detach, "detach", false, "answer at once, while the first turn runs")
	return cmd
}

func (c *client) sendCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "send SESSION TEXT",
		Short: "Send the user's next message (to an interactive agent waiting for it, or the next turn)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.post(cmd.Context(), stdout, "/v1/sessions/"+url.PathEscape(args[0])+"/messages", map[string]any{"text": args[1]})
		},
	}
}

func (c *client) cancelCmd(stdout io.Writer) *cobra.Command {
	var scope string
	cmd := &cobra.Command{
		Use:   "cancel SESSION",
		Short: "Cancel the top interactive agent (--scope top) or the whole turn (--scope all)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.post(cmd.Context(), stdout, "/v1/sessions/"+url.PathEscape(args[0])+"/cancel", map[string]any{"scope": scope})
		},
	}
	cmd.Flags().StringVar(&scope, "scope", "all", "top or all")
	return cmd
}

func (c *client) forkCmd(stdout io.Writer) *cobra.Command {
	var seq int64
	cmd := &cobra.Command{
		Use:   "fork SESSION",
		Short: "Start a new session from a point where SESSION paused or waited for a message (--seq; default the latest), to decide it differently or send another message",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var s cairn.Session
			if err := c.do(cmd.Context(), "POST", "/v1/sessions/"+url.PathEscape(args[0])+"/fork", map[string]any{"seq": seq}, &s); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "forked %s at %d: ", args[0], s.ForkedFrom.Seq)
			printOutcome(stdout, &s)
			return nil
		},
	}
	cmd.Flags().Int64Var(&seq, "seq", 0, "the event to fork at: one where the session paused or a turn ended (cairn sessions show lists them)")
	return cmd
}

func (c *client) tailCmd(stdout io.Writer) *cobra.Command {
	var after int64
	cmd := &cobra.Command{
		Use:   "tail SESSION",
		Short: "Follow a session's events as they are recorded, on any server sharing the store (Ctrl-C stops)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.tail(cmd.Context(), stdout, args[0], after)
		},
	}
	cmd.Flags().Int64Var(&after, "after", 0, "start after this seq (0: from the start)")
	return cmd
}

// tail prints the session's events from its SSE stream, reconnecting after
// the last one seen, until ctx ends.
func (c *client) tail(ctx context.Context, w io.Writer, id string, after int64) error {
	for ctx.Err() == nil {
		req, err := http.NewRequestWithContext(ctx, "GET", strings.TrimRight(c.base, "/")+"/v1/sessions/"+url.PathEscape(id)+"/events", nil)
		if err != nil {
			return err
		}
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Last-Event-ID", fmt.Sprint(after))
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		resp, err := (&http.Client{}).Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("follow %s: %w (is `cairn serve` running at %s?)", id, err, c.base)
		}
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			return fmt.Errorf("follow %s: HTTP %d: %s", id, resp.StatusCode, strings.TrimSpace(string(b)))
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 8<<20)
		for sc.Scan() {
			line, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var ev cairn.Event
			if json.Unmarshal([]byte(line), &ev) != nil || ev.Seq == 0 {
				continue
			}
			after = ev.Seq
			fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\n", ev.Seq, ev.Time.Local().Format("15:04:05.000"), ev.Agent, ev.Type, describe(ev))
		}
		resp.Body.Close()
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	return nil
}

func newAgentsCmd(stdout io.Writer) *cobra.Command {
	c := &client{http: &http.Client{Timeout: time.Minute}}
	cmd := &cobra.Command{Use: "agents", Short: "The agents of a running server"}
	cmd.PersistentFlags().StringVar(&c.base, "server", envOr("CAIRN_SERVER", "http://127.0.0.1:8080"), "server URL (env CAIRN_SERVER)")
	cmd.PersistentFlags().StringVar(&c.token, "token", os.Getenv("CAIRN_TOKEN"), "bearer token (env CAIRN_TOKEN)")
	cmd.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "List the agents, their tools and when each call waits for a person",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var out struct{ Agents []cairn.AgentInfo }
			if err := c.do(cmd.Context(), "GET", "/v1/agents", nil, &out); err != nil {
				return err
			}
			tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "AGENT\tTOOL\tKIND\tAPPROVAL\tDESCRIPTION")
			for _, a := range out.Agents {
				if len(a.Tools) == 0 {
					fmt.Fprintf(tw, "%s\t-\t\t\t\n", a.Name)
				}
				for _, t := range a.Tools {
					kind := t.Kind
					if t.Agent != "" {
						kind += " → " + t.Agent
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", a.Name, t.Name, kind, t.Approval, oneLine(t.Description, 60))
				}
			}
			return tw.Flush()
		},
	})
	return cmd
}

func newRulesCmd(stdout io.Writer) *cobra.Command {
	c := &client{http: &http.Client{Timeout: time.Minute}}
	cmd := &cobra.Command{Use: "rules", Short: "List and revoke the standing rules of a running server (docs/rules.md)"}
	cmd.PersistentFlags().StringVar(&c.base, "server", envOr("CAIRN_SERVER", "http://127.0.0.1:8080"), "server URL (env CAIRN_SERVER)")
	cmd.PersistentFlags().StringVar(&c.token, "token", os.Getenv("CAIRN_TOKEN"), "bearer token (env CAIRN_TOKEN)")
	var tool string
	var all bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List the live standing rules (--all: revoked and expired ones too)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			q := url.Values{}
			if tool != "" {
				q.Set("tool", tool)
			}
			if all {
				q.Set("all", "true")
			}
			var out struct{ Rules []cairn.Rule }
			if err := c.do(cmd.Context(), "GET", "/v1/rules?"+q.Encode(), nil, &out); err != nil {
				return err
			}
			tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "RULE	DECIDES	IF	SCOPE	GRANTED BY	USES	UNTIL")
			for _, r := range out.Rules {
				what := string(r.Action) + " " + r.Tool
				if r.Agent != "" {
					what += " of " + r.Agent
				}
				cond := r.If
				if cond == "" {
					cond = "every call"
				}
				until := "no expiry"
				switch {
				case r.RevokedAt != nil:
					until = "revoked " + r.RevokedAt.Format(time.RFC3339)
				case r.ExpiresAt != nil:
					until = r.ExpiresAt.Format(time.RFC3339)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", r.ID, what, oneLine(cond, 60), r.Scope, r.GrantedBy.Who(), r.Uses, until)
			}
			return tw.Flush()
		},
	}
	list.Flags().StringVar(&tool, "tool", "", "only this tool's rules")
	list.Flags().BoolVar(&all, "all", false, "revoked and expired rules too")
	revoke := &cobra.Command{
		Use:   "revoke RULE",
		Short: "Revoke a standing rule at once, on every server sharing the store",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var r cairn.Rule
			if err := c.do(cmd.Context(), "DELETE", "/v1/rules/"+url.PathEscape(args[0]), nil, &r); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "revoked %s (%s %s; it decided %d calls)\n", r.ID, r.Action, r.Tool, r.Uses)
			return nil
		},
	}
	cmd.AddCommand(list, revoke)
	return cmd
}
