package temporal

import (
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/local"
)

// Options tune the workflows and activities of a worker. The zero value
// is ready for production.
type Options struct {
	// Heartbeat is how soon a worker that died in the middle of a model or
	// tool call is noticed; 0 means 10 s. Its tool calls then turn into
	// in-doubt approvals (idempotent tools run again).
	Heartbeat time.Duration
	// ModelTimeout bounds one model call; 0 means 10 minutes.
	ModelTimeout time.Duration
	// ToolTimeout bounds one batch of tool calls (each tool also has its
	// own Tool.Timeout); 0 means 24 hours.
	ToolTimeout time.Duration
	// MaxHistory continues a session's workflow as new, from a snapshot,
	// once its history has this many events and it waits for a person;
	// 0 means 10,000 (Temporal also suggests it near its own limits).
	MaxHistory int
	// Worker tunes the Temporal worker (concurrency, …).
	Worker worker.Options
}

func (o *Options) defaults() {
	if o.Heartbeat <= 0 {
		o.Heartbeat = 10 * time.Second
	}
	if o.ModelTimeout <= 0 {
		o.ModelTimeout = 10 * time.Minute
	}
	if o.ToolTimeout <= 0 {
		o.ToolTimeout = 24 * time.Hour
	}
	if o.MaxHistory <= 0 {
		o.MaxHistory = 10000
	}
}

// workflows holds what a session's workflow runs: a Runner's engine.
// Its configuration (agents, tools, approval rules) must be the same on
// every worker: a workflow replays its history against it.
type workflows struct {
	core local.Core
	opts Options
}

// Register registers the session workflow and its activities, performed
// with runner's agents, tools, store and webhooks, on w.
func Register(w worker.Registry, runner *cairn.Runner, opts *Options) {
	RegisterWorkflow(w, runner, opts)
	o := withDefaults(opts)
	acts := &activities{core: coreOf(runner), heartbeat: o.Heartbeat}
	w.RegisterActivityWithOptions(acts.Mirror, activity.RegisterOptions{Name: ActivityMirror})
	w.RegisterActivityWithOptions(acts.Model, activity.RegisterOptions{Name: ActivityModel})
	w.RegisterActivityWithOptions(acts.Tools, activity.RegisterOptions{Name: ActivityTools})
	w.RegisterActivityWithOptions(acts.Previews, activity.RegisterOptions{Name: ActivityPreviews})
}

// WorkflowRegistry is where RegisterWorkflow registers the workflow: a
// worker, or a worker.WorkflowReplayer replaying recorded histories.
type WorkflowRegistry interface {
	RegisterWorkflowWithOptions(w any, options workflow.RegisterOptions)
}

// RegisterWorkflow registers the session workflow alone, with runner's
// engine (agents, tools, approval rules).
func RegisterWorkflow(w WorkflowRegistry, runner *cairn.Runner, opts *Options) {
	wf := &workflows{core: coreOf(runner), opts: withDefaults(opts)}
	w.RegisterWorkflowWithOptions(wf.Session, workflow.RegisterOptions{Name: WorkflowName})
}

// coreOf is runner's engine and effects. A Runner made other than by
// cairn.NewRunner (a zero Runner) has none: that is a programming error,
// reported where the worker is set up rather than at its first session.
func coreOf(runner *cairn.Runner) local.Core {
	c, ok := local.CoreOf(runner)
	if !ok {
		panic("temporal: the runner was not made by cairn.NewRunner")
	}
	return c
}

func withDefaults(opts *Options) Options {
	var o Options
	if opts != nil {
		o = *opts
	}
	o.defaults()
	return o
}

// NewWorker returns a Temporal worker on taskQueue running sessions with
// runner's agents (see Register). Start it with Run or Start.
func NewWorker(c client.Client, taskQueue string, runner *cairn.Runner, opts *Options) worker.Worker {
	var wo worker.Options
	if opts != nil {
		wo = opts.Worker
	}
	if wo.DeadlockDetectionTimeout == 0 {
		// A step over a long conversation encodes megabytes (the snapshot,
		// a model request); Temporal's default 1 s would call that a deadlock.
		wo.DeadlockDetectionTimeout = 10 * time.Second
	}
	w := worker.New(c, taskQueue, wo)
	Register(w, runner, opts)
	return w
}
