package cairn

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/cairnhq/cairn/internal/local"
)

// Ask asks the user a question from inside a tool handler and returns the
// answer. The first time, it returns an error that the handler must return
// (as in `answer, err := cairn.Ask(ctx, q); if err != nil { return "", err }`):
// the session pauses with an input interrupt carrying the question. When the
// user answers (a decision {"action": "answer", "text": …}), the tool is
// called again from the start, and this time Ask returns the answer. A tool
// may ask several questions; each run gets the answers so far, in order.
//
// Because the tool is called again, do side effects after the questions.
func Ask(ctx context.Context, question string) (string, error) {
	a, err := AskFor(ctx, Question{Text: question})
	return a.Text, err
}

// Question is a question a tool asks the user (AskFor): text, and
// optionally a form or a page.
type Question struct {
	// Text is the question, or what the form or the page is for.
	Text string
	// Schema, when set, is a JSON Schema for an object: the user answers
	// with Decision.Content, validated against it before the tool runs again.
	Schema json.RawMessage
	// URL, when set, is a page where the user does what is asked; the user
	// answers once it is done.
	URL string
	// Held says the tool keeps work in flight in this process across the
	// pause (an MCP tool call waiting for its elicitation). A rejection then
	// runs the tool again with a declined Answer instead of ending the call,
	// so that the held work hears it; and a run that finds its held work gone
	// (the process restarted) must return ErrInDoubt, never start it afresh.
	// AskFor with Held always pauses: the tool reads the answers with
	// Answers when it runs again.
	Held bool
	// State, when set, is JSON the tool keeps for when it runs again: it
	// is recorded with the question and comes back with its answer
	// (Answer.State), on any process and after a restart. A tool that
	// talks to another system keeps there where it left off (a remote
	// task's id), so that its next run goes on instead of starting over.
	State json.RawMessage
	// Remote and Path, on a question a remote agent asked (a sub-agent
	// over A2A): its task, shown with the interrupt, and the hops through
	// it, appended to the interrupt's path.
	Remote *Remote
	Path   []PathStep
	// Approval asks approvers to approve what Text says instead of asking
	// a question: the call waits under an approval interrupt, decided as
	// any approval is (approvers, groups, the audit trail), and runs again
	// with an Answer whose Approved is set; a rejection reaches the tool
	// only when Held (a declined Answer), else it ends the call. An agent
	// over A2A relays its remote agent's approvals so.
	Approval bool
}

// AskFor is Ask for a question with a schema, a URL or held work. The
// first time it returns an error the handler must return; when the tool
// runs again after the answer, it returns the Answer. A declined Answer
// (Answer.Declined) reaches only tools whose Question is Held.
func AskFor(ctx context.Context, q Question) (Answer, error) {
	c := local.CallFrom(ctx)
	if c == nil {
		return Answer{}, errors.New("cairn.AskFor: called outside a tool run by a cairn.Runner")
	}
	return c.Ask(local.Question(q))
}

// Answers returns the answers the user gave to the questions this tool call
// asked so far, in order: what a tool holding work in flight (Question.Held)
// needs to hand over the latest one.
func Answers(ctx context.Context) []Answer {
	c := local.CallFrom(ctx)
	if c == nil {
		return nil
	}
	return c.Answers()
}
