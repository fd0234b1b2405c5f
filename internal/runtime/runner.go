package runtime

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/cairnhq/cairn/continuation"
	"github.com/cairnhq/cairn/driver"
	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/internal/schema"
	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/webhook"
)

// DefaultMaxIterations is an agent's limit of model calls per turn when
// Agent.MaxIterations is 0.
const DefaultMaxIterations = 25

// Options are cairn.RunnerOptions (documented there) as the runtime takes
// them.
type Options struct {
	Store            store.Store
	Logger           *slog.Logger
	MaxParallelTools int
	ExpirySweep      time.Duration
	AutoApprove      bool
	CachedSessions   int
	CacheBytes       int
	ContinuationKeys [][]byte
	Ledger           store.Ledger
	Lease            time.Duration
	Takeover         time.Duration
	Node             string
	TracerProvider   trace.TracerProvider
	Webhooks         []Webhook
	PublicURL        string
	WebhookDelivery  *webhook.Options
	MeterProvider    metric.MeterProvider
	Driver           driver.Driver
	Now              func() time.Time
	NewID            func() string
}

// Runner starts sessions and resumes them. It is the in-process driver of
// Cairn's engine: it performs the engine's effects (model and tool calls)
// and appends each step's events to the Store in one commit. A Runner is
// safe for concurrent use; any number of Runners may share one Store.
type Runner struct {
	agents      map[string]*Agent
	order       []string // agent names as NewRunner got them
	compiled    atomic.Pointer[compiled]
	compileMu   sync.Mutex // one recompile at a time
	engineOpts  engine.Options
	store       store.Store
	snapshots   snapshotPolicy // for store
	log         *slog.Logger
	maxParallel int
	now         func() time.Time
	newID       func() string
	hub         hub
	feed        sessionFeed
	background  context.Context
	stop        context.CancelFunc
	wg          sync.WaitGroup
	cache       stateCache
	tracer      trace.Tracer
	contKeys    [][]byte
	ledger      store.Ledger
	codecMu     sync.Mutex
	cont        *Codec
	node        string
	leaseFor    time.Duration
	active      turns
	draining    chan struct{}
	drainOnce   sync.Once
	hooks       *webhooks     // nil: no webhooks
	driver      driver.Driver // nil: turns run here
	metrics     *metrics      // nil: no MeterProvider
	halt        atomic.Bool
}

// NewRunner checks and compiles the agents and their tools once. opts may
// be nil.
func New(agents []*Agent, opts *Options) (*Runner, error) {
	if opts == nil {
		opts = &Options{}
	}
	r, err := newRunner(opts)
	if err != nil {
		return nil, err
	}
	r.engineOpts = engine.Options{AutoApprove: opts.AutoApprove, CheckAnswer: schema.CheckValue}
	if err := r.compile(agents); err != nil {
		return nil, err
	}
	r.background, r.stop = context.WithCancel(context.Background())
	r.hub.store = r.store
	r.feed.init(r.background.Done())
	if err := r.startFeed(); err != nil {
		return nil, err
	}
	if opts.Takeover >= 0 && r.driver == nil {
		r.every(opts.Takeover, r.leaseFor/3, r.takeoverLoop)
	}
	if opts.ExpirySweep >= 0 && r.hasTTL() && r.driver == nil {
		r.every(opts.ExpirySweep, 250*time.Millisecond, r.sweep)
	}
	if r.hooks != nil {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			r.hooks.deliverer.Run(r.background)
		}()
	}
	return r, nil
}

