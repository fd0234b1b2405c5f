package local

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/cairnhq/cairn/audit"
	"github.com/cairnhq/cairn/continuation"
	"github.com/cairnhq/cairn/driver"
	"github.com/cairnhq/cairn/internal/cond"
	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/internal/schema"
	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/webhook"
)

// DefaultMaxIterations is an agent's limit of model calls per turn when
// Agent.MaxIterations is 0.
const DefaultMaxIterations = 25

// Options are cairn.RunnerOptions (documented there) as the local driver takes
// them.
type Options struct {
	Store            store.Store
	Logger           *slog.Logger
	MaxParallelTools int
	ExpirySweep      time.Duration
	AutoApprove      bool
	AdminOverride    bool
	CachedSessions   int
	CacheBytes       int
	ContinuationKeys [][]byte
	Ledger           store.Ledger
	Lease            time.Duration
	Takeover         time.Duration
	Node             string
	TracerProvider   trace.TracerProvider
	Webhooks         []webhook.Subscription
	PublicURL        string
	WebhookDelivery  *webhook.Options
	MeterProvider    metric.MeterProvider
	Driver           driver.Driver
	Now              func() time.Time
	NewID            func() string
	CompletionWait   time.Duration
	Retention        map[session.Status]time.Duration
	RetentionSweep   time.Duration
	// TombstoneRetention is cairn.RunnerOptions.TombstoneRetention.
	TombstoneRetention time.Duration
	// Signer and CheckpointEvery are cairn.RunnerOptions'.
	Signer          session.CheckpointSigner
	CheckpointEvery int
	// AuditKeys is cairn.RunnerOptions.AuditKeys.
	AuditKeys audit.Keys
	// Suggestions is cairn.RunnerOptions.Suggestions.
	Suggestions SuggestionPolicy
}

// Runner starts sessions and resumes them. It is the in-process driver of
// Cairn's engine: it performs the engine's effects (model and tool calls)
// and appends each step's events to the Store in one commit. A Runner is
// safe for concurrent use; any number of Runners may share one Store.
type Runner struct {
	agents    map[string]*Agent
	limits    map[string]modelLimits // by agent: its model's, read once
	order     []string               // agent names as NewRunner got them
	compiled  atomic.Pointer[compiled]
	compileMu sync.Mutex // one recompile at a time
	// defs: the definitions stored, and machines for older ones;
	// rebuildDef makes a stored one's agents again (Options.Rebuild).
	defs       versions
	rebuildDef Rebuild
	engineOpts engine.Options
	store      store.Store
	snapshots  snapshotPolicy // for store
	// overlapWrites: store's appends wait for durability, and a step
	// followed by a model call is written while the call runs (driveIn).
	overlapWrites  bool
	log            *slog.Logger
	suggestions    SuggestionPolicy
	maxParallel    int
	toolWorkers    workers
	now            func() time.Time
	newID          func() string
	hub            hub
	feed           sessionFeed
	background     context.Context
	stop           context.CancelFunc
	wg             sync.WaitGroup
	cache          stateCache
	tracer         trace.Tracer
	contKeys       [][]byte
	ledger         store.Ledger
	codecMu        sync.Mutex
	cont           *continuation.Codec
	node           string
	leaseFor       time.Duration
	active         turns
	draining       chan struct{}
	drainOnce      sync.Once
	hooks          *webhooks     // nil: no webhooks
	driver         driver.Driver // nil: turns run here
	metrics        *metrics      // nil: no MeterProvider
	halt           atomic.Bool
	publicURL      string          // Options.PublicURL without its trailing slash
	callbacks      *callbackSigner // nil: the store keeps no secrets
	completionWait time.Duration
	tombstoneKeep  time.Duration // RunnerOptions.TombstoneRetention
	signer         session.CheckpointSigner
	signEvery      int64      // events between a running turn's checkpoints
	auditKeys      audit.Keys // what Audit trusts
}

