package cairn

import (
	"context"
	"iter"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/cairnhq/cairn/internal/runtime"
	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/webhook"
)

// DefaultMaxIterations is an agent's limit of model calls per turn when
// Agent.MaxIterations is 0.
const DefaultMaxIterations = runtime.DefaultMaxIterations

// Agent is pure configuration: a name, instructions, a model and tools.
type Agent struct {
	Name         string
	Instructions string
	Model        model.Model
	Tools        []*Tool
	// Toolsets are sources of more tools that may change while the runner
	// runs, such as an MCP server's (mcptools.Hub.Toolset): the runner re-reads
	// them when they say they changed.
	Toolsets []Toolset
	// MaxIterations is the number of model calls allowed in one turn; the
	// next one fails the turn. 0 means DefaultMaxIterations.
	MaxIterations int
}

// Toolset is a source of tools that may change while a Runner runs, such
// as an MCP server's tools (which it announces with
// notifications/tools/list_changed). Add it to Agent.Toolsets.
type Toolset interface {
	// Tools returns the current tools. A tool a session already called
	// should stay listed (or its later calls fail with an error result).
	Tools() []*Tool
	// Notify registers fn to be called, on any goroutine, after Tools
	// changed.
	Notify(fn func())
}

// RunnerOptions are the optional settings of a Runner; nil or the zero
// value means the defaults of each field.
type RunnerOptions struct {
	// Store keeps sessions; nil means a new in-memory store.
	Store store.Store
	// Logger receives the runner's logs; nil means slog.Default().
	Logger *slog.Logger
	// MaxParallelTools bounds the calls of one model response that run at
	// once; 0 means 8.
	MaxParallelTools int
	// ExpirySweep is how often the runner looks for approvals past their
	// TTL (see Tool.ApprovalTTL) and lets those sessions go on; 0 means
	// every 250ms, negative means never (call ExpireDue yourself). The
	// sweeper runs only when some tool has a TTL.
	ExpirySweep time.Duration
	// AutoApprove approves every call that would wait for a person, each
	// recorded in the log as a decision by {"name":"cairn","role":"auto-approve"}:
	// never silent. For tests and trusted runs.
	AutoApprove bool
	// CachedSessions bounds the number of session states kept in memory
	// between requests (each is checked against the store's seq before use,
	// so a write by another process is never missed); 0 means 1024,
	// negative none.
	CachedSessions int
	// CacheBytes bounds their size (the bytes of log each would replay); 0
	// means DefaultCacheBytes. The least recently used go first.
	CacheBytes int
	// ContinuationKeys sign (the first) and verify (all) the tokens of
	// stateless invocations (Invoke, Continue). Empty: a key is generated
	// once and kept in the Store, so every runner on the store shares it.
	ContinuationKeys [][]byte
	// Ledger records spent continuation tokens and their answers, so each
	// token resumes once across every runner that shares it. Nil: the
	// Store, if it implements store.Ledger (the stores of this module do).
	Ledger store.Ledger
	// Lease is how long this runner owns a running turn without renewing it
	// (it renews every third of it while model and tool calls run); another
	// runner on the store takes the session over once it expires. 0 means
	// DefaultLease.
	Lease time.Duration
	// Takeover is how often the runner looks for running sessions whose
	// lease expired (their runner crashed or stopped) and takes them over;
	// it also does so at once. 0 means a third of the lease; negative means
	// never (call Recover yourself).
	Takeover time.Duration
	// Node names this runner in leases (Session.LeaseOwner); empty means
	// host-pid-random. Two runners must never share a name.
	Node string
	// TracerProvider, when set, receives OpenTelemetry spans for turns,
	// model calls and tool calls (GenAI semantic conventions). Nil: none.
	TracerProvider trace.TracerProvider
	// Webhooks are told about interrupts and ended turns, at least once,
	// from the store's outbox (see Webhook and package webhook); the store
	// must implement store.Outbox and store.Secrets (this module's do).
	// Every runner on the store delivers, whichever runner committed.
	Webhooks []Webhook
	// PublicURL is the absolute URL people reach the HTTP server at
	// (https://cairn.example.org): webhook action links are built from it.
	// Required with Webhooks.
	PublicURL string
	// WebhookDelivery tunes the deliveries (client, retries, polling); nil
	// means the defaults of package webhook.
	WebhookDelivery *webhook.Options
	// MeterProvider, when set, receives the runner's OpenTelemetry metrics:
	// cairn.turns, cairn.decisions, cairn.model.duration,
	// cairn.tool.duration, cairn.commit.duration, cairn.state_cache,
	// cairn.takeovers (docs/operations.md). Nil: none, at no cost.
	MeterProvider metric.MeterProvider
	// Driver, when set, runs the turns elsewhere (package driver/temporal):
	// Start, Resume, Send and Cancel go through it, reads come from the
	// store it mirrors to, and this runner takes no sessions over and
	// sweeps no expiries. Nil: this runner drives its sessions itself.
	Driver Driver
	// Now and NewID make time and session ids injectable for tests.
	Now   func() time.Time
	NewID func() string
}

