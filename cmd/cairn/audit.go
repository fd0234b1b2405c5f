package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn/audit"
)

// newAuditCmd is `cairn audit`: checks of the store's event logs, run on
// the store of a config file (an operator's act, like a backup).
func newAuditCmd(stdout io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Check that the store's event logs are as recorded (docs/audit.md)",
	}
	var cfgPath, sessionID string
	verify := &cobra.Command{
		Use:   "verify --config FILE [--session ID]",
		Short: "Recompute every session's hash chain; exit 1 naming the first broken event",
		Long: `Walk the sessions of the config file's store (or one, --session) and
recompute each session's chain of event hashes. Every event is hashed with the
hash of the event before it, so a changed, deleted, inserted or moved event
breaks the chain where it happened: the first such event of each session is
named, and the command exits 1. It can run while cairn serve runs on the
same store.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, st, err := openStoreOf(cmd.Context(), cfgPath)
			if err != nil {
				return err
			}
			defer st.Close()
			r, err := audit.Verify(cmd.Context(), st, audit.Options{Session: sessionID})
			if err != nil {
				return err
			}
			for _, b := range r.Breaks {
				fmt.Fprintf(stdout, "broken: %s\n", b.Error())
			}
			fmt.Fprintf(stdout, "%d sessions, %d events", r.Sessions, r.Events)
			if r.Unchained > 0 {
				fmt.Fprintf(stdout, " (%d recorded before the chain existed: not covered)", r.Unchained)
			}
			if len(r.Breaks) > 0 {
				fmt.Fprintln(stdout)
				return fmt.Errorf("the chain of %d of %d sessions is broken", len(r.Breaks), r.Sessions)
			}
			fmt.Fprintln(stdout, ": every chain holds")
			return nil
		},
	}
	verify.Flags().StringVar(&cfgPath, "config", "", "the config file whose store to check (required)")
	verify.Flags().StringVar(&sessionID, "session", "", "check this session only")
	_ = verify.MarkFlagRequired("config") // errs only for a flag not defined above
	cmd.AddCommand(verify)
	return cmd
}
