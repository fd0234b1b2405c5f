package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/config"
	"github.com/cairnhq/cairn/mcp/mcpserver"
)

// newMCPCmd is `cairn mcp`: the configured agents as tools of an MCP
// server on stdin and stdout, for MCP clients that start it (see
// docs/mcp.md). Logs go to stderr: stdout carries the protocol.
func newMCPCmd(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	var cfgPath string
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the agents as MCP tools on stdio",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			return mcpCmd(ctx, cfgPath, stdin, stdout, stderr)
		},
	}
	cmd.Flags().StringVar(&cfgPath, "config", "", "configuration file (YAML; see docs/config.md)")
	_ = cmd.MarkFlagRequired("config")
	return cmd
}

func mcpCmd(ctx context.Context, cfgPath string, stdin io.Reader, stdout, stderr io.Writer) error {
	return serveStdio(ctx, cfgPath, stdin, stdout, stderr, nil, func(cfg *config.Config, runner *cairn.Runner, log *slog.Logger) (*sdk.Server, error) {
		return mcpserver.New(runner, &mcpserver.Options{Logger: log}), nil
	})
}

// serveStdio loads the config, starts its MCP servers and a runner on its
// store, and serves the MCP server serve builds on stdin and stdout until
// a signal or the client's end of stdin. check, when set, refuses a config
// before anything starts. Logs (warnings and worse) go to stderr.
func serveStdio(ctx context.Context, cfgPath string, stdin io.Reader, stdout, stderr io.Writer, check func(*config.Config) error,
	serve func(*config.Config, *cairn.Runner, *slog.Logger) (*sdk.Server, error)) error {
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	cfg, err := config.Load(cfgPath)
	if err != nil {
		return err
	}
	defer cfg.Close()
	if check != nil {
		if err := check(cfg); err != nil {
			return err
		}
	}
	if err := cfg.Connect(ctx); err != nil {
		return err
	}
	rt, err := openRuntime(ctx, cfg, cairn.RunnerOptions{Logger: log, Lease: cfg.Lease, PublicURL: cfg.PublicURL}, log, nil)
	if err != nil {
		return err
	}
	defer rt.Close()
	srv, err := serve(cfg, rt.runner, log)
	if err != nil {
		return err
	}
	err = srv.Run(ctx, &sdk.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{stdout}})
	if ctx.Err() != nil || errors.Is(err, io.EOF) {
		return nil // stopped by a signal, or the client closed stdin
	}
	return err
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