// newRunner is a Runner with opts and their defaults, before its agents.
func newRunner(opts *Options) (*Runner, error) {
	r := &Runner{
		agents: map[string]*Agent{},
		store:  opts.Store, log: opts.Logger, maxParallel: opts.MaxParallelTools,
		now: opts.Now, newID: opts.NewID, contKeys: opts.ContinuationKeys,
		node: opts.Node, leaseFor: opts.Lease, draining: make(chan struct{}),
		tracer: newTracer(opts.TracerProvider), ledger: opts.Ledger, driver: opts.Driver,
	}
	r.cache.maxEntries, r.cache.maxBytes = opts.CachedSessions, opts.CacheBytes
	if len(r.contKeys) > 0 {
		c, err := continuation.NewCodec(r.contKeys...)
		if err != nil {
			return nil, err
		}
		r.cont = c
	}
	if r.store == nil {
		r.store = store.NewMemory()
	}
	r.snapshots = snapshotPolicyFor(r.store)
	if l, ok := r.store.(store.Ledger); ok && r.ledger == nil {
		r.ledger = l
	}
	r.node = cmp.Or(r.node, newNodeID())
	r.log = cmp.Or(r.log, slog.Default())
	r.cache.maxEntries = cmp.Or(r.cache.maxEntries, 1024)
	if r.now == nil {
		r.now = time.Now
	}
	if r.newID == nil {
		r.newID = newSessionID
	}
	if r.leaseFor <= 0 {
		r.leaseFor = DefaultLease
	}
	if r.cache.maxBytes <= 0 {
		r.cache.maxBytes = DefaultCacheBytes
	}
	if r.maxParallel <= 0 {
		r.maxParallel = 8
	}
	if err := r.setupWebhooks(opts); err != nil {
		return nil, err
	}
	var err error
	if r.metrics, err = newMetrics(opts.MeterProvider); err != nil {
		return nil, fmt.Errorf("cairn: metrics: %w", err)
	}
	return r, nil
}

// compile checks the agents and their tools once and returns what the
// engine needs to know of them.
func (r *Runner) compile(agents []*Agent) error {
	if len(agents) == 0 {
		return errors.New("cairn: NewRunner needs at least one agent")
	}
	for _, a := range agents {
		if a == nil || a.Name == "" {
			return errors.New("cairn: an agent has no name")
		}
		if r.agents[a.Name] != nil {
			return fmt.Errorf("cairn: agent %q is defined twice", a.Name)
		}
		if a.Model == nil {
			return fmt.Errorf("cairn: agent %q has no model", a.Name)
		}
		r.agents[a.Name] = a
		r.order = append(r.order, a.Name)
	}
	c, err := r.compileAll()
	if err != nil {
		return err
	}
	r.compiled.Store(c)
	for _, a := range agents {
		if a.Notify != nil {
			a.Notify(r.toolsetChanged)
		}
	}
	return nil
}

func (r *Runner) every(period, def time.Duration, loop func(time.Duration)) {
	if period == 0 {
		period = def
	}
	r.wg.Add(1)
	go loop(period)
}

// hasTTL reports whether some approval may expire: a tool has a TTL, or
// an agent's tools may change to include one.
func (r *Runner) hasTTL() bool {
	for _, a := range r.agents {
		if a.Notify != nil {
			return true
		}
	}
	for _, tools := range r.compiled.Load().tools {
		for _, t := range tools {
			if t.Engine.ApprovalTTL > 0 {
				return true
			}
		}
	}
	return false
}

func (r *Runner) sweep(every time.Duration) {
	defer r.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-r.background.Done():
			return
		case <-t.C:
			if _, err := r.ExpireDue(r.background); err != nil && r.background.Err() == nil {
				r.log.Error("approval expiry", "err", err)
			}
		}
	}
}

// ExpireDue is cairn.Runner.ExpireDue (documented there).
func (r *Runner) ExpireDue(ctx context.Context) (int, error) {
	if r.driver != nil {
		return 0, nil // the driver's timers expire its sessions
	}
	now := r.now()
	n := 0
	var errs []error
	var after store.Position
	for {
		// The store's index of due times: sessions with nothing due are not read.
		due, err := r.store.List(ctx, store.ListOptions{ExpiredAt: now, After: after, Limit: 100})
		if err != nil {
			return n, errors.Join(append(errs, err)...)
		}
		for _, h := range due {
			_, err := r.apply(ctx, h.ID, engine.Expire{})
			switch {
			case err == nil:
				n++
			case errors.Is(err, ErrConflict): // decided or expired by someone else meanwhile
			default:
				errs = append(errs, fmt.Errorf("expire %s: %w", h.ID, err))
			}
		}
		if len(due) < 100 {
			return n, errors.Join(errs...)
		}
		after = due[len(due)-1].Position()
	}
}

// Close is cairn.Runner.Close (documented there).
func (r *Runner) Close() error {
	r.halt.Store(true)
	r.stop()
	r.wg.Wait()
	return nil
}

// Store is cairn.Runner.Store (documented there).
func (r *Runner) Store() store.Store { return r.store }

// StartOptions are cairn.StartOptions (documented there), which convert to
// them.
type StartOptions struct {
	Metadata map[string]any
	Detach   bool
	Owner    string
	Actor    Actor
	Observe  func(Event)
	ID       string
}

// firstActor is who sends the first message: Actor, or else Owner.
func (o *StartOptions) firstActor() Actor {
	if o.Actor == (Actor{}) {
		return Actor{Name: o.Owner}
	}
	return o.Actor
}

