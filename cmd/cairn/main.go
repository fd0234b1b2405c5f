// Command cairn runs Cairn's HTTP server: agents that pause for a person's
// approval and resume exactly once.
//
//	cairn serve --config cairn.yaml [--addr 127.0.0.1:8080]  (or CAIRN_ADDR)
//	cairn mcp --config cairn.yaml   (the agents as MCP tools on stdio)
//	cairn version
package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	neturl "net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/config"
	ctemporal "github.com/cairnhq/cairn/driver/temporal"
	"github.com/cairnhq/cairn/server"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/sqlite"
)

// version is the release version; builds may override it with -ldflags "-X main.version=…".
var version = "0.1.0-dev"

func main() {
	if err := newRoot(os.Stdin, os.Stdout, os.Stderr).Execute(); err != nil {
		// An error may quote what a server, a model or a person wrote.
		fmt.Fprintln(newVisibleWriter(os.Stderr), "cairn:", err)
		os.Exit(1)
	}
}

func newRoot(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "cairn",
		Short:         "Agents that pause anywhere and resume anywhere",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(&cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		Run:   func(cmd *cobra.Command, args []string) { fmt.Fprintln(stdout, "cairn", version) },
	})
	var cfgPath, addr string
	var withWorker bool
	serve := &cobra.Command{
		Use:   "serve",
		Short: "Run the HTTP server",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			return serveCmd(ctx, cfgPath, addr, withWorker, stderr)
		},
	}
	serve.Flags().StringVar(&cfgPath, "config", "", "configuration file (YAML; see docs/config.md)")
	serve.Flags().StringVar(&addr, "addr", cmp.Or(os.Getenv("CAIRN_ADDR"), "127.0.0.1:8080"), "address to listen on (HOST:PORT; default $CAIRN_ADDR, else 127.0.0.1:8080)")
	serve.Flags().BoolVar(&withWorker, "with-worker", false, "with driver: temporal, also run a worker in this process (one-process setup); otherwise run `cairn worker`")
	_ = serve.MarkFlagRequired("config")
	// What people read passes a visibleWriter; MCP's stdout is a protocol.
	shown := newVisibleWriter(stdout)
	root.AddCommand(serve, newSessionsCmd(shown), newAgentsCmd(shown), newChatCmd(stdin, shown, stderr), newMCPCmd(stdin, stdout, stderr), newGatewayCmd(stdin, stdout, stderr), newWorkerCmd(stderr), newAuditCmd(shown), newRulesCmd(shown), newAnalyticsCmd(shown))
	return root
}

