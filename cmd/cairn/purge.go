package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/config"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/storeurl"
)

// newPurgeCmd is `cairn sessions purge`: a one-off clean-up of finished
// sessions, on the store of a config file (not through a server: it is an
// operator's act, like a backup, and needs no HTTP endpoint that deletes).
func newPurgeCmd(stdout io.Writer) *cobra.Command {
	var cfgPath, before, statuses string
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "purge --before DATE",
		Short: "Delete finished sessions last updated before a date, for good (--dry-run: say what would go)",
		Long: `Delete, from the store of the config file, the completed, failed and cancelled
sessions last updated before --before, each whole (events, snapshot, blobs no
other session uses). Paused and running sessions are never deleted. It can run
while cairn serve runs on the same store. --before takes a date (2026-10-01),
an RFC 3339 time, or an age (720h, 30d: that long before now).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cutoff, err := purgeCutoff(before, time.Now())
			if err != nil {
				return err
			}
			var list []cairn.Status
			for _, s := range strings.Split(statuses, ",") {
				st := cairn.Status(strings.TrimSpace(s))
				if err := (store.PurgeOptions{Status: st}).Check(); err != nil {
					return fmt.Errorf("--status: %w", err)
				}
				list = append(list, st)
			}
			cfg, st, err := openStoreOf(cmd.Context(), cfgPath)
			if err != nil {
				return err
			}
			defer st.Close()
			p, ok := st.(store.Purger)
			if !ok {
				return fmt.Errorf("the store %s cannot purge", cfg.Store)
			}
			when := cutoff.Local().Format(time.DateTime)
			for _, status := range list {
				if dryRun {
					n, err := purgeDryRun(cmd, stdout, st, status, cutoff)
					if err != nil {
						return err
					}
					fmt.Fprintf(stdout, "would delete %d %s sessions last updated before %s (dry run: nothing deleted)\n", n, status, when)
					continue
				}
				// Tombstones are kept as long as the server keeps them.
				now := time.Now()
				opts := store.PurgeOptions{Status: status, Before: cutoff, Now: now,
					TombstonesBefore: now.Add(-cmp.Or(cfg.TombstoneRetention, cairn.DefaultTombstoneRetention))}
				n, err := store.PurgeAll(cmd.Context(), p, opts, 0, nil)
				if err != nil {
					return fmt.Errorf("after deleting %d %s sessions: %w", n, status, err)
				}
				fmt.Fprintf(stdout, "deleted %d %s sessions last updated before %s\n", n, status, when)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&cfgPath, "config", "", "the config file whose store to clean (required)")
	cmd.Flags().StringVar(&before, "before", "", "delete sessions last updated before this date (2026-10-01), time (RFC 3339) or age (720h, 30d)")
	cmd.Flags().StringVar(&statuses, "status", "completed,failed,cancelled", "the final statuses to delete, comma-separated")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "list what would be deleted, delete nothing")
	_ = cmd.MarkFlagRequired("before") // errs only for a flag not defined above
	_ = cmd.MarkFlagRequired("config")
	return cmd
}

// openStoreOf loads the config file and opens its store: what the
// operator's commands that work on a store directly (purge, audit) share.
func openStoreOf(ctx context.Context, cfgPath string) (*config.Config, store.Store, error) {
	cfg, err := config.Load(cfgPath)
	if err != nil {
		return nil, nil, err
	}
	st, err := storeurl.Open(ctx, cfg.Store)
	if err != nil {
		return nil, nil, err
	}
	return cfg, st, nil
}

// purgeCutoff reads --before: a date, an RFC 3339 time, or an age.
func purgeCutoff(v string, now time.Time) (time.Time, error) { return timeFlag("before", v, now) }

// timeFlag reads the time flag --name: a date, an RFC 3339 time, or an
// age (that long before now).
func timeFlag(name, v string, now time.Time) (time.Time, error) {
	if t, err := time.ParseInLocation(time.DateOnly, v, time.Local); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	if d, err := config.ParseAge(v); err == nil && d > 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("--%s %q: write a date (2026-10-01), an RFC 3339 time (2026-10-01T12:00:00Z) or an age (720h, 30d)", name, v)
}

// purgeDryRun lists the sessions a purge of status would delete (the 20
// most recently updated) and counts them, walking the store's index.
func purgeDryRun(cmd *cobra.Command, stdout io.Writer, st store.Store, status cairn.Status, cutoff time.Time) (int, error) {
	n := 0
	after := store.Position{UpdatedAt: cutoff} // strictly older than the cutoff
	for {
		page, err := st.List(cmd.Context(), store.ListOptions{Status: status, After: after, Limit: 1000})
		if err != nil {
			return n, err
		}
		for _, h := range page {
			if n < 20 {
				fmt.Fprintf(stdout, "%s\t%s\t%s\n", h.ID, h.Status, h.UpdatedAt.Local().Format(time.DateTime))
			}
			n++
		}
		if len(page) < 1000 {
			return n, nil
		}
		after = page[len(page)-1].Position()
	}
}