var sessionIDPattern = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

// Start is cairn.Runner.Start (documented there).
func (r *Runner) Start(ctx context.Context, agent, input string, opts *StartOptions) (*Session, error) {
	if r.isDraining() {
		return nil, ErrShuttingDown
	}
	if opts == nil {
		opts = &StartOptions{}
	}
	ctx = withObserver(ctx, opts.Observe)
	id := opts.ID
	if id == "" {
		id = r.newID()
	} else if !sessionIDPattern.MatchString(id) {
		return nil, &session.Error{Code: session.CodeInvalidRequest, Message: fmt.Sprintf("session id %q: use 1–128 letters, digits and . _ - :", id)}
	}
	if r.driver != nil {
		return r.startWith(ctx, id, agent, input, opts)
	}
	st := &engine.State{}
	in := engine.Start{SessionID: id, Agent: agent, Text: input, Metadata: opts.Metadata, Owner: opts.Owner, Actor: opts.firstActor()}
	step, err := r.compiled.Load().machine.Step(st, in, r.now())
	if err != nil {
		return nil, err
	}
	if opts.Detach {
		if err := r.commit(ctx, st, step); err != nil {
			return nil, err
		}
		sess := r.sessionOf(st)
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			if err := r.drive(r.background, st, engine.Step{Effects: step.Effects}); err != nil {
				r.log.Error("detached turn stopped", "session", st.SessionID, "err", err)
				return
			}
			r.cache.put(st)
		}()
		return sess, nil
	}
	// With an id of its own making, nobody can read, follow or cancel the
	// session before this call answers, so its first step (session start,
	// user message) guards nothing and is written with the model's answer:
	// one commit fewer per session. A client-chosen id is written at once.
	return r.runTurn(ctx, st, step, opts.ID == "")
}

// Resume is cairn.Runner.Resume (documented there).
func (r *Runner) Resume(ctx context.Context, sessionID string, seq int64, decisions []Decision, opts *TurnOptions) (*Session, error) {
	ctx, actor := opts.apply(ctx)
	if r.driver != nil {
		return r.observed(ctx, sessionID, seq, func() (*Session, error) { return r.driver.Resume(ctx, sessionID, seq, decisions, actor) })
	}
	return r.apply(ctx, sessionID, engine.Decide{Seq: seq, Actor: actor, Decisions: decisions})
}

// Send is cairn.Runner.Send (documented there).
func (r *Runner) Send(ctx context.Context, sessionID, text string, seq int64, opts *TurnOptions) (*Session, error) {
	ctx, actor := opts.apply(ctx)
	if r.driver != nil {
		after := seq
		if after == 0 {
			h, err := r.store.Head(ctx, sessionID)
			if err != nil {
				return nil, storeError(err, sessionID)
			}
			after = h.Seq
		}
		return r.observed(ctx, sessionID, after, func() (*Session, error) { return r.driver.Send(ctx, sessionID, text, seq, actor) })
	}
	return r.apply(ctx, sessionID, engine.Message{Text: text, Seq: seq, Actor: actor})
}

// Session is cairn.Runner.Session (documented there).
func (r *Runner) Session(ctx context.Context, id string) (*Session, error) {
	h, err := r.store.Head(ctx, id)
	if err != nil {
		return nil, storeError(err, id)
	}
	return sessionFromHead(h)
}

// Sessions is cairn.Runner.Sessions (documented there).
func (r *Runner) Sessions(ctx context.Context, status Status) ([]*Session, error) {
	return all(func(p Page) ([]*Session, string, error) { return r.SessionsPage(ctx, status, p) })
}

// PendingInterrupts is cairn.Runner.PendingInterrupts (documented there).
func (r *Runner) PendingInterrupts(ctx context.Context) ([]PendingInterrupt, error) {
	return all(func(p Page) ([]PendingInterrupt, string, error) { return r.InterruptsPage(ctx, p) })
}

// Events is cairn.Runner.Events (documented there).
func (r *Runner) Events(ctx context.Context, id string, after int64) ([]Event, error) {
	evs, err := r.store.Events(ctx, id, after)
	if err != nil {
		return nil, storeError(err, id)
	}
	return evs, nil
}

// Subscribe is cairn.Runner.Subscribe (documented there).
func (r *Runner) Subscribe(sessionID string, after int64) (events <-chan Event, cancel func()) {
	return r.hub.subscribe(sessionID, after)
}

