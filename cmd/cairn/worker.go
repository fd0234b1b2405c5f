package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/config"
	ctemporal "github.com/cairnhq/cairn/driver/temporal"
)

func newWorkerCmd(stderr io.Writer) *cobra.Command {
	var cfgPath string
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Run the Temporal workers of driver: temporal (session workflows, model and tool activities)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			return workerCmd(ctx, cfgPath, stderr)
		},
	}
	cmd.Flags().StringVar(&cfgPath, "config", "", "configuration file (YAML; see docs/temporal.md)")
	_ = cmd.MarkFlagRequired("config")
	return cmd
}

func workerCmd(ctx context.Context, cfgPath string, stderr io.Writer) error {
	log := slog.New(slog.NewTextHandler(stderr, nil))
	cfg, err := config.Load(cfgPath)
	if err != nil {
		return err
	}
	defer cfg.Close()
	if err := cfg.Connect(ctx); err != nil {
		return err
	}
	if cfg.Temporal == nil {
		return errors.New(cfgPath + ": cairn worker runs the workflows of driver: temporal; this config has the local driver (cairn serve runs its turns)")
	}
	rt, err := openRuntime(ctx, cfg, cairn.RunnerOptions{Logger: log}, log, nil)
	if err != nil {
		return err
	}
	defer rt.Close()
	w := ctemporal.NewWorker(rt.temporal, cfg.Temporal.TaskQueue, rt.runner, &ctemporal.Options{Heartbeat: cfg.Temporal.Heartbeat, MaxHistory: cfg.Temporal.MaxHistory})
	if err := w.Start(); err != nil {
		return fmt.Errorf("temporal worker: %w", err)
	}
	if len(cfg.Scripted) > 0 {
		fmt.Fprintf(stderr, "DEMO: model(s) %v are SCRIPTED: replies come from the config file, not a language model\n", cfg.Scripted)
	}
	fmt.Fprintf(stderr, "worker ready: %s namespace %s task queue %s\n", cfg.Temporal.HostPort, cfg.Temporal.Namespace, cfg.Temporal.TaskQueue)
	<-ctx.Done()
	w.Stop()
	return nil
}
