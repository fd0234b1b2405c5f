package local

import (
	"encoding/json"
	"sync"

	"github.com/cairnhq/cairn/session"
)

// Question is a cairn.Question: what a tool asks the user.
type Question struct {
	Text     string
	Schema   json.RawMessage
	URL      string
	Held     bool
	State    json.RawMessage
	Remote   *session.Remote
	Path     []session.PathStep
	Approval bool
}

type askState struct {
	mu      sync.Mutex
	answers []session.Answer
	next    int
}

// Ask returns the answer to the call's next question q, if the user gave
// one, or else the error the tool must return to pause for it (cairn.AskFor).
func (c *Call) Ask(q Question) (session.Answer, error) {
	st := &c.ask
	st.mu.Lock()
	defer st.mu.Unlock()
	if !q.Held && st.next < len(st.answers) {
		a := st.answers[st.next]
		st.next++
		return a, nil
	}
	return session.Answer{}, &askError{q: q}
}

// Answers returns the answers the user gave to the call's questions so far.
func (c *Call) Answers() []session.Answer { return c.ask.answers }

// askError is what Ask returns to pause; runTool recognises it.
type askError struct{ q Question }

func (e *askError) Error() string {
	return "cairn: the tool asked the user a question and waits for the answer: " + e.q.Text
}