// load returns a session's state: from the cache when the store's head is
// still at the cached seq (no other writer since), else replayed from the log.
func (r *Runner) load(ctx context.Context, id string) (*engine.State, error) {
	h, err := r.store.Head(ctx, id)
	if err != nil {
		return nil, storeError(err, id)
	}
	if st := r.cache.take(id); st != nil && st.Seq == h.Seq {
		r.metrics.cacheLoad(ctx, true)
		return st, nil
	}
	r.metrics.cacheLoad(ctx, false)
	seq, snap, err := r.store.LatestSnapshot(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound): // no snapshot yet: replay the log
	case err != nil:
		return nil, fmt.Errorf("session %s: read snapshot: %w", id, storeError(err, id))
	default:
		tail, err := r.store.Events(ctx, id, seq)
		if err != nil {
			return nil, storeError(err, id)
		}
		var chunks func([]string) ([][]byte, error)
		if blobs, ok := r.store.(store.Blobs); ok {
			chunks = func(keys []string) ([][]byte, error) { return blobs.GetBlobs(ctx, keys) }
		}
		st, size, err := engine.Restore(snap, chunks, tail)
		if err == nil {
			st.Log = engine.LogStats{SnapshotBytes: size, RootBytes: len(snap), TailBytes: eventBytes(tail)}
			return st, nil
		}
		r.log.Warn("unusable snapshot; replaying the whole log", "session", id, "err", err)
	}
	evs, err := r.store.Events(ctx, id, 0)
	if err != nil {
		return nil, storeError(err, id)
	}
	st, err := engine.Replay(evs)
	if err != nil {
		return nil, err
	}
	st.Log = engine.LogStats{TailBytes: eventBytes(evs)}
	return st, nil
}

// snapshotPolicy says which snapshots a commit writes.
type snapshotPolicy int

const (
	noSnapshots snapshotPolicy = iota
	// wholeSnapshots: a store without Blobs gets every message in each
	// snapshot, written once the log after the last one is both larger
	// than snapshotMinTail and snapshotRatio times that snapshot: loads
	// replay a tail proportional to the snapshot, and snapshots cost at
	// most 1/snapshotRatio of the bytes the log itself takes.
	wholeSnapshots
	// chunkedSnapshots: a store with Blobs gets a root that names sealed
	// runs of messages, each written once (engine.SnapshotParts). The
	// root stays small whatever the history, so one is written once the
	// log after the last one reaches the larger of snapshotMinTail and the
	// root's size: a load replays at most that much (a constant), and the
	// snapshots cost at most about the log's own bytes again.
	chunkedSnapshots
)

const (
	snapshotMinTail = 8 << 10
	snapshotRatio   = 4
)

// snapshotPolicyFor is the policy for a runner's own store.
func snapshotPolicyFor(st store.Store) snapshotPolicy {
	if _, ok := st.(store.Blobs); ok {
		return chunkedSnapshots
	}
	return wholeSnapshots
}

func eventBytes(evs []Event) int {
	n := 0
	for _, e := range evs {
		n += len(e.Data)
	}
	return n
}

// apply loads a session, applies one input and drives the session until it
// needs a person or the turn ends. The state goes back to the cache only
// when everything it holds is recorded.
func (r *Runner) apply(ctx context.Context, id string, in engine.Input) (*Session, error) {
	if r.isDraining() {
		return nil, ErrShuttingDown
	}
	st, err := r.load(ctx, id)
	if err != nil {
		return nil, err
	}
	step, err := r.compiled.Load().machine.Step(st, in, r.now())
	if err != nil {
		if session.CodeOf(err) != session.CodeInternal {
			r.cache.put(st) // a refused input leaves the state as it was
		}
		return nil, err
	}
	return r.runTurn(ctx, st, step, false)
}

// runTurn drives a step inside the turn's span and, once everything is
// recorded, returns the session and caches its state. unseen: the session
// is new and its id known to no one yet (see driveIn).
func (r *Runner) runTurn(ctx context.Context, st *engine.State, step engine.Step, unseen bool) (sess *Session, err error) {
	ctx, span := r.startTurnSpan(ctx, st.SessionID, st.Agent)
	defer func() { endTurnSpan(span, sess, err) }()
	if err := r.driveIn(ctx, r.store, st, step, unseen); err != nil {
		if errors.Is(err, errHalted) {
			// Released for another process, which goes on with the turn.
			return r.sessionOf(st), nil
		}
		return nil, err
	}
	sess = r.sessionOf(st) // before the state is shared again
	r.cache.put(st)
	return sess, nil
}