// Webhook is an endpoint told about sessions: interrupts created, decided
// and expired, turns completed and failed (package webhook lists the event
// types and the payload). Deliveries are Standard Webhooks POSTs, signed
// with Secret, sent at least once from the store's outbox by whichever
// runner on the store claims them, retried with exponential backoff.
// Sessions of stateless invocations (Invoke, Continue) send none.
type Webhook struct {
	// Name identifies the endpoint in the outbox and in the audit trail of
	// decisions made through its action links; empty means URL. Renaming
	// an endpoint gives up its undelivered messages.
	Name string
	// URL receives the POSTs.
	URL string
	// Secret signs them: "whsec_" followed by base64.
	Secret string
	// Events are the event types it hears; empty means all of them.
	Events []string
	// Timeout bounds one delivery attempt; 0 means 10 s. A runner that
	// stops mid-delivery leaves the message to another (or to itself,
	// restarted) about 10 s after the timeout.
	Timeout time.Duration
}

// StartOptions are optional settings of Start.
type StartOptions struct {
	// Metadata is kept with the session and returned with it.
	Metadata map[string]any
	// Detach returns as soon as the session is recorded, with status
	// running; the turn goes on in the background.
	Detach bool
	// Owner records who started the session (for access control).
	Owner string
	// Actor is who sends the first message, recorded in its event; zero
	// means Owner, with no role.
	Actor Actor
	// Observe, when set, sees the turn's events as they are recorded; see
	// TurnOptions.Observe.
	Observe func(Event)
	// ID, when set, is the new session's id instead of a generated one: a
	// client-chosen id such as a chat's or a chat platform's conversation
	// (telegram_123_456); 1–128 letters, digits and . _ - :. A session that
	// already has it is ErrConflict.
	ID string
}

// Runner starts sessions and resumes them. It is the in-process driver of
// Cairn's engine: it performs the engine's effects (model and tool calls)
// and appends each step's events to the Store in one commit. A Runner is
// safe for concurrent use; any number of Runners may share one Store.
type Runner struct {
	rt *runtime.Runner
}

// NewRunner checks and compiles the agents and their tools once. opts may
// be nil.
func NewRunner(agents []*Agent, opts *RunnerOptions) (*Runner, error) {
	compiled := make([]*runtime.Agent, len(agents))
	for i, a := range agents {
		if a != nil {
			compiled[i] = a.compile()
		}
	}
	rt, err := runtime.New(compiled, opts.runtime())
	if err != nil {
		return nil, err
	}
	return &Runner{rt: rt}, nil
}

