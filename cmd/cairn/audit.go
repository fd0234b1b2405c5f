package main

import (
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn/audit"
	"github.com/cairnhq/cairn/config"
	"github.com/cairnhq/cairn/store"
)

// newAuditCmd is `cairn audit`: checks of the store's event logs, run on
// the store of a config file (an operator's act, like a backup).
func newAuditCmd(stdout io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Prove that the store's event logs are as recorded (docs/audit.md)",
	}
	cmd.AddCommand(newAuditVerifyCmd(stdout), newAuditExportCmd(stdout), newAuditKeysCmd(stdout), newAuditKeygenCmd(stdout))
	return cmd
}

func newAuditVerifyCmd(stdout io.Writer) *cobra.Command {
	var cfgPath, sessionID, file, since, until string
	var trust []string
	verify := &cobra.Command{
		Use:   "verify (--config FILE [--session ID] [--since T] [--until T] | --file EXPORT [--trust ID=KEY])",
		Short: "Recompute every session's hash chain and check the signed checkpoints; exit 1 naming the first broken event",
		Long: `Walk the sessions of the config file's store (or one, --session, or those
updated in a time range) and recompute each session's chain of event hashes.
Every event is hashed with the hash of the event before it, so a changed,
deleted, inserted or moved event breaks the chain where it happened. Each
session's last signed checkpoint must end in the hash the log has at its seq,
signed by a key the config trusts (audit.signing_key_env and
audit.public_keys, or the store's own key); so must each purged session's
tombstone. The first broken event of each session is named, and the command
exits 1. It can run while cairn serve runs on the same store.

With --file it checks an export (cairn audit export) instead, with the keys
the export carries, or only those given with --trust.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			var r audit.Report
			var keys audit.Keys
			switch {
			case (file == "") == (cfgPath == ""):
				return errors.New("give --config (check a store) or --file (check an export), one of them")
			case file != "":
				if sessionID != "" || since != "" || until != "" {
					return errors.New("--session, --since and --until narrow a store's check; an export is checked whole")
				}
				trusted, err := trustFlags(trust)
				if err != nil {
					return err
				}
				f, err := os.Open(file)
				if err != nil {
					return err
				}
				defer f.Close()
				var carried audit.Keys
				if r, carried, err = audit.VerifyExport(f, trusted); err != nil {
					return err
				}
				if keys = trusted; len(keys) == 0 {
					keys = carried
					fmt.Fprintln(stdout, "trusting the keys the export carries: compare them with the ones you keep (cairn audit keys)")
				}
			default:
				if len(trust) > 0 {
					return errors.New("--trust is for --file: a store is checked with the config's keys")
				}
				opts := audit.Options{Session: sessionID}
				var err error
				if opts.Since, err = flagTime("--since", since); err != nil {
					return err
				}
				if opts.Until, err = flagTime("--until", until); err != nil {
					return err
				}
				cfg, st, err := openStoreOf(ctx, cfgPath)
				if err != nil {
					return err
				}
				defer st.Close()
				if keys, err = trustedKeys(ctx, cfg, st); err != nil {
					return err
				}
				opts.Keys = keys
				if r, err = audit.Verify(ctx, st, opts); err != nil {
					return err
				}
			}
			for _, id := range slices.Sorted(maps.Keys(keys)) {
				fmt.Fprintf(stdout, "key %s: %s\n", id, audit.EncodePublicKey(keys[id]))
			}
			return report(stdout, r)
		},
	}
	f := verify.Flags()
	f.StringVar(&cfgPath, "config", "", "the config file whose store to check")
	f.StringVar(&sessionID, "session", "", "check this session only (or its tombstone)")
	f.StringVar(&since, "since", "", "check the sessions updated at or after this RFC 3339 time")
	f.StringVar(&until, "until", "", "check the sessions updated before this RFC 3339 time")
	f.StringVar(&file, "file", "", "check this export (cairn audit export) instead of a store")
	f.StringArrayVar(&trust, "trust", nil, "with --file: trust this key only (ID=BASE64 public key; repeat for several)")
	return verify
}

// report prints what a verification found, and fails naming the broken
// sessions.
func report(w io.Writer, r audit.Report) error {
	for _, b := range r.Breaks {
		fmt.Fprintf(w, "broken: %s\n", b.Error())
	}
	fmt.Fprintf(w, "%d sessions, %d events", r.Sessions, r.Events)
	if r.Tombstones > 0 {
		fmt.Fprintf(w, ", %d purged (tombstones)", r.Tombstones)
	}
	fmt.Fprintln(w)
	if r.Unchained > 0 {
		fmt.Fprintf(w, "%d events were recorded before the chain existed: not covered\n", r.Unchained)
	}
	fmt.Fprintf(w, "signed: %d sessions", r.Signed)
	if cp := r.LastCheckpoint; cp != nil {
		fmt.Fprintf(w, " (the latest checkpoint: session %s, seq %d, at %s, by key %s)", r.LastCheckpointSession, cp.Seq, cp.At.UTC().Format(time.RFC3339), cp.Key)
	}
	fmt.Fprintln(w)
	if r.Unsigned > 0 || r.UnsignedTombstones > 0 {
		fmt.Fprintf(w, "not signed: %d sessions, %d tombstones (recorded without a signing key)\n", r.Unsigned, r.UnsignedTombstones)
	}
	if r.Uncovered > 0 {
		fmt.Fprintf(w, "%d events come after their session's last signed checkpoint (chained, not yet signed: a turn running)\n", r.Uncovered)
	}
	if len(r.Breaks) > 0 {
		return fmt.Errorf("%d of %d sessions are broken", len(r.Breaks), r.Sessions+r.Tombstones)
	}
	fmt.Fprintln(w, "every chain and signed checkpoint holds")
	return nil
}

func newAuditExportCmd(stdout io.Writer) *cobra.Command {
	var cfgPath, since, out string
	export := &cobra.Command{
		Use:   "export --config FILE [--since T] [--out FILE]",
		Short: "Write the store's sessions, events, signed checkpoints and public keys as JSON lines",
		Long: `Write every session of the config file's store (or those updated since
--since), each with all its events, hashes and last signed checkpoint, the
purged sessions' signed tombstones, and the public keys that verify them, as
JSON lines: to stdout, or to --out. cairn audit verify --file checks the
result, and so does the short program in docs/audit.md, without Cairn.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			t, err := flagTime("--since", since)
			if err != nil {
				return err
			}
			cfg, st, err := openStoreOf(ctx, cfgPath)
			if err != nil {
				return err
			}
			defer st.Close()
			keys, err := trustedKeys(ctx, cfg, st)
			if err != nil {
				return err
			}
			w := stdout
			if out != "" {
				f, err := os.Create(out)
				if err != nil {
					return err
				}
				defer f.Close()
				w = f
			}
			r, err := audit.Export(ctx, st, w, audit.ExportOptions{Since: t, Keys: keys})
			if err != nil {
				return err
			}
			if out != "" {
				fmt.Fprintf(stdout, "%s: %d sessions, %d events, %d tombstones\n", out, r.Sessions, r.Events, r.Tombstones)
			}
			return nil
		},
	}
	export.Flags().StringVar(&cfgPath, "config", "", "the config file whose store to export (required)")
	export.Flags().StringVar(&since, "since", "", "export the sessions updated at or after this RFC 3339 time")
	export.Flags().StringVar(&out, "out", "", "write to this file instead of stdout")
	_ = export.MarkFlagRequired("config") // errs only for a flag not defined above
	return export
}