// sessionOf is the Session of a state this runner just recorded.
func (r *Runner) sessionOf(st *engine.State) *Session {
	s := st.View()
	if s.Status == StatusRunning && !r.halt.Load() {
		until := r.now().Add(r.leaseFor)
		s.LeaseOwner, s.LeaseExpiresAt = r.node, &until
	}
	return s
}

// commit appends the events of one step in one durable write.
func (r *Runner) commit(ctx context.Context, st *engine.State, step engine.Step) error {
	return r.commitTo(ctx, r.store, st, nil, step)
}

// commitTo appends step's events to store to; t is the turn writing them
// (nil: none), whose unwritten first step, if any, goes in the same commit.
func (r *Runner) commitTo(ctx context.Context, to store.Store, st *engine.State, t *turn, step engine.Step) error {
	mine := to == r.store // not a stateless session's scratch store
	fresh := step.Events  // observed below; unwritten ones were at once
	if t != nil && len(t.unwritten.Events) > 0 {
		first := t.unwritten
		t.unwritten = engine.Step{}
		step.Events = append(first.Events, step.Events...)
		// Payloads are valid until the state's next Step, which the
		// first step's have seen: theirs are left out (decoded if needed).
		step.Payloads = append(make([]any, len(first.Events), len(step.Events)), step.Payloads...)
	}
	events := step.Events
	if len(events) == 0 {
		return nil
	}
	policy := noSnapshots
	if mine {
		policy = r.snapshots
	}
	head, log, err := headFor(st, step, r.lease(st, events, st.UpdatedAt), policy)
	if err != nil {
		return err
	}
	if mine {
		err = r.appendStep(ctx, head, step)
	} else if err = to.Append(ctx, head, events[0].Seq-1, events); err != nil {
		err = storeError(err, st.SessionID)
	}
	if err != nil {
		return err
	}
	st.Log = log
	for _, ev := range fresh {
		observe(ctx, ev)
	}
	return nil
}

// headFor is the store head written with step's events just applied to
// st: the summary when the view changed, the expiry index and, with
// snapshots, a snapshot once the log since the last one is large enough.
// It returns the log statistics to keep once the head is written. No I/O.
func headFor(st *engine.State, step engine.Step, lease store.Lease, policy snapshotPolicy) (store.Head, engine.LogStats, error) {
	events := step.Events
	head := store.Head{ID: st.SessionID, Agent: st.Agent, Status: st.Status, Seq: st.Seq,
		CreatedAt: st.CreatedAt, UpdatedAt: st.UpdatedAt, NextExpiry: st.NextExpiry(), Lease: lease}
	log := st.Log
	if events[0].Seq == 1 || engine.ViewChanged(events, step.Payloads) {
		var err error
		if head.Summary, err = json.Marshal(st.View()); err != nil {
			return head, log, err
		}
	}
	log.TailBytes += eventBytes(events)
	if log.TailBytes < snapshotMinTail {
		return head, log, nil
	}
	switch {
	case policy == wholeSnapshots && log.TailBytes >= snapshotRatio*log.SnapshotBytes:
		snap, err := engine.Snapshot(st)
		if err != nil {
			return head, log, err
		}
		head.Snapshot, log = snap, engine.LogStats{SnapshotBytes: len(snap), RootBytes: len(snap)}
	case policy == chunkedSnapshots && log.TailBytes >= log.RootBytes:
		parts, err := engine.SnapshotParts(st)
		if err != nil {
			return head, log, err
		}
		head.Snapshot = parts.Root
		for _, c := range parts.Chunks {
			head.Blobs = append(head.Blobs, store.Blob{Key: c.Key, Data: c.Data})
		}
		log = engine.LogStats{SnapshotBytes: parts.Bytes, RootBytes: len(parts.Root)}
	}
	return head, log, nil
}

// appendStep writes a step to the runner's store in one commit, with its
// webhook messages, and tells subscribers, the deliverer and the metrics.
// step.Payloads may be nil (a mirrored step): they are decoded if needed.
func (r *Runner) appendStep(ctx context.Context, head store.Head, step engine.Step) error {
	events := step.Events
	if r.hooks != nil {
		var err error
		if head.Outbox, err = r.webhookMessages(ctx, head.ID, head.Agent, head.Seq, step); err != nil {
			return fmt.Errorf("webhooks of session %s: %w", head.ID, err)
		}
	}
	began := time.Now()
	if err := r.store.Append(ctx, head, events[0].Seq-1, events); err != nil {
		return storeError(err, head.ID)
	}
	r.metrics.committed(ctx, step, time.Since(began))
	r.hub.published(head.ID, events)
	if len(head.Outbox) > 0 {
		r.hooks.deliverer.Wake()
	}
	return nil
}

