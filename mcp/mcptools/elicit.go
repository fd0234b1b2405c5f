package mcptools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/session"
)

// An MCP server may ask the user something in the middle of a tool call
// (elicitation/create). The call cannot be re-run to hear the answer (it may
// have done half its work), so Cairn holds it: the call goes on in the
// background, blocked on the question, while the session pauses with an
// input interrupt (cairn.Question.Held). When the answer comes, the tool
// runs again, finds the held call by its idempotency key, hands the answer
// over and waits for the call's result. A run that finds nothing held (the
// process restarted) returns cairn.ErrInDoubt: the call is never re-run
// silently.

// heldCall is one tool call in flight on a server.
type heldCall struct {
	key     string
	asks    chan *sdk.ElicitParams // the server's questions
	replies chan *sdk.ElicitResult // the user's answers, one at a time
	done    chan struct{}          // closed when the call returned
	cancel  context.CancelFunc     // ends the call
	sess    *sdk.ClientSession     // the session it runs on
	res     *sdk.CallToolResult
	err     error
}

// held is the hub's parked calls, by idempotency key.
type held struct {
	mu    sync.Mutex
	calls map[string]*heldCall
}

func (h *held) park(hc *heldCall, ttl time.Duration) {
	h.mu.Lock()
	if h.calls == nil {
		h.calls = map[string]*heldCall{}
	}
	h.calls[hc.key] = hc
	h.mu.Unlock()
	// Nobody may come back (the session was cancelled, or the answer went
	// to another process): the call ends after ttl.
	time.AfterFunc(ttl, func() {
		if h.take(hc.key) == hc {
			hc.cancel()
		}
	})
}

func (h *held) take(key string) *heldCall {
	h.mu.Lock()
	defer h.mu.Unlock()
	hc := h.calls[key]
	delete(h.calls, key)
	return hc
}

// startCall runs the call in the background, so that it can outlive this
// run of the tool while it waits for an answer.
func (c *conn) startCall(sess *sdk.ClientSession, key, name string, args json.RawMessage, ttl time.Duration) *heldCall {
	ctx, cancel := context.WithTimeout(context.Background(), ttl)
	hc := &heldCall{key: key, asks: make(chan *sdk.ElicitParams), replies: make(chan *sdk.ElicitResult, 1), done: make(chan struct{}), cancel: cancel, sess: sess}
	c.inflight(hc, true)
	go func() {
		defer cancel()
		hc.res, hc.err = sess.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
		c.inflight(hc, false)
		if hc.err != nil && ctx.Err() == nil {
			c.lost(sess, hc.err)
		}
		close(hc.done)
	}()
	return hc
}

// wait waits for the call's result or its next question. A question parks
// the call and pauses the session; ctx ending (the tool's timeout) ends
// the call.
func (h *Hub) wait(ctx context.Context, c *conn, name string, hc *heldCall) (string, error) {
	select {
	case <-hc.done:
		if hc.err != nil {
			return "", fmt.Errorf("mcp server %s: %s: %w", c.spec.Name, name, hc.err)
		}
		text := resultText(hc.res)
		if len(text) > h.maxResult {
			return "", errors.New(tooLarge(c.spec.Name, name, len(text), h.maxResult))
		}
		if hc.res.IsError {
			return "", errors.New(text)
		}
		return text, nil
	case q := <-hc.asks:
		if hc.key == "" { // not run by a cairn.Runner: nobody to ask
			hc.replies <- &sdk.ElicitResult{Action: "cancel"}
			return h.wait(ctx, c, name, hc)
		}
		h.held.park(hc, h.holdFor)
		_, err := cairn.AskFor(ctx, question(q))
		return "", err
	case <-ctx.Done():
		hc.cancel()
		go c.probe(hc.sess)
		return "", ctx.Err()
	}
}

// probe pings a server after a call ran out of time: a server that does
// not answer either is hung, and is restarted like one that crashed.
func (c *conn) probe(sess *sdk.ClientSession) {
	ctx, cancel := context.WithTimeout(context.Background(), c.pingTimeout)
	defer cancel()
	if err := sess.Ping(ctx, nil); err != nil {
		c.lost(sess, fmt.Errorf("a call timed out and the server does not answer a ping: %w", err))
	}
}

// resume hands the latest answer to a parked call and waits again.
func (h *Hub) resume(ctx context.Context, c *conn, name string, hc *heldCall) (string, error) {
	answers := cairn.Answers(ctx)
	reply := &sdk.ElicitResult{Action: "cancel"}
	if n := len(answers); n > 0 {
		reply = elicitResult(answers[n-1])
	}
	hc.replies <- reply // buffered: the server may have given up on the question
	return h.wait(ctx, c, name, hc)
}

