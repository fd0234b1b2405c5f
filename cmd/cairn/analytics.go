package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/store"
)

// newAnalyticsCmd is `cairn analytics`: the approval figures of a running
// server (show), and the rejected and edited calls of a config's store as
// JSON lines for evaluation sets (export).
func newAnalyticsCmd(stdout io.Writer) *cobra.Command {
	cmd := &cobra.Command{Use: "analytics", Short: "Approval analytics: figures (show) and rejected or edited calls as JSON lines (export)"}
	cmd.AddCommand(newAnalyticsShowCmd(stdout), newAnalyticsExportCmd(stdout))
	return cmd
}

func newAnalyticsShowCmd(stdout io.Writer) *cobra.Command {
	c := &client{}
	var since, until, by string
	show := &cobra.Command{
		Use:   "show [--by tool|agent|approver] [--since WHEN] [--until WHEN]",
		Short: "The approval figures of a running server (GET /v1/analytics)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c.http = &http.Client{Timeout: time.Minute}
			path := "/v1/analytics?by=" + by
			for _, f := range [][2]string{{"since", since}, {"until", until}} {
				if f[1] == "" {
					continue
				}
				at, err := timeFlag(f[0], f[1], time.Now())
				if err != nil {
					return err
				}
				path += "&" + f[0] + "=" + at.UTC().Format(time.RFC3339)
			}
			var a cairn.Analytics
			if err := c.do(cmd.Context(), "GET", path, nil, &a); err != nil {
				return err
			}
			tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintf(tw, "%s\tPENDING\tDECISIONS\tAPPROVED\tREJECTED\tEDITED\tEXPIRED\tBY RULE\tP50\tP90\tFAST (<%s)\tLONGEST STREAK\n",
				strings.ToUpper(string(a.By)), time.Duration(a.ReadTimeMs)*time.Millisecond)
			for _, r := range a.Rows {
				fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%d\t%d\n", r.Key, r.Pending, r.Decisions, r.Approved, r.Rejected, r.Edited, r.Expired,
					r.ByRule, time.Duration(r.TimeToDecision.P50)*time.Millisecond, time.Duration(r.TimeToDecision.P90)*time.Millisecond, r.FastApprovals, r.LongestStreak)
			}
			return tw.Flush()
		},
	}
	show.Flags().StringVar(&c.base, "server", envOr("CAIRN_SERVER", "http://127.0.0.1:8080"), "server URL (env CAIRN_SERVER)")
	show.Flags().StringVar(&c.token, "token", os.Getenv("CAIRN_TOKEN"), "bearer token (env CAIRN_TOKEN)")
	show.Flags().StringVar(&by, "by", "tool", "a row per tool, agent or approver")
	show.Flags().StringVar(&since, "since", "", "decisions at or after this date (2026-11-01), time (RFC 3339) or age (24h, 7d: that long ago)")
	show.Flags().StringVar(&until, "until", "", "decisions before this date, time or age")
	return show
}

// exportedCall is one line of `cairn analytics export`.
type exportedCall struct {
	SessionID   string          `json:"session_id"`
	InterruptID string          `json:"interrupt_id"`
	Tenant      string          `json:"tenant,omitempty"`
	Agent       string          `json:"agent"`
	Tool        string          `json:"tool"`
	Action      cairn.Action    `json:"action"`
	Edited      bool            `json:"edited,omitempty"`
	Expired     bool            `json:"expired,omitempty"`
	Rule        string          `json:"rule,omitempty"`
	DecidedBy   string          `json:"decided_by,omitempty"`
	AskedAt     *time.Time      `json:"asked_at,omitempty"`
	DecidedAt   time.Time       `json:"decided_at"`
	Arguments   json.RawMessage `json:"arguments,omitempty"`
	NewArgs     json.RawMessage `json:"new_arguments,omitempty"`
	Reason      string          `json:"reason,omitempty"`
}

func newAnalyticsExportCmd(stdout io.Writer) *cobra.Command {
	var cfgPath, since, until string
	export := &cobra.Command{
		Use:   "export --config FILE [--since WHEN] [--until WHEN]",
		Short: "Write the rejected and edited calls of a config's store as JSON lines (an evaluation set)",
		Long: `Write, one JSON object a line, every call people rejected or approved with other
arguments, oldest first, from the store of the config file (every tenant):
session_id, interrupt_id, agent, tool, action, edited, decided_by, asked_at,
decided_at, arguments, new_arguments and reason. It reads the decision records
the store keeps beside the sessions' logs (docs/analytics.md) and can run while
cairn serve runs on the same store.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			q := store.DecisionQuery{AllTenants: true}
			for _, f := range []struct {
				name, v string
				into    *time.Time
			}{{"since", since, &q.Since}, {"until", until, &q.Until}} {
				if f.v == "" {
					continue
				}
				at, err := timeFlag(f.name, f.v, time.Now())
				if err != nil {
					return err
				}
				*f.into = at
			}
			cfg, st, err := openStoreOf(cmd.Context(), cfgPath)
			if err != nil {
				return err
			}
			defer st.Close()
			ds, ok := st.(store.Decisions)
			if !ok {
				return fmt.Errorf("the store %s keeps no decision records", cfg.Store)
			}
			enc := json.NewEncoder(stdout)
			var werr error
			err = ds.Decisions(cmd.Context(), q, func(d *store.DecisionRecord) bool {
				if !(d.Action == cairn.ActionReject || d.Edited) {
					return true
				}
				line := exportedCall{SessionID: d.SessionID, InterruptID: d.ID[len(d.SessionID)+1:], Tenant: d.Tenant, Agent: d.Agent, Tool: d.Tool,
					Action: d.Action, Edited: d.Edited, Expired: d.Expired, Rule: d.Rule, DecidedBy: d.Name, DecidedAt: d.DecidedAt}
				if !d.AskedAt.IsZero() {
					at := d.AskedAt
					line.AskedAt = &at
				}
				var detail struct {
					Arguments    json.RawMessage `json:"arguments"`
					NewArguments json.RawMessage `json:"new_arguments"`
					Reason       string          `json:"reason"`
				}
				_ = json.Unmarshal(d.Detail, &detail) // the runner wrote it; an unreadable one exports without it
				line.Arguments, line.NewArgs, line.Reason = detail.Arguments, detail.NewArguments, detail.Reason
				werr = enc.Encode(line)
				return werr == nil
			})
			if err == nil {
				err = werr
			}
			return err
		},
	}
	export.Flags().StringVar(&cfgPath, "config", "", "the config file whose store to read (required)")
	export.Flags().StringVar(&since, "since", "", "calls decided at or after this date (2026-11-01), time (RFC 3339) or age (24h, 7d: that long ago)")
	export.Flags().StringVar(&until, "until", "", "calls decided before this date, time or age")
	_ = export.MarkFlagRequired("config")
	return export
}