// drive commits a step and performs its effects until the session needs a
// person or the turn ends.
func (r *Runner) drive(ctx context.Context, st *engine.State, step engine.Step) error {
	return r.driveIn(ctx, r.store, st, step, false)
}

// errHalted: the runner stopped the turn at a step boundary (Close, or
// Shutdown past its grace) and released the session for another process.
var errHalted = errors.New("cairn: the turn was handed over: this runner is stopping")

// driveIn is drive with the events going to store to (the stateless mode
// keeps a session in a scratch store and hands it out as a token). On the
// runner's store the turn holds a lease: it is renewed while effects run, a
// cancel request stops the turn at its next step, and a turn stopped early
// (ctx cancelled, Close) records turn_interrupted and releases the session.
//
// With unseen (a new session whose id no one knows yet), a first step
// followed by a model call is not written before the call but with the
// step that records its answer: a model call is safe to repeat, and nobody
// can observe the session in between. A crash in that call leaves no
// session, and the caller, who got no answer, no id to miss.
func (r *Runner) driveIn(ctx context.Context, to store.Store, st *engine.State, step engine.Step, unseen bool) error {
	owned := to == r.store
	var t *turn
	if owned {
		t = r.active.begin(st.SessionID)
		defer r.active.end(st.SessionID, t)
	}
	for {
		if _, model := firstEffect(step).(engine.CallModel); owned && unseen && model && step.Events[0].Seq == 1 {
			t.unwritten = step
			for _, ev := range step.Events {
				observe(ctx, ev) // in order, before the model's deltas
			}
		} else if err := r.commitTo(ctx, to, st, t, step); err != nil {
			return err
		}
		if len(step.Effects) == 0 {
			return nil
		}
		var in engine.Input
		switch {
		case owned && t.cancelRequested.Load():
			in = r.cancelInput(ctx, st.SessionID, t)
		case ctx.Err() != nil:
			return r.interrupt(ctx, to, st, t, fmt.Sprintf("the turn's context ended: %v", ctx.Err()), ctx.Err())
		case owned && r.halt.Load():
			return r.interrupt(ctx, to, st, t, "the runner stopped (shutdown); another process continues the turn", errHalted)
		default:
			var err error
			if in, err = r.perform(ctx, to, st, t, step.Effects[0]); err != nil {
				return err
			}
		}
		var err error
		if step, err = r.compiled.Load().machine.Step(st, in, r.now()); err != nil {
			return err
		}
	}
}

// firstEffect is a step's first effect, or nil.
func firstEffect(step engine.Step) engine.Effect {
	if len(step.Effects) == 0 {
		return nil
	}
	return step.Effects[0]
}

// perform runs one effect and returns the input that reports it. t is nil
// for a turn outside the runner's store (stateless mode).
func (r *Runner) perform(ctx context.Context, to store.Store, st *engine.State, t *turn, eff engine.Effect) (engine.Input, error) {
	run := func(ctx context.Context, isModel bool, fn func(ctx context.Context)) {
		if t == nil || len(t.unwritten.Events) > 0 { // no lease to renew: nothing is stored yet
			fn(ctx)
			return
		}
		r.renewWhile(ctx, st.SessionID, t, isModel, fn)
	}
	var in engine.Input
	switch eff := eff.(type) {
	case engine.CallModel:
		var resp *model.Response
		var err error
		run(ctx, true, func(ctx context.Context) { resp, err = r.callModel(ctx, st.SessionID, st.Seq, eff) })
		in = engine.ModelDone{Frame: eff.Frame, Response: resp, Err: err}
		if err != nil && t != nil && (t.cancelRequested.Load() || r.halt.Load()) {
			in = nil // dropped on purpose: the caller decides again
		}
	case engine.RunTools:
		var results []engine.ToolOutcome
		run(ctx, false, func(ctx context.Context) { results = r.runTools(ctx, eff) })
		in = engine.ToolsDone{Frame: eff.Frame, Results: results}
	default:
		return nil, fmt.Errorf("cairn: unknown effect %T", eff)
	}
	switch {
	case t != nil && t.lost.Load():
		return nil, fmt.Errorf("session %s: %w", st.SessionID, ErrLeaseLost)
	case ctx.Err() != nil:
		// Nothing of this effect is recorded: a started tool stays in doubt.
		return nil, r.interrupt(ctx, to, st, t, fmt.Sprintf("the turn's context ended while it ran: %v", ctx.Err()), ctx.Err())
	case in == nil && t.cancelRequested.Load():
		return r.cancelInput(ctx, st.SessionID, t), nil
	case in == nil:
		return nil, r.interrupt(ctx, to, st, t, "the runner stopped (shutdown) during a model call; another process continues the turn", errHalted)
	}
	return in, nil
}

