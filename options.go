package cairn

import (
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/cairnhq/cairn/audit"
	"github.com/cairnhq/cairn/internal/local"
	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/webhook"
)

// DefaultLease is how long a runner owns a running turn without renewing
// it, when RunnerOptions.Lease is 0.
const DefaultLease = local.DefaultLease

// DefaultCacheBytes is RunnerOptions.CacheBytes when 0.
const DefaultCacheBytes = local.DefaultCacheBytes

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
	// AdminOverride lets a person with the admin role decide outside an
	// interrupt's approvers (another group, their own request under
	// separation of duties); each such decision records actor.override.
	// Off: admins are held to the approvers like everyone.
	AdminOverride bool
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
	Webhooks []webhook.Subscription
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
	// CompletionWait is how long a completion (Complete, Callback) that
	// arrives while its session runs waits for the session to wait on the
	// call, before ErrSessionBusy; 0 means 30s.
	CompletionWait time.Duration
	// Retention deletes finished sessions for good once they are this old
	// (since their last update), per final status (StatusCompleted,
	// StatusFailed, StatusCancelled): the whole session, its events and
	// snapshot with it. Paused and running sessions are never deleted. Nil
	// keeps everything. The store must purge (store.Purger: the memory,
	// SQLite and PostgreSQL stores do); see Purge.
	Retention map[Status]time.Duration
	// RetentionSweep is how often the runner deletes what Retention says;
	// 0 means every minute.
	RetentionSweep time.Duration
	// TombstoneRetention is how long a purge keeps the tombstone of each
	// session it deletes (its id, nonce, last seq and when), so that the
	// session's action links and callback URLs answer ErrGone (410); 0
	// means DefaultTombstoneRetention. Past it they answer ErrNotFound:
	// either way they never act again, since every link carries its
	// session's random nonce, which no later session has.
	TombstoneRetention time.Duration
	// Signer, when set, signs a checkpoint of a session's log (its seq
	// and the hash of its last event; see docs/audit.md) in the commit of
	// every pause, every turn's end and, while a turn runs, every
	// CheckpointEvery events, so that `cairn audit verify` can prove the
	// log unchanged to someone who trusts the signer's public key.
	// audit.NewKey and audit.StoreKey make one. Nil signs nothing.
	Signer CheckpointSigner
	// CheckpointEvery is how many events a running turn records between
	// checkpoints; 0 means DefaultCheckpointEvery.
	CheckpointEvery int
	// AuditKeys are the public keys whose checkpoints Runner.Audit
	// trusts, besides the Signer's own (when it is an *audit.Key): older
	// keys, after a rotation.
	AuditKeys audit.Keys
	// Suggestions says when the inbox offers a standing rule on an
	// approval (PendingInterrupt.Suggestion): the zero value offers one
	// after 20 approvals by 2 people (docs/rules.md).
	Suggestions SuggestionPolicy
}

// SuggestionPolicy says when the inbox offers a standing rule: the same
// call (tool, agent, argument shape) approved as asked at least
// MinApprovals times by at least MinPeople people, never rejected or
// edited. Zero fields take the defaults (20, 2); Off offers none.
type SuggestionPolicy = local.SuggestionPolicy

// DefaultCheckpointEvery is how many events a running turn records
// between signed checkpoints unless RunnerOptions.CheckpointEvery says
// otherwise.
const DefaultCheckpointEvery = local.DefaultCheckpointEvery

// DefaultTombstoneRetention is how long a purged session's tombstone is
// kept unless RunnerOptions.TombstoneRetention says otherwise.
const DefaultTombstoneRetention = local.DefaultTombstoneRetention

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
	// Call is the one call a session of a direct agent makes (see
	// Agent.Direct; RequestApproval fills it in): required for one,
	// refused for any other.
	Call *CallRequest
	// ClientTools are tools the caller runs itself, declared with the
	// first message (AG-UI frontend tools): offered to the model with the
	// agent's until the next message; a call of one waits for the
	// caller's result (KindClient), its arguments checked against the
	// declared parameters. An agent with NoClientTools refuses them.
	ClientTools []model.ToolDefinition
}

// runtime is o as the runtime takes it: the same fields, so that the
// compiler keeps the two in step.
func (o *RunnerOptions) runtime() *local.Options { return (*local.Options)(o) }

// TurnOptions are the optional settings of a call that runs a turn:
// Resume, Send, Cancel, Invoke and Continue. Nil means none.
type TurnOptions struct {
	// Actor is who makes the call, recorded with each decision (Resume,
	// Continue) for the audit trail.
	Actor Actor
	// Observe, when set, is called with every event the call records and,
	// for agents whose model streams, every text delta (type
	// EventModelDelta, Seq 0, not stored), in order, on the goroutine that
	// runs the turn; the turn waits for it. Stream wraps it in an iterator.
	Observe func(Event)
	// ClientTools, for Send, are tools the caller runs itself, declared
	// with the message (see StartOptions.ClientTools).
	ClientTools []model.ToolDefinition
}

// rt is o as the runtime takes it.
func (o *TurnOptions) rt() *local.TurnOptions { return (*local.TurnOptions)(o) }