// compile is the agent as the runtime takes it: its tools compiled when
// the runtime asks (at NewRunner, and again each time a toolset changes).
func (a *Agent) compile() *runtime.Agent {
	ra := &runtime.Agent{Name: a.Name, Instructions: a.Instructions, Model: a.Model, MaxIterations: a.MaxIterations,
		Tools: func() ([]*runtime.Tool, error) {
			all := a.Tools
			for _, ts := range a.Toolsets {
				all = append(all[:len(all):len(all)], ts.Tools()...)
			}
			out := make([]*runtime.Tool, 0, len(all))
			for _, t := range all {
				ct, err := t.compile()
				if err != nil {
					return nil, err
				}
				out = append(out, ct)
			}
			return out, nil
		}}
	if len(a.Toolsets) > 0 {
		ra.Notify = func(fn func()) {
			for _, ts := range a.Toolsets {
				ts.Notify(fn)
			}
		}
	}
	return ra
}

// runtime is o as the runtime takes it.
func (o *RunnerOptions) runtime() *runtime.Options {
	if o == nil {
		return nil
	}
	hooks := make([]runtime.Webhook, len(o.Webhooks))
	for i, w := range o.Webhooks {
		hooks[i] = runtime.Webhook(w)
	}
	return &runtime.Options{Webhooks: hooks,
		Store:            o.Store,
		Logger:           o.Logger,
		MaxParallelTools: o.MaxParallelTools,
		ExpirySweep:      o.ExpirySweep,
		AutoApprove:      o.AutoApprove,
		CachedSessions:   o.CachedSessions,
		CacheBytes:       o.CacheBytes,
		ContinuationKeys: o.ContinuationKeys,
		Ledger:           o.Ledger,
		Lease:            o.Lease,
		Takeover:         o.Takeover,
		Node:             o.Node,
		TracerProvider:   o.TracerProvider,
		PublicURL:        o.PublicURL,
		WebhookDelivery:  o.WebhookDelivery,
		MeterProvider:    o.MeterProvider,
		Driver:           o.Driver,
		Now:              o.Now,
		NewID:            o.NewID,
	}
}

// Start opens a session on the named agent with the user's first message and
// runs the first turn until it ends or pauses.
func (r *Runner) Start(ctx context.Context, agent, input string, opts *StartOptions) (*Session, error) {
	return r.rt.Start(ctx, agent, input, (*runtime.StartOptions)(opts))
}

// Resume applies decisions to a paused session and runs the resumed turn
// until it ends or pauses again. seq must be the session's current Seq: of
// two resumes of the same pause exactly one wins, the other gets ErrConflict
// and changes nothing. opts.Actor is recorded as who decided; opts may be nil.
func (r *Runner) Resume(ctx context.Context, sessionID string, seq int64, decisions []Decision, opts *TurnOptions) (*Session, error) {
	return r.rt.Resume(ctx, sessionID, seq, decisions, opts.rt())
}

// Send gives the user's next message to the top of the session's stack: an
// interactive agent waiting for the user, or the root agent when the last
// turn has ended. It runs the turn until it ends or pauses. seq 0 means
// "whatever is current". opts may be nil.
func (r *Runner) Send(ctx context.Context, sessionID, text string, seq int64, opts *TurnOptions) (*Session, error) {
	return r.rt.Send(ctx, sessionID, text, seq, opts.rt())
}

// Cancel ends work in a session. Scope "top" pops the top interactive agent
// of a paused session (its parent sees that the user cancelled, and its
// turn goes on until it ends or pauses); "all" unwinds the whole stack and
// ends the turn as cancelled. A running session can be cancelled with
// "all": its owner (on any process sharing the store) stops at its next
// step and records the cancellation; a session whose owner died is
// cancelled here. ErrConflict when there is nothing to cancel.
//
// opts may be nil.
func (r *Runner) Cancel(ctx context.Context, sessionID string, scope CancelScope, opts *TurnOptions) (*Session, error) {
	return r.rt.Cancel(ctx, sessionID, scope, opts.rt())
}

// Session returns a session as last recorded.
func (r *Runner) Session(ctx context.Context, id string) (*Session, error) {
	return r.rt.Session(ctx, id)
}

// Events returns a session's recorded events with seq > after.
func (r *Runner) Events(ctx context.Context, id string, after int64) ([]Event, error) {
	return r.rt.Events(ctx, id, after)
}