// interrupt records that the turn stopped early and releases the session.
func (r *Runner) interrupt(ctx context.Context, to store.Store, st *engine.State, t *turn, reason string, cause error) error {
	step, err := r.compiled.Load().machine.Step(st, engine.Interrupted{Reason: reason}, r.now())
	if err != nil {
		return errors.Join(cause, err)
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := r.commitTo(wctx, to, st, t, step); err != nil {
		return errors.Join(cause, err)
	}
	if errors.Is(cause, errHalted) {
		return cause
	}
	return fmt.Errorf("session %s: turn interrupted (recorded; another runner takes it over): %w", st.SessionID, cause)
}

// callModel runs one model call; after is the seq of the session's last
// event, which its text deltas follow.
func (r *Runner) callModel(ctx context.Context, sessionID string, after int64, eff engine.CallModel) (*model.Response, error) {
	agent := r.agents[eff.Agent]
	req := *eff.Request
	first := true
	req.OnTextDelta = func(delta string) {
		data, _ := json.Marshal(session.ModelDelta{Text: delta})
		ev := Event{Type: session.EventModelDelta, Time: r.now(), Frame: eff.Frame, Agent: eff.Agent, Data: data}
		r.hub.delta(sessionID, after, first, ev)
		first = false
		observe(ctx, ev)
	}
	ctx, span := r.startModelSpan(ctx, agent.Model, eff.Agent, eff.Frame)
	start := time.Now()
	resp, err := limitedGenerate(ctx, agent.Model, &req)
	r.log.Debug("model call", "session", sessionID, "agent", eff.Agent, "duration", time.Since(start), "err", err)
	r.metrics.modelCall(ctx, eff.Agent, time.Since(start), err != nil)
	if err == nil && resp == nil {
		err = errors.New("model returned no response")
	}
	if err == nil && span != noSpan {
		span.SetAttributes(attribute.Int64(attrInputTokens, resp.Usage.InputTokens), attribute.Int64(attrOutputTokens, resp.Usage.OutputTokens))
	}
	endSpan(span, err)
	return resp, err
}

// limitedGenerate calls the model under its limits (model.LimitsOf): the
// whole call within Timeout, and a reply of at most MaxReplyBytes, whatever
// the model. A call a limit ends is a ProviderError with its Code; the
// caller's own cancellation is returned as is.
func limitedGenerate(ctx context.Context, m model.Model, req *model.Request) (*model.Response, error) {
	lim := model.LimitsOf(m)
	callCtx := ctx
	if lim.Timeout > 0 {
		var cancel context.CancelFunc
		callCtx, cancel = context.WithTimeoutCause(ctx, lim.Timeout, model.TimedOut("timeout", lim.Timeout))
		defer cancel()
	}
	resp, err := generate(callCtx, m, req)
	var limit *model.LimitError
	switch {
	case err != nil && ctx.Err() == nil && errors.As(context.Cause(callCtx), &limit):
	case err == nil && resp != nil && lim.MaxReplyBytes > 0 && model.ReplySize(resp.Message) > lim.MaxReplyBytes:
		limit = model.ReplyTooLarge(lim.MaxReplyBytes)
	default:
		return resp, err
	}
	provider, name := "model", "?"
	if d, ok := m.(describer); ok {
		provider, name = d.Describe()
	}
	return nil, model.NewProviderError(provider, name, limit, 0, "", "", 0)
}

// generate calls the model; a model that panics is a model error, not a
// dead process.
func generate(ctx context.Context, m model.Model, req *model.Request) (resp *model.Response, err error) {
	defer func() {
		if p := recover(); p != nil {
			resp, err = nil, fmt.Errorf("the model panicked: %v", p)
		}
	}()
	return m.Generate(ctx, req)
}

// runTools runs the calls concurrently, at most maxParallel at once, and
// returns the outcomes in the model's call order.
func (r *Runner) runTools(ctx context.Context, eff engine.RunTools) []engine.ToolOutcome {
	out := make([]engine.ToolOutcome, len(eff.Calls))
	if len(eff.Calls) == 1 { // the common case: no goroutine to start and wait for
		out[0] = r.runTool(ctx, r.compiled.Load().tools[eff.Agent][eff.Calls[0].Tool], eff.Calls[0])
		return out
	}
	sem := make(chan struct{}, r.maxParallel)
	var wg sync.WaitGroup
	for i, call := range eff.Calls {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			out[i] = r.runTool(ctx, r.compiled.Load().tools[eff.Agent][call.Tool], call)
		}()
	}
	wg.Wait()
	return out
}

