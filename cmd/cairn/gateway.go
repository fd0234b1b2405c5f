package main

import (
	"context"
	"fmt"
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

// newGatewayCmd is `cairn gateway`: the MCP approval gateway on stdin and
// stdout, for MCP clients that start it (Claude Desktop, IDEs): the tools
// of the config's gateway servers under its approval policies (see
// docs/gateway.md). Logs go to stderr: stdout carries the protocol.
func newGatewayCmd(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	var cfgPath string
	cmd := &cobra.Command{
		Use:   "gateway",
		Short: "Serve the gateway's MCP servers' tools, under approval, on stdio",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			return gatewayCmd(ctx, cfgPath, stdin, stdout, stderr)
		},
	}
	cmd.Flags().StringVar(&cfgPath, "config", "", "configuration file with a gateway section (YAML; see docs/gateway.md)")
	_ = cmd.MarkFlagRequired("config")
	return cmd
}

func gatewayCmd(ctx context.Context, cfgPath string, stdin io.Reader, stdout, stderr io.Writer) error {
	hasGateway := func(cfg *config.Config) error {
		if cfg.Gateway == nil {
			return fmt.Errorf("%s has no gateway section: add one naming the mcp_servers to offer, like\n  gateway:\n    servers: [fs]\n(see docs/gateway.md)", cfg.Path)
		}
		return nil
	}
	return serveStdio(ctx, cfgPath, stdin, stdout, stderr, hasGateway, func(cfg *config.Config, runner *cairn.Runner, log *slog.Logger) (*sdk.Server, error) {
		opts := gatewayOptions(cfg, log)
		if cfg.PublicURL != "" {
			opts.Inbox = func(id string) string { return cfg.PublicURL + "/#/sessions/" + id }
		}
		return mcpserver.NewGateway(runner, opts)
	})
}

// gatewayOptions are the config's gateway section for mcpserver.NewGateway
// (nil without one).
func gatewayOptions(cfg *config.Config, log *slog.Logger) *mcpserver.GatewayOptions {
	if cfg.Gateway == nil || cfg.MCP == nil {
		return nil
	}
	return &mcpserver.GatewayOptions{Agent: config.GatewayAgent, Hub: cfg.MCP, Servers: cfg.Gateway.Servers,
		Hold: cfg.Gateway.Hold, AllSessions: cfg.Gateway.AllSessions, Logger: log}
}
