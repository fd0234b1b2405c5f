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
// Every transition is an Event appended to the session's log; Subscribe
// streams them live. The engine underneath is deterministic; the Runner is
// its in-process driver.
package cairn