// Follow yields a session's events with seq > after, in seq order with no
// gap and none twice, as they are recorded by this or any other process
// sharing the store, and model text deltas of this process's turns as they
// stream, each after the events recorded before its model call:
//
//	for ev, err := range runner.Follow(ctx, id, 0) {
//		if err != nil { … }
//		fmt.Println(ev.Seq, ev.Type)
//	}
//
// A follower that falls behind misses nothing recorded: the events it lacks
// are read back from the store. Deltas are not stored: a follower that lags
// a reply, or comes in after it began, gets one EventModelDeltasSkipped
// instead of the rest of that reply's deltas (and of replies that begin
// while it is that far behind), so the deltas it gets of a reply begin its
// text (model_response has it all).
//
// Follow subscribes when called, so nothing recorded between the call and
// the loop is missed; range over the sequence once. It ends when ctx ends
// or the loop breaks, and yields ErrShuttingDown if the runner closes first.
func (r *Runner) Follow(ctx context.Context, sessionID string, after int64) iter.Seq2[Event, error] {
	return r.rt.Follow(ctx, sessionID, after)
}

// Subscribe is Follow as a channel, until cancel is called.
//
// Deprecated: use Follow, the one subscription style of package cairn
// (as Stream and Changes).
func (r *Runner) Subscribe(sessionID string, after int64) (events <-chan Event, cancel func()) {
	return r.rt.Subscribe(sessionID, after)
}

// Sessions lists every session, most recently updated first; status ""
// means all. SessionsPage reads them a page at a time.
func (r *Runner) Sessions(ctx context.Context, status Status) ([]*Session, error) {
	return r.rt.Sessions(ctx, status)
}

// SessionsPage lists sessions (status "" for all), most recently updated
// first, one page at a time; next is the cursor of the following page, empty
// after the last. A session updated between two pages moves to the front of
// the order, so a walk may miss or repeat it.
func (r *Runner) SessionsPage(ctx context.Context, status Status, page Page) (sessions []*Session, next string, err error) {
	return r.rt.SessionsPage(ctx, status, runtime.Page(page))
}

// PendingInterrupts is the whole approval inbox: every interrupt of every
// paused session. InterruptsPage reads it a page at a time.
func (r *Runner) PendingInterrupts(ctx context.Context) ([]PendingInterrupt, error) {
	return r.rt.PendingInterrupts(ctx)
}

// InterruptsPage is the approval inbox one page at a time: the pending
// interrupts of paused sessions, most recently paused first; next is the
// cursor of the following page, empty after the last.
func (r *Runner) InterruptsPage(ctx context.Context, page Page) (interrupts []PendingInterrupt, next string, err error) {
	return r.rt.InterruptsPage(ctx, runtime.Page(page))
}

// Changes follows every session sharing the store, whichever process
// records it: each time a session's status or pending interrupts may have
// changed, it yields the session as then recorded. Changes to one session
// arrive in order; between two reads a session may have changed more than
// once (only the latest is yielded). A follower that falls behind gets a
// change with Resync set: reload what you show.
//
// Changes subscribes when called; range over the sequence once. It ends
// when ctx ends or the loop breaks, and yields ErrShuttingDown if the
// runner closes first.
func (r *Runner) Changes(ctx context.Context) iter.Seq2[SessionChange, error] {
	return r.rt.Changes(ctx)
}

// WatchSessions is Changes as a channel, closed when ctx ends or the
// runner closes.
//
// Deprecated: use Changes, the one subscription style of package cairn
// (as Stream and Follow).
func (r *Runner) WatchSessions(ctx context.Context) <-chan SessionChange {
	return r.rt.WatchSessions(ctx)
}

// Invoke runs agent statelessly: nothing is kept on the server. If the turn
// pauses, the Result carries a signed continuation token holding the whole
// session; Continue resumes it, once.
//
// opts may be nil.
func (r *Runner) Invoke(ctx context.Context, agent, input string, opts *TurnOptions) (*Result, error) {
	return r.rt.Invoke(ctx, agent, input, opts.rt())
}