func serveCmd(ctx context.Context, cfgPath, addr string, withWorker bool, stderr io.Writer) error {
	log := slog.New(slog.NewTextHandler(stderr, nil))
	cfg, err := config.Load(cfgPath)
	if err != nil {
		return err
	}
	defer cfg.Close() // stops the MCP servers Connect started
	// What would certainly fail later is said now, without stopping: the
	// executable may appear, the model server may come up.
	for _, w := range cfg.Preflight(ctx) {
		fmt.Fprintln(stderr, "warning:", w)
	}
	if err := cfg.Connect(ctx); err != nil {
		return err
	}
	if len(cfg.Tokens) == 0 && cfg.OIDC == nil {
		if err := checkLoopback(addr); err != nil {
			return err
		}
	}
	// The runner takes over, at once and then periodically, sessions whose
	// lease expired: cut off by a crash, or handed over by a stopping node.
	prom, err := newPromMetrics()
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	defer func() { _ = prom.Shutdown(context.Background()) }() // the process ends: nothing to flush to
	var ledgerNote string
	closeLedger := func() error { return nil }
	defer func() { _ = closeLedger() }() // closing at exit; its writes were synced
	rt, err := openRuntime(ctx, cfg, cairn.RunnerOptions{Logger: log, ContinuationKeys: cfg.ContinuationKeys, Lease: cfg.Lease, MeterProvider: prom.provider,
		Retention: cfg.Retention, RetentionSweep: cfg.RetentionSweep, TombstoneRetention: cfg.TombstoneRetention}, log,
		func(st store.Store, opts *cairn.RunnerOptions) (err error) {
			opts.Ledger, closeLedger, ledgerNote, err = tokenLedger(ctx, cfg, st)
			return err
		})
	if err != nil {
		return err
	}
	defer rt.Close()
	runner := rt.runner
	if err := prom.observeStore(rt.store); err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	if rt.temporal != nil && withWorker {
		w := ctemporal.NewWorker(rt.temporal, cfg.Temporal.TaskQueue, runner, &ctemporal.Options{Heartbeat: cfg.Temporal.Heartbeat, MaxHistory: cfg.Temporal.MaxHistory})
		if err := w.Start(); err != nil {
			return fmt.Errorf("temporal worker: %w", err)
		}
		defer w.Stop()
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := server.New(runner, &server.Options{Logger: log, Tokens: serverTokens(cfg.Tokens), OIDC: serverOIDC(cfg.OIDC), BaseURL: cmp.Or(cfg.PublicURL, "http://"+ln.Addr().String()),
		Metrics: prom.handler, MeterProvider: prom.provider, Profiling: true, AllowedHosts: cfg.AllowedHosts, AllowedOrigins: cfg.AllowedOrigins,
		Gateway: gatewayOptions(cfg, log), A2A: cfg.A2A}).HTTPServer()
	if len(cfg.Scripted) > 0 {
		fmt.Fprintf(stderr, "DEMO: model(s) %s are SCRIPTED: replies come from the config file, not a language model\n", strings.Join(cfg.Scripted, ", "))
	}
	switch {
	case len(cfg.Tokens) == 0 && cfg.OIDC == nil:
		fmt.Fprintf(stderr, "store %s; no auth configured: listening on loopback only\n", redact(cfg.Store))
	case cfg.OIDC != nil:
		fmt.Fprintf(stderr, "store %s; bearer-token auth with %d token(s) and JWTs of %s\n", redact(cfg.Store), len(cfg.Tokens), cfg.OIDC.Issuer)
	default:
		fmt.Fprintf(stderr, "store %s; bearer-token auth with %d token(s)\n", redact(cfg.Store), len(cfg.Tokens))
	}
	if t := cfg.Temporal; t != nil {
		workers := "no worker here: run `cairn worker --config` (or serve --with-worker)"
		if withWorker {
			workers = "a worker runs in this process"
		}
		fmt.Fprintf(stderr, "driver temporal: %s namespace %s task queue %s; %s\n", t.HostPort, t.Namespace, t.TaskQueue, workers)
	} else {
		fmt.Fprintf(stderr, "node %s; turn lease %s\n", runner.Node(), cfg.Lease)
	}
	fmt.Fprintf(stderr, "continuation tokens: %s\n", ledgerNote)
	if len(cfg.Retention) > 0 {
		var kept []string
		for _, st := range []cairn.Status{cairn.StatusCompleted, cairn.StatusFailed, cairn.StatusCancelled} {
			if d, ok := cfg.Retention[st]; ok {
				kept = append(kept, fmt.Sprintf("%s %s", st, d))
			}
		}
		fmt.Fprintf(stderr, "retention: finished sessions are deleted once older than: %s (checked every %s)\n", strings.Join(kept, ", "), cfg.RetentionSweep)
	}
	if len(cfg.Webhooks) > 0 {
		fmt.Fprintf(stderr, "webhooks: %d endpoint(s), delivered from the store's outbox; action links under %s\n", len(cfg.Webhooks), cfg.PublicURL+cairn.ActionLinkPath)
	}
	if g := cfg.Gateway; g != nil {
		fmt.Fprintf(stderr, "mcp gateway: the tools of %s at /mcp/gateway; a call is held up to %s for a person\n", strings.Join(g.Servers, ", "), g.Hold)
	}
	fmt.Fprintf(stderr, "listening on http://%s\n", ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	// Drain: no new requests or takeovers; running turns finish within the
	// grace period; the rest are handed over (released) at their next step.
	log.Info("shutting down: finishing running turns", "grace", cfg.ShutdownGrace)
	grace, cancel := context.WithTimeout(context.Background(), cfg.ShutdownGrace)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- srv.Shutdown(grace) }()
	if err := runner.Shutdown(grace); err != nil {
		log.Warn("the grace period ended before every turn finished; the rest are handed over", "err", err)
	}
	if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

// checkLoopback refuses a non-loopback address: without auth, anyone who can
// reach the port could approve tool calls.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--addr %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("--addr %q: refusing to listen on a non-loopback address without authentication; use 127.0.0.1:PORT or add an auth section (docs/config.md)", addr)
	}
	return nil
}

// redact hides a password in a store URL before it is logged.
func redact(store string) string {
	if u, err := neturl.Parse(store); err == nil && u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = neturl.UserPassword(u.User.Username(), "xxxxx")
			return u.String()
		}
	}
	return store
}

// tokenLedger opens the record of spent continuation tokens and says what
// "single use" means with it: the store itself, or with store: memory the
// token_ledger file (or, without keys from secret_env, memory: the key is
// generated per process, so tokens die with it anyway).
func tokenLedger(ctx context.Context, cfg *config.Config, st store.Store) (ledger store.Ledger, closeLedger func() error, note string, err error) {
	if cfg.TokenLedger != "" {
		l, err := sqlite.Open(ctx, cfg.TokenLedger)
		if err != nil {
			return nil, nil, "", fmt.Errorf("token_ledger: %w", err)
		}
		return l, l.Close, fmt.Sprintf("single use on this process and across its restarts (ledger %s); another process accepts a token once more unless it shares this file: use a shared store for several processes", cfg.TokenLedger), nil
	}
	l, ok := st.(store.Ledger)
	if !ok {
		return nil, nil, "", fmt.Errorf("store %s keeps no token ledger", redact(cfg.Store))
	}
	noClose := func() error { return nil } // the store's own Close releases it
	if _, mem := st.(*store.Memory); mem && len(cfg.ContinuationKeys) == 0 {
		return l, noClose, "single use; valid only until this process stops (store: memory signs with a key generated at start)", nil
	}
	return l, noClose, "single use across every process sharing this store", nil
}

// serverOIDC is auth.oidc as the server takes it (nil without it).
func serverOIDC(c *config.OIDC) *server.OIDC {
	if c == nil {
		return nil
	}
	return &server.OIDC{Issuer: c.Issuer, Audience: c.Audience, ClientID: c.ClientID, ClientSecret: c.ClientSecret, NameClaim: c.NameClaim, GroupsClaim: c.GroupsClaim, TenantClaim: c.TenantClaim,
		Roles: c.Roles, ClockSkew: c.ClockSkew}
}

// serverTokens are the config's tokens as the server takes them.
func serverTokens(ts []config.Token) []server.Token {
	out := make([]server.Token, len(ts))
	for i, t := range ts {
		out[i] = server.Token{Name: t.Name, Secret: t.Secret, Role: t.Role, Subject: t.Subject, Groups: t.Groups, Tenant: t.Tenant, AllTenants: t.AllTenants}
	}
	return out
}