// question is the interrupt an elicitation becomes.
func question(p *sdk.ElicitParams) cairn.Question {
	q := cairn.Question{Text: p.Message, URL: p.URL, Held: true}
	if p.RequestedSchema != nil && p.URL == "" {
		q.Schema, _ = json.Marshal(p.RequestedSchema)
	}
	return q
}

// elicitResult is how an answer goes back to the server: content as accept,
// a rejection as decline.
func elicitResult(a cairn.Answer) *sdk.ElicitResult {
	if a.Declined {
		return &sdk.ElicitResult{Action: "decline"}
	}
	r := &sdk.ElicitResult{Action: "accept"}
	if len(a.Content) > 0 {
		_ = json.Unmarshal(a.Content, &r.Content) // validated as an object by the engine
	}
	return r
}

// inflight tracks the calls in flight on this connection: an elicitation
// names no call, so it belongs to the only one.
func (c *conn) inflight(hc *heldCall, add bool) {
	c.callsMu.Lock()
	defer c.callsMu.Unlock()
	if add {
		c.calls = append(c.calls, hc)
		return
	}
	for i, x := range c.calls {
		if x == hc {
			c.calls = append(c.calls[:i], c.calls[i+1:]...)
			return
		}
	}
}

// onlyCall is the one call in flight, the only one a question can be
// from. A call that is just finishing does not count: with several in
// flight, it waits a moment for them to come down to one.
func (c *conn) onlyCall(ctx context.Context) (*heldCall, int) {
	deadline := time.Now().Add(2 * time.Second)
	for {
		c.callsMu.Lock()
		calls := len(c.calls)
		var hc *heldCall
		if calls == 1 {
			hc = c.calls[0]
		}
		c.callsMu.Unlock()
		if calls <= 1 || time.Now().After(deadline) || ctx.Err() != nil {
			return hc, calls
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// elicit answers the server's elicitation/create: it passes the question
// to the call that asked and waits for the user's answer.
func (c *conn) elicit(ctx context.Context, req *sdk.ElicitRequest, gone <-chan struct{}) (*sdk.ElicitResult, error) {
	hc, calls := c.onlyCall(ctx)
	if hc == nil {
		// Over stdio a question names no call: with none or several in
		// flight, nobody can tell whom to ask.
		c.log.Warn("mcp server asked a question that no single call can take; answered cancel", "calls_in_flight", calls, "message", req.Params.Message)
		return &sdk.ElicitResult{Action: "cancel"}, nil
	}
	if s := question(req.Params).Schema; len(s) > 0 {
		if err := cairn.CheckSchema(s); err != nil {
			return nil, fmt.Errorf("cairn cannot show this form: its requestedSchema is not a schema it can validate: %w", err)
		}
	}
	select {
	case hc.asks <- req.Params:
	case <-hc.done:
		return &sdk.ElicitResult{Action: "cancel"}, nil
	case <-gone:
		return &sdk.ElicitResult{Action: "cancel"}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case r := <-hc.replies:
		return r, nil
	case <-gone:
		return &sdk.ElicitResult{Action: "cancel"}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Follow answers "cancel" to the questions held for sessions of r that
// end without their answer (cancelled, failed, or completed elsewhere) and
// ends those calls, instead of holding them for HoldFor, until ctx ends or
// the runner closes. It subscribes before it returns, so no session that
// ends afterwards is missed, and follows in a goroutine of its own.
func (h *Hub) Follow(ctx context.Context, r *cairn.Runner) {
	go h.follow(r.Changes(ctx))
}

func (h *Hub) follow(changes iter.Seq2[session.Change, error]) {
	for ch, err := range changes {
		if err != nil {
			return // the runner closed
		}
		if ch.Session == nil {
			continue
		}
		switch ch.Session.Status {
		case cairn.StatusCancelled, cairn.StatusFailed, cairn.StatusCompleted:
			for _, hc := range h.held.release(ch.Session.ID + "/") {
				select {
				case hc.replies <- &sdk.ElicitResult{Action: "cancel"}:
				default:
				}
				// The server hears "cancel" and ends the call; one that does
				// not is stopped after a grace period.
				time.AfterFunc(10*time.Second, hc.cancel)
			}
		case cairn.StatusRunning, cairn.StatusPaused: // the held calls stay held
		}
	}
}

// release takes the held calls whose keys start with prefix.
func (h *held) release(prefix string) []*heldCall {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []*heldCall
	for key, hc := range h.calls {
		if strings.HasPrefix(key, prefix) {
			out = append(out, hc)
			delete(h.calls, key)
		}
	}
	return out
}
