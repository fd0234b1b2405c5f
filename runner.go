package cairn

import (
	"context"
	"encoding/json"
	"iter"
	"time"

	"github.com/cairnhq/cairn/audit"
	"github.com/cairnhq/cairn/internal/local"
	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/store"
)

// Runner starts sessions and resumes them. It is the in-process driver of
// Cairn's engine: it performs the engine's effects (model and tool calls)
// and appends each step's events to the Store in one commit. A Runner is
// safe for concurrent use; any number of Runners may share one Store.
type Runner struct {
	rt *local.Runner
	// coreHandle lets this module's durable drivers (driver/temporal) find
	// the runner's engine (local.CoreOf) with no exported method for it.
	coreHandle
}

type coreHandle = local.CoreHandle

// NewRunner checks and compiles the agents and their tools once. opts may
// be nil.
func NewRunner(agents []*Agent, opts *RunnerOptions) (*Runner, error) {
	compiled := make([]*local.Agent, len(agents))
	deployed := make(map[string]*Agent, len(agents))
	for i, a := range agents {
		if a != nil {
			var err error
			if compiled[i], err = a.compile(); err != nil {
				return nil, err
			}
			deployed[a.Name] = a
		}
	}
	rt, err := local.New(compiled, opts.runtime(), rebuilder{deployed}.rebuild)
	if err != nil {
		return nil, err
	}
	return &Runner{rt: rt, coreHandle: rt.Handle()}, nil
}

// Start opens a session on the named agent with the user's first message and
// runs the first turn until it ends or pauses.
func (r *Runner) Start(ctx context.Context, agent, input string, opts *StartOptions) (*Session, error) {
	return r.rt.Start(ctx, agent, input, (*local.StartOptions)(opts))
}

// Resume applies decisions to a paused session and runs the resumed turn
// until it ends or pauses again. seq must be the session's current Seq: of
// two resumes of the same pause exactly one wins, the other gets ErrConflict
// and changes nothing. A lone completion (ActionComplete or ActionFail) is
// the exception: like Complete, it needs no current seq and, while the
// session runs or is being taken over, waits for it to wait on the call;
// ErrConflict then means the call was decided. opts.Actor is recorded as
// who decided; opts may be nil.
func (r *Runner) Resume(ctx context.Context, sessionID string, seq int64, decisions []Decision, opts *TurnOptions) (*Session, error) {
	return r.rt.Resume(ctx, sessionID, seq, decisions, opts.rt())
}

// Preview computes the dry run (Tool.Preview) of a pending approval's call
// with arguments a person may approve it with instead of its own: what an
// edit would do, before deciding. The arguments are checked as a
// decision's (ErrInvalidArguments), and opts.Actor must be one who may
// approve the call; nil args preview the call's own. Nothing is
// recorded, and the session does not change. A dry run that fails is a
// Preview with Error, not an error.
func (r *Runner) Preview(ctx context.Context, sessionID, interruptID string, args json.RawMessage, opts *TurnOptions) (*Preview, error) {
	return r.rt.Preview(ctx, sessionID, interruptID, args, opts.rt())
}

// Fork starts a new session whose log is a copy of session id's up to seq,
// an event at which it paused or waited for a message (0: the latest),
// with the model replies' provider data (thinking signatures, encrypted
// reasoning) and every tool result: nothing runs again. The fork can be
// decided differently, or sent another message; the original is not
// changed. It belongs to the original's owner and tenant; its
// Session.ForkedFrom says where it comes from, and the deadlines of what
// it waits for are moved by the time since that pause. A seq that is no
// such point is ErrNotAForkPoint, naming the nearest ones. opts.Actor, if
// set, must see the session (ErrNotFound otherwise).
func (r *Runner) Fork(ctx context.Context, id string, seq int64, opts *TurnOptions) (*Session, error) {
	return r.rt.Fork(ctx, id, seq, opts.rt())
}