func newAuditKeysCmd(stdout io.Writer) *cobra.Command {
	var cfgPath string
	keys := &cobra.Command{
		Use:   "keys --config FILE",
		Short: "Print the public keys that verify the config's checkpoints (id and base64)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, st, err := openStoreOf(cmd.Context(), cfgPath)
			if err != nil {
				return err
			}
			defer st.Close()
			keys, err := trustedKeys(cmd.Context(), cfg, st)
			if err != nil {
				return err
			}
			for _, id := range slices.Sorted(maps.Keys(keys)) {
				fmt.Fprintf(stdout, "%s: %s\n", id, audit.EncodePublicKey(keys[id]))
			}
			return nil
		},
	}
	keys.Flags().StringVar(&cfgPath, "config", "", "the config file (required)")
	_ = keys.MarkFlagRequired("config") // errs only for a flag not defined above
	return keys
}

func newAuditKeygenCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "keygen",
		Short: "Print a new Ed25519 signing key (PEM) and, as a comment, its public key and id",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			pub, priv, err := ed25519.GenerateKey(nil)
			if err != nil {
				return err
			}
			der, err := x509.MarshalPKCS8PrivateKey(priv)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "# public key %s, id %s (for audit.public_keys after a rotation)\n", audit.EncodePublicKey(pub), audit.KeyID(pub))
			return pem.Encode(stdout, &pem.Block{Type: "PRIVATE KEY", Bytes: der})
		},
	}
}

// trustedKeys are the public keys a check of cfg's store trusts: the
// config's (audit.signing_key_env's and audit.public_keys), and the
// store's own key when the config gives no signing key (the runtime signs
// with it then, or did before audit.sign: false).
func trustedKeys(ctx context.Context, cfg *config.Config, st store.Store) (audit.Keys, error) {
	keys := maps.Clone(cfg.Audit.Keys)
	if keys == nil {
		keys = audit.Keys{}
	}
	if cfg.Audit.Key == nil {
		k, err := storeKey(ctx, cfg, st)
		if err != nil {
			return nil, err
		}
		if err := keys.Add(k.ID(), k.Public()); err != nil {
			return nil, fmt.Errorf("%s: audit.public_keys: %w", cfg.Path, err)
		}
	}
	return keys, nil
}

// signerOf is the key that signs the checkpoints of cfg's runtime: the
// config's, or else the store's own; nil with audit.sign: false.
func signerOf(ctx context.Context, cfg *config.Config, st store.Store) (*audit.Key, error) {
	switch {
	case !cfg.Audit.Sign:
		return nil, nil
	case cfg.Audit.Key != nil:
		return cfg.Audit.Key, nil
	}
	return storeKey(ctx, cfg, st)
}

// storeKey is the signing key kept in the store.
func storeKey(ctx context.Context, cfg *config.Config, st store.Store) (*audit.Key, error) {
	secrets, ok := st.(store.Secrets)
	if !ok {
		return nil, fmt.Errorf("%s: the store keeps no secrets, so it cannot keep a signing key: set audit.signing_key_env, or audit.sign: false", cfg.Path)
	}
	return audit.StoreKey(ctx, secrets)
}

// trustFlags reads --trust ID=KEY flags.
func trustFlags(flags []string) (audit.Keys, error) {
	keys := audit.Keys{}
	for _, f := range flags {
		id, text, ok := strings.Cut(f, "=")
		if !ok {
			return nil, fmt.Errorf("--trust %q: write ID=BASE64 (cairn audit keys prints them)", f)
		}
		pub, err := audit.ParsePublicKey(text)
		if err == nil {
			err = keys.Add(id, pub)
		}
		if err != nil {
			return nil, fmt.Errorf("--trust %s: %w", id, err)
		}
	}
	return keys, nil
}

// flagTime reads an optional RFC 3339 time flag.
func flagTime(name, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s %q: write an RFC 3339 time (2026-10-01T12:00:00Z)", name, v)
	}
	return t, nil
}
