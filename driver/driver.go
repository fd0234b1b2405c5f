// Package driver defines what runs a cairn.Runner's turns outside its own
// process: a durable-execution engine such as Temporal (package
// driver/temporal). Without one, the Runner drives its sessions itself.
package driver

import (
	"context"

	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/session"
)

// Driver runs a cairn.Runner's turns somewhere else than in its own process: a
// durable-execution engine (package driver/temporal). With
// cairn.RunnerOptions.Driver set, Start, Resume, Send and Cancel go through it,
// while every read (Session, Sessions, Events, Subscribe, the inbox) comes
// from the store, which the driver keeps as a mirror of each session's log.
// The runner then takes no sessions over and sweeps no expiries: the driver
// owns them.
type Driver interface {
	// Start opens session in.ID and runs its first turn; unless detach,
	// it answers once the turn ends or pauses.
	Start(ctx context.Context, in Start, detach bool) (*session.Session, error)
	// Resume applies decisions (see cairn.Runner.Resume) and answers after the
	// resumed turn.
	Resume(ctx context.Context, id string, d Decide) (*session.Session, error)
	// Send gives the user's next message (see cairn.Runner.Send).
	Send(ctx context.Context, id string, msg Message) (*session.Session, error)
	// Cancel cancels the top interactive agent or the whole turn (see
	// Runner.Cancel); actor is who cancelled.
	Cancel(ctx context.Context, id string, scope session.CancelScope, actor session.Actor) (*session.Session, error)
	// Fork goes on with a fork (see cairn.Runner.Fork) from its state: its
	// log is in the store already, and the session waits (paused, or for
	// a message) until a decision or a message.
	Fork(ctx context.Context, in Fork) (*session.Session, error)
}

// Fork is a fork as a Driver gets it: its id and its state (an opaque
// snapshot the driver's core restores).
type Fork struct {
	ID    string
	State []byte
}

// Start is a new session as a Driver gets it.
type Start struct {
	ID, Agent, Input, Owner string
	// Nonce is the new session's random nonce (session.Session.Nonce).
	Nonce    string
	Metadata map[string]any
	// Actor is who sends the first message.
	Actor session.Actor
	// Call is a direct agent's session's one call (engine.Start.Call).
	Call *session.CallRequest
	// Tools are tools the sender runs itself (session.UserMessage.Tools).
	Tools []model.ToolDefinition
	// Definition is the definition of the agent the session starts under
	// (engine.Start.Definition), stored before the driver is asked.
	Definition string
}

// Decide is decisions on a paused session as a Driver gets them: the seq
// they were made at, who made them, and the bulk decision they are part
// of (session.BulkResponse.Batch; "" for a decision of its own).
type Decide struct {
	Seq       int64
	Decisions []session.Decision
	Actor     session.Actor
	Batch     string
}

// Message is a user's next message: its text, the seq it was written at
// (0: whatever is current), who sent it, and the tools the sender runs
// itself (session.UserMessage.Tools).
type Message struct {
	Text  string
	Seq   int64
	Actor session.Actor
	Tools []model.ToolDefinition
}