// Continue verifies a continuation token, applies decisions and runs the
// resumed turn. A modified, truncated or foreign token, or one for another
// agent, gives ErrInvalidContinuation and nothing runs. Decisions are checked
// (unknown interrupt, invalid arguments, expiry) before the token is spent.
//
// A token resumes once across every runner sharing the ledger
// (RunnerOptions.Ledger, by default the Store): spending it is recorded
// before the turn runs, so two concurrent resumes cannot both run it, and
// the turn's answer is recorded with it when the turn ends. A token that was
// already spent gives a *continuation.SpentError (errors.Is ErrConflict)
// carrying that answer, so a client that lost it can carry on.
//
// opts.Actor is recorded as who decided; opts may be nil.
func (r *Runner) Continue(ctx context.Context, agent, token string, decisions []Decision, opts *TurnOptions) (*Result, error) {
	return r.rt.Continue(ctx, agent, token, decisions, opts.rt())
}

// ReadActionLink checks an action link's token (the part after
// webhook.ActionLinkPath): ErrInvalidLink unless a runner on this store signed it,
// ErrExpired past its deadline. Whether the interrupt still waits is the
// session's to say.
func (r *Runner) ReadActionLink(ctx context.Context, token string) (*ActionLink, error) {
	return r.rt.ReadActionLink(ctx, token)
}

// FollowActionLink decides the interrupt an action link names, once, and
// runs the session on like Resume. reason, on reject, is shown to the
// model. ErrConflict when the interrupt no longer waits (the link was used,
// or someone decided another way); ErrExpired, ErrInvalidLink as
// ReadActionLink. opts may be nil; its Actor is replaced by the link's.
func (r *Runner) FollowActionLink(ctx context.Context, token, reason string, opts *TurnOptions) (*Session, error) {
	return r.rt.FollowActionLink(ctx, token, reason, opts.rt())
}

// ExpireDue finds paused sessions with approvals past their ExpiresAt,
// rejects those approvals with the reason "approval expired" (the model
// sees it) and runs each session on until it ends or pauses again. It
// returns how many sessions it moved. The runner calls it periodically
// when a tool has an ApprovalTTL (RunnerOptions.ExpirySweep).
func (r *Runner) ExpireDue(ctx context.Context) (int, error) {
	return r.rt.ExpireDue(ctx)
}

// Recover takes over every running session whose lease has expired (its
// owner crashed, was killed, or released it while stopping) and goes on
// with its turn; it returns how many it took. A session whose owner is alive
// and renewing is never touched. A tool call that started and has no
// recorded result is never re-run silently: unless the tool is Idempotent,
// the session pauses with an approval interrupt flagged InDoubt for that
// call, and a person decides whether to run it again. Runners call it
// periodically (RunnerOptions.Takeover).
func (r *Runner) Recover(ctx context.Context) (int, error) {
	return r.rt.Recover(ctx)
}

// Agents describes the runner's agents, in the order NewRunner got them.
func (r *Runner) Agents() []AgentInfo {
	return r.rt.Agents()
}

// Node returns the name this runner holds leases under.
func (r *Runner) Node() string { return r.rt.Node() }

// Store returns the runner's store.
func (r *Runner) Store() store.Store { return r.rt.Store() }

// Shutdown drains the runner: it takes no new turns and no takeovers, lets
// the running turns finish until ctx ends, then stops the rest at their next
// step (a model call in flight is dropped; a tool in flight is waited for)
// and releases their sessions, each recorded with a turn_interrupted event,
// so another process goes on at once. Close after Shutdown.
func (r *Runner) Shutdown(ctx context.Context) error {
	return r.rt.Shutdown(ctx)
}

// Close stops the runner's background work and its turns at their next
// step (each records turn_interrupted and releases its session, which
// another runner then takes over), and waits for them. Shutdown first to
// let running turns finish.
func (r *Runner) Close() error {
	return r.rt.Close()
}

// DriverCore is for the durable drivers of this module (package
// driver/temporal), which run this runner's agents, tools and models in
// their own workers. Its value is of an internal type: code outside this
// module has no use for it.
func (r *Runner) DriverCore() any { return r.rt.Core() }