type toolResult struct {
	out string
	err error
}

func (r *Runner) runTool(ctx context.Context, t *Tool, call engine.ToolRun) (outcome engine.ToolOutcome) {
	ctx, span := r.startToolSpan(ctx, call.Tool, call.CallID)
	if span != noSpan {
		defer func() {
			if outcome.IsError {
				span.SetStatus(codes.Error, outcome.Content)
				span.SetAttributes(attribute.String(attrErrorType, "tool_error"))
			}
			span.End()
		}()
	}
	outcome = engine.ToolOutcome{CallID: call.CallID}
	if r.metrics != nil {
		began := time.Now()
		defer func() { r.metrics.toolCall(ctx, call.Tool, time.Since(began), outcome.IsError) }()
	}
	if t == nil { // its toolset dropped it since the engine started the call
		outcome.Content, outcome.IsError = fmt.Sprintf("tool %q is no longer available; the call did not run", call.Tool), true
		return outcome
	}
	ctx = context.WithValue(ctx, callKey{}, &Call{Key: call.IdempotencyKey, ask: askState{answers: call.Answers}})
	if t.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t.Timeout)
		defer cancel()
	}
	call1 := func() (res toolResult) {
		defer func() {
			if p := recover(); p != nil {
				res = toolResult{err: fmt.Errorf("tool %q panicked: %v", call.Tool, p)}
			}
		}()
		out, err := t.Handler(ctx, call.Args)
		return toolResult{out, err}
	}
	var res toolResult
	if ctx.Done() == nil {
		res = call1() // nothing can cancel the call: run it here
	} else {
		done := make(chan toolResult, 1)
		go func() { done <- call1() }()
		select {
		case res = <-done:
		case <-ctx.Done():
			// A handler that ignores its context does not hold up the session.
			res = toolResult{err: ctx.Err()}
		}
	}
	var q *askError
	switch {
	case errors.As(res.err, &q):
		outcome.Question, outcome.Schema, outcome.URL, outcome.Held = q.q.Text, q.q.Schema, q.q.URL, q.q.Held
		if len(q.q.Schema) > 0 {
			if _, err := schema.Compile(q.q.Schema); err != nil {
				outcome = engine.ToolOutcome{CallID: call.CallID, IsError: true,
					Content: fmt.Sprintf("tool %q asked a question with a schema Cairn cannot use: %v", call.Tool, err)}
			}
		}
	case errors.Is(res.err, ErrInDoubt):
		outcome.InDoubt = true
	case res.err == nil:
		outcome.Content = res.out
	case errors.Is(res.err, context.DeadlineExceeded) && t.Timeout > 0:
		outcome.Content, outcome.IsError = fmt.Sprintf("tool %q timed out after %s", call.Tool, t.Timeout), true
	default:
		outcome.Content, outcome.IsError = fmt.Sprintf("tool %q failed: %v", call.Tool, res.err), true
	}
	r.log.Debug("tool call", "tool", call.Tool, "call_id", call.CallID, "error", outcome.IsError)
	return outcome
}

// sessionFromHead is the Session as last recorded: the stored view, with
// the seq, status and update time of the head row (see engine.ViewChanged)
// and the lease of a running session.
func sessionFromHead(h store.Head) (*Session, error) {
	s, err := engine.StoredView(h.Summary, h.Seq, h.Status, h.UpdatedAt)
	if err != nil {
		return nil, fmt.Errorf("session %s: %w", h.ID, err)
	}
	if s.Status == StatusRunning {
		until := h.Lease.Until
		s.LeaseOwner, s.LeaseExpiresAt = h.Lease.Owner, &until
	}
	return s, nil
}

func newSessionID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "ses_" + hex.EncodeToString(b[:])
}