// NewRunner checks and compiles the agents and their tools once. opts may
// be nil.
//
// rebuild makes the agents of a stored definition again, for the sessions
// that run under one the deployment no longer has (package cairn's); nil:
// such a session cannot resume.
func New(agents []*Agent, opts *Options, rebuild Rebuild) (*Runner, error) {
	if opts == nil {
		opts = &Options{}
	}
	r, err := newRunner(opts)
	if err != nil {
		return nil, err
	}
	r.suggestions = opts.Suggestions
	r.rebuildDef = rebuild
	r.engineOpts = engine.Options{AutoApprove: opts.AutoApprove, CheckAnswer: schema.CheckValue,
		Authority: session.Authority{AdminOverride: opts.AdminOverride}, RuleCondition: cond.NewCache("args", 1024).Eval}
	if err := r.compile(agents); err != nil {
		return nil, err
	}
	background, stop := context.WithCancel(context.Background())
	r.background, r.stop = context.WithValue(background, runnerGoroutineKey{}, true), stop
	r.hub.store = r.store
	r.feed.init(r.background)
	if err := r.startFeed(); err != nil {
		return nil, err
	}
	if opts.Takeover >= 0 && r.driver == nil {
		r.every(opts.Takeover, r.leaseFor/3, r.takeoverLoop)
	}
	if r.driver == nil {
		r.every(r.leaseFor/6, r.leaseFor/6, r.keepLeases)
	}
	if opts.ExpirySweep >= 0 && r.hasTTL() && r.driver == nil {
		r.every(opts.ExpirySweep, 250*time.Millisecond, r.sweep)
	}
	if len(opts.Retention) > 0 {
		if err := r.startRetention(opts.Retention, opts.RetentionSweep); err != nil {
			r.stop()
			r.wg.Wait()
			return nil, err
		}
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
	if d, ok := r.store.(store.Durable); ok {
		r.overlapWrites = d.Durable()
	}
	r.publicURL, r.callbacks = strings.TrimRight(opts.PublicURL, "/"), newCallbackSigner(r.store)
	r.completionWait = cmp.Or(opts.CompletionWait, DefaultCompletionWait)
	r.tombstoneKeep = opts.TombstoneRetention
	r.signer, r.signEvery = opts.Signer, int64(cmp.Or(opts.CheckpointEvery, DefaultCheckpointEvery))
	r.auditKeys = trustedKeys(opts.AuditKeys, opts.Signer)
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
	r.toolWorkers.maxIdle = idleToolWorkers
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
		switch {
		case a.Direct && a.Model != nil:
			return fmt.Errorf("cairn: agent %q is direct (it makes the calls its callers ask for): it takes no model", a.Name)
		case !a.Direct && a.Model == nil:
			return fmt.Errorf("cairn: agent %q has no model", a.Name)
		}
		r.agents[a.Name] = a
		r.order = append(r.order, a.Name)
		if r.limits == nil {
			r.limits = map[string]modelLimits{}
		}
		r.limits[a.Name] = limitsOf(a.Model)
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

// Close is cairn.Runner.Close (documented there).
func (r *Runner) Close() error {
	r.halt.Store(true)
	r.stop()
	r.wg.Wait()
	r.toolWorkers.close()
	return nil
}

// Store is cairn.Runner.Store (documented there).
func (r *Runner) Store() store.Store { return r.store }

// sessionFromHead is the Session as last recorded: the stored view, with
// the seq, status and update time of the head row (see engine.ViewChanged)
// and the lease of a running session.
func (r *Runner) sessionFromHead(h store.Head) (*session.Session, error) {
	s, err := engine.StoredView(h.Summary, h.Seq, h.Status, h.UpdatedAt)
	if err != nil {
		return nil, fmt.Errorf("session %s: %w", h.ID, err)
	}
	r.markCurrent(s)
	if s.Status == session.StatusRunning {
		until := h.Lease.Until
		s.LeaseOwner, s.LeaseExpiresAt = h.Lease.Owner, &until
	}
	return s, nil
}

// newSessionID is "ses_", the Unix time in milliseconds (12 hex digits)
// and 80 random bits. The time first, as in UUIDv7 and ULID, makes ids of
// sessions created together neighbours in every index keyed by session id
// (sessions, events, snapshots, blob refs): a day's sessions fill pages
// at the end of each B-tree, and a retention purge of old sessions frees
// whole pages at their start instead of a row on every page. A purge batch
// of 500 among 50,000 other sessions on SQLite takes four times as long
// with random ids (BenchmarkPurge in store/sqlite: 108 ms against 26).
// newNonce draws a session's nonce (session.Session.Nonce): 96 random
// bits, base64url.
func newNonce() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func newSessionID() string { return sessionIDAt(time.Now()) }

func sessionIDAt(t time.Time) string {
	var b [16]byte
	ms := uint64(t.UnixMilli())
	for i := range 6 {
		b[i] = byte(ms >> (8 * (5 - i)))
	}
	_, _ = rand.Read(b[6:])
	return "ses_" + hex.EncodeToString(b[:])
}
