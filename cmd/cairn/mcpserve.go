package main

import (
	"context"
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
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	cfg, err := config.Load(cfgPath)
	if err != nil {
		return err
	}
	defer cfg.Close()
	if err := cfg.Connect(ctx); err != nil {
		return err
	}
	rt, err := openRuntime(ctx, cfg, cairn.RunnerOptions{Logger: log, Lease: cfg.Lease}, log, nil)
	if err != nil {
		return err
	}
	defer rt.Close()
	runner := rt.runner
	srv := mcpserver.New(runner, &mcpserver.Options{Logger: log})
	err = srv.Run(ctx, &sdk.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{stdout}})
	if ctx.Err() != nil {
		return nil // stopped by a signal
	}
	return err
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
