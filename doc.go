// Package cairn runs LLM agents that pause anywhere and resume anywhere.
//
// An Agent is configuration: instructions, a model.Model and Tools. A Tool
// has an approval policy; when a model calls a tool that needs approval, the
// session pauses with an Interrupt and is recorded in a store.Store. Anyone
// holding the session id may later Resume it with Decisions (approve,
// approve with new arguments, reject with a reason the model sees), in this
// process or another, after a restart. An approved call runs exactly once:
// the decision and the tool's start are committed together, and a second
// resume of the same pause fails with ErrConflict.
//
//	deleteFile := cairn.NewTool("delete_file", "Delete a file.",
//		func(ctx context.Context, a struct{ Filename string `json:"filename"` }) (string, error) {
//			return "deleted " + a.Filename, os.Remove(a.Filename)
//		},
//		cairn.RequireApproval(),
//		cairn.WithConfirmation("Delete file '{{.filename}}'? This cannot be undone."))
//	runner, _ := cairn.NewRunner(cairn.RunnerOptions{Agents: []*cairn.Agent{{
//		Name: "files", Model: m, Tools: []*cairn.Tool{deleteFile}}}})
//	s, _ := runner.Start(ctx, "files", "Delete test.txt", nil)
//	// s.Status == "paused"; s.Interrupts[0].Message == "Delete file 'test.txt'? …"
//	s, _ = runner.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove}})
//
// Agents nest: AgentTool runs another agent as a tool, InteractiveAgentTool
// lets it take over the conversation until it calls "complete", Handoff
// passes the conversation on, and Ask (inside any tool) pauses for the
// user's answer. However deep a pause, it shows as one flat list of
// Interrupts, each with the Path from the root agent to the call.
//
// Every transition is an Event appended to the session's log; Stream yields
// them (and streaming text deltas) as an iterator, Subscribe as a channel.
// Errors callers branch on are sentinel values for errors.Is: ErrConflict,
// ErrNotFound, ErrExpired, ErrInvalidArguments, ErrUnknownInterrupt,
// ErrInvalidContinuation, ErrUnknownAgent, ErrInvalidRequest.
//
// The engine underneath is deterministic (no I/O, no clock); the Runner is
// its in-process driver, and the Store keeps the log (memory, SQLite,
// PostgreSQL). Invoke and Continue run the same engine statelessly, the
// paused state travelling as an HMAC-signed token.
package cairn
