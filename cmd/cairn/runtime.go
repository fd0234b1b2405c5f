package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	tclient "go.temporal.io/sdk/client"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/config"
	ctemporal "github.com/cairnhq/cairn/driver/temporal"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/storeurl"
)

// agentRuntime is what every command that runs agents sets up from a config:
// the store, a runner on it, and with driver: temporal the client its
// turns go through.
type agentRuntime struct {
	store    store.Store
	runner   *cairn.Runner
	temporal tclient.Client // nil with the local driver
}

// openRuntime opens the store and a runner with opts (its Store, Webhooks,
// PublicURL and Driver come from cfg), and has the config's MCP servers
// follow it. prepare, when set, completes opts with what needs the store
// (the token ledger). Close undoes it.
func openRuntime(ctx context.Context, cfg *config.Config, opts cairn.RunnerOptions, log *slog.Logger, prepare func(store.Store, *cairn.RunnerOptions) error) (_ *agentRuntime, err error) {
	rt := &agentRuntime{}
	defer func() {
		if err != nil {
			rt.Close()
		}
	}()
	if rt.store, err = storeurl.Open(ctx, cfg.Store); err != nil {
		return nil, err
	}
	if prepare != nil {
		if err := prepare(rt.store, &opts); err != nil {
			return nil, err
		}
	}
	opts.Store, opts.Webhooks, opts.PublicURL, opts.AdminOverride = rt.store, cfg.Webhooks, cfg.PublicURL, cfg.AdminOverride
	opts.Suggestions = cfg.Suggestions
	if key, err := signerOf(ctx, cfg, rt.store); err != nil {
		return nil, err
	} else if key != nil { // a nil *audit.Key in the interface would sign
		opts.Signer, opts.CheckpointEvery = key, cfg.Audit.CheckpointEvery
	}
	if t := cfg.Temporal; t != nil {
		blobs, ok := rt.store.(store.Blobs)
		if !ok {
			return nil, fmt.Errorf("%s: driver: temporal needs a store that keeps large payloads (store.Blobs); %s does not", cfg.Path, cfg.Store)
		}
		if rt.temporal, err = ctemporal.Dial(ctx, ctemporal.ClientOptions{HostPort: t.HostPort, Namespace: t.Namespace,
			CertFile: t.CertFile, KeyFile: t.KeyFile, CAFile: t.CAFile, ServerName: t.ServerName, APIKey: t.APIKey, Logger: log, Blobs: blobs}); err != nil {
			return nil, fmt.Errorf("%s: temporal: %w", cfg.Path, err)
		}
		opts.Driver = ctemporal.NewDriver(rt.temporal, t.TaskQueue)
	}
	if rt.runner, err = cairn.NewRunner(cfg.Agents, &opts); err != nil {
		return nil, fmt.Errorf("%s: %w", cfg.Path, err)
	}
	if cfg.MCP != nil {
		cfg.MCP.Follow(ctx, rt.runner) // a cancelled session's held MCP question hears "cancel"
	}
	return rt, nil
}

// Close stops the runner and closes the client and the store.
func (rt *agentRuntime) Close() error {
	var errs []error
	if rt.runner != nil {
		errs = append(errs, rt.runner.Close())
	}
	if rt.temporal != nil {
		rt.temporal.Close()
	}
	if rt.store != nil {
		errs = append(errs, rt.store.Close())
	}
	return errors.Join(errs...)
}
