// Package cairn runs LLM agents that pause anywhere and resume anywhere: a
// tool call waits for a person's approval, a tool asks the user a question, a
// sub-agent talks with the user for a while and hands a result back. The
// session is recorded step by step in a store, so it can be resumed by this
// process or another, after a restart, and an approved call runs exactly once.
//
// # Agents and tools
//
// An [Agent] is configuration: a name, instructions, a [model.Model] and
// [Tool]s. [NewTool] builds a tool from a typed Go function; the JSON Schema of
// its arguments is generated from the struct and checked before the function
// runs. The Tool fields say when a person must approve a call (Approval), what
// they are shown (Confirmation), and how the call runs (Timeout, Idempotent,
// ApprovalTTL):
//
//	type deleteArgs struct {
//		Filename string `json:"filename"`
//	}
//	deleteFile := cairn.NewTool(&cairn.Tool{
//		Name:         "delete_file",
//		Description:  "Delete a file.",
//		Approval:     cairn.Always(),
//		Confirmation: "Delete file '{{.filename}}'? This cannot be undone.",
//	}, func(ctx context.Context, a deleteArgs) (string, error) {
//		return "deleted " + a.Filename, os.Remove(a.Filename)
//	})
//
// Models live in subpackages: model/openai (OpenAI and any OpenAI-compatible
// server), model/anthropic, and model/scripted for tests and demos.
//
// # Running, pausing, deciding
//
// A [Runner] runs agents. It starts a session with the user's message, runs
// the turn until it ends or pauses, and records each step in its store (in
// memory by default; store/sqlite and store/postgres keep sessions across
// restarts and share them between processes):
//
//	runner, err := cairn.NewRunner([]*cairn.Agent{{Name: "files", Model: m, Tools: []*cairn.Tool{deleteFile}}}, nil)
//	s, err := runner.Start(ctx, "files", "Delete test.txt", nil)
//	// s.Status == cairn.StatusPaused; s.Interrupts[0].Message == "Delete file 'test.txt'? …"
//
// A paused [Session] lists its [Interrupt]s: approvals, questions, and
// interactive agents waiting for the user. Answer them with [Decision]s
// (approve, approve with new arguments, reject with a reason the model sees,
// answer a question) naming the session's Seq:
//
//	s, err = runner.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{
//		InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove}},
//		&cairn.TurnOptions{Actor: cairn.Actor{Name: "ana", Role: "approver"}})
//
// Of two resumes of one pause exactly one wins; the other gets [ErrConflict]
// and changes nothing. The decision and the tool's start are committed
// together, so the approved call runs once, even across a crash: a call that
// was running when its process died pauses as InDoubt instead of running
// again, unless its tool is Idempotent.
//
// # Nesting
//
// [AgentTool] runs another agent as a tool, [InteractiveAgentTool] lets it
// take over the conversation until it calls "complete", [Handoff] passes the
// conversation on, and [Ask], inside any tool, pauses for the user's answer.
// However deep a pause, it shows as one flat list of interrupts, each with
// the Path from the root agent to the call; [Runner.Send] talks to the agent
// at the top of the Session's Stack.
//
// # Events
//
// Every transition is an [Event] appended to the session's log.
// [Runner.Events] reads it, [Runner.Follow] follows it live across
// processes, and [Stream] (or the Observe option of a call) sees a turn's
// events and its model's text deltas as they happen.
//
// # Vocabulary, options and errors
//
// Session, Interrupt, Decision, Event and the other names a session is made
// of are defined in package session and re-exported here. Calls take what
// they need as parameters and their optional settings as a pointer to an
// options struct, nil meaning the defaults. Errors to branch on are sentinel
// values for errors.Is ([ErrConflict], [ErrNotFound], [ErrExpired],
// [ErrInvalidArguments], [ErrUnknownInterrupt], [ErrInvalidContinuation],
// [ErrUnknownAgent], [ErrInvalidRequest]); errors.As with a *[Error] gives the
// code the HTTP API sends. A failed session's Error reaches the provider's
// [model.ProviderError] with errors.As.
//
// # Underneath
//
// The engine (internal/engine) is deterministic: no I/O, no clock. The
// Runner is its in-process driver; [Runner.Invoke] and [Runner.Continue] run
// the same engine statelessly, the paused state travelling in an
// HMAC-signed token. The HTTP server is package server, the configuration
// file package config, and the CLI cmd/cairn. See docs/library.md for a guide
// and docs/architecture.md for the design.
package cairn