// DecideMany decides many pending calls across sessions in one request:
// req's list of decisions, each naming its session, or the interrupts its
// Selector picks (those opts.Actor may decide, newest pause first, at most
// its Limit) with its one Action and Reason. Each call is decided exactly
// as Resume decides it, at its session's current seq, with the same
// checks and events, and the batch's id on its decision event
// (data.batch); one call's failure (stale, expired, already decided,
// forbidden) is its own result and does not stop the others, and a call
// decided meanwhile by anyone is reported as already decided, never
// decided twice. The error is for a malformed request only
// (ErrInvalidRequest).
func (r *Runner) DecideMany(ctx context.Context, req BulkRequest, opts *TurnOptions) (*BulkResponse, error) {
	return r.rt.DecideMany(ctx, req, opts.rt())
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

// Audit checks a session's record — its chain of event hashes and its
// last signed checkpoint, against RunnerOptions.AuditKeys and the
// Signer's key — and says what it proves: "verified up to seq 42; signed
// checkpoint at seq 42, 2026-11-28 12:03:00 UTC by key k1" (see
// docs/audit.md). ErrNotFound for an unknown session.
func (r *Runner) Audit(ctx context.Context, id string) (audit.State, error) {
	return r.rt.Audit(ctx, id)
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

// Sessions lists every session, most recently updated first; status ""
// means all. SessionsPage reads them a page at a time.
func (r *Runner) Sessions(ctx context.Context, status Status) ([]*Session, error) {
	return r.rt.Sessions(ctx, status)
}

// SessionsPage lists sessions (status "" for all; page.Agent to list one
// agent's), most recently updated first, one page at a time; next is the cursor of the following page, empty
// after the last. A session updated between two pages moves to the front of
// the order, so a walk may miss or repeat it.
func (r *Runner) SessionsPage(ctx context.Context, status Status, page Page) (sessions []*Session, next string, err error) {
	return r.rt.SessionsPage(ctx, status, local.Page(page))
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
	return r.rt.InterruptsPage(ctx, local.Page(page))
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
func (r *Runner) Changes(ctx context.Context) iter.Seq2[session.Change, error] {
	return r.rt.Changes(ctx)
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
// ErrExpired past its deadline, ErrGone when the session it was issued for
// was purged (even if a later session has its id). Whether the interrupt
// still waits is the session's to say.
func (r *Runner) ReadActionLink(ctx context.Context, token string) (*ActionLink, error) {
	return r.rt.ReadActionLink(ctx, token)
}

// FollowActionLink decides the interrupt an action link names, once, and
// runs the session on like Resume. reason, on reject, is shown to the
// model. ErrConflict when the interrupt no longer waits (the link was used,
// or someone decided another way); ErrExpired, ErrInvalidLink, ErrGone as
// ReadActionLink. opts may be nil. The link decides as its receiver (the
// webhook's Name and Groups, Via action_link) unless opts.Actor is a person
// (Via set), signed in to follow it: then they decide, checked as such.
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

// Purge deletes for good the sessions of a final status (StatusCompleted,
// StatusFailed or StatusCancelled) last updated before before: each whole,
// with its events and snapshot, in batches of at most 500, resting after
// each nine times as long as it took, so other writers keep the store nine
// tenths of the time. It returns how many it deleted. Paused and
// running sessions are never deleted (another status is an error). The
// runner calls it on its own with RunnerOptions.Retention.
func (r *Runner) Purge(ctx context.Context, status Status, before time.Time) (int, error) {
	return r.rt.Purge(ctx, status, before)
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

// MayDecide reports whether actor may make decision d on s, as Resume
// checks it (nil, or ErrNotFound for a session of another tenant than
// actor's, ErrForbidden, ErrNotAnApprover, ErrAlreadyApproved):
// for a door that refuses before it calls Resume, and an inbox that tells
// what a person may decide from what they may only see. A decision on an
// interrupt s does not wait on is left to Resume to report.
func (r *Runner) MayDecide(actor Actor, s *Session, d Decision) error {
	return r.rt.MayDecide(actor, s, d)
}

// Decides reports whether actor decides in, an interrupt of a session
// owned by owner: may take every action it offers (session.Authority.Decides).
// The inbox shows what a person decides apart from what they may only see.
// It does not look at tenants: ask it of interrupts the actor may see (a
// listing with Page.Viewer, or MayDecide).
func (r *Runner) Decides(actor Actor, owner string, in *Interrupt) bool {
	return r.rt.Decides(actor, owner, in)
}

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
