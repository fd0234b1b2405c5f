package cairn

import (
	"context"
	"errors"
	"sync"
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
	tc := toolCallFrom(ctx)
	if tc == nil {
		return "", errors.New("cairn.Ask: called outside a tool run by a cairn.Runner")
	}
	st := &tc.ask
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.next < len(st.answers) {
		a := st.answers[st.next]
		st.next++
		return a, nil
	}
	return "", &askError{question: question}
}

type askState struct {
	mu      sync.Mutex
	answers []string
	next    int
}

// askError is what Ask returns to pause; the Runner recognises it.
type askError struct{ question string }

func (e *askError) Error() string {
	return "cairn: the tool asked the user a question and waits for the answer: " + e.question
}
