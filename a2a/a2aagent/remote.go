// Package a2aagent makes a remote agent that speaks the Agent2Agent
// protocol (A2A 1.0, the official Go SDK's client) a sub-agent of a Cairn
// agent: a tool that sends the remote agent a message and returns its
// answer. When the remote task turns input-required, its question becomes
// an interrupt of the calling session (with the remote task and the path
// through the remote agent), decided in any of Cairn's doors; the answer
// goes back to that task exactly once, from whichever process runs the
// call next (see docs/a2a.md).
package a2aagent

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/session"
)

// Options describe a remote A2A agent.
type Options struct {
	// Name is the tool's name, what the model calls (required).
	Name string
	// URL is the remote agent's base URL; its card is at URL +
	// /.well-known/agent-card.json (required).
	URL string
	// Headers are sent with every request (an Authorization header).
	Headers map[string]string
	// Description tells the model what the agent does; "": the card's.
	Description string
	// HTTPClient makes the requests; nil: one with a 60 s timeout.
	HTTPClient *http.Client
	// Attempts bounds the tries of a request the remote did not answer
	// (it is down, or the network failed), with Backoff before the
	// second, doubling; 0: 5 attempts from 200 ms.
	Attempts int
	Backoff  time.Duration
	// MaxOutput bounds the answer the model reads, in bytes; 0: 64 KiB.
	MaxOutput int
}

// maxQuestion bounds a remote question as the interrupt shows it;
// maxResponse a remote's HTTP answer; maxName a name in a remote's path.
const (
	maxQuestion = 4 << 10
	maxResponse = 4 << 20
	maxName     = 128
)

// cappedTransport fails a response body past maxResponse.
type cappedTransport struct{ next http.RoundTripper }

func (t cappedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err == nil {
		resp.Body = &cappedBody{r: resp.Body, left: maxResponse}
	}
	return resp, err
}

type cappedBody struct {
	r    io.ReadCloser
	left int64
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, fmt.Errorf("the remote agent's answer is larger than %d bytes", maxResponse)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *cappedBody) Close() error { return b.r.Close() }

// Tool is the remote agent as a tool: {"input": "…"} sends the remote
// agent a message and returns its answer (its artifacts' text). It is
// Idempotent: a run that a crash cut short runs again and goes on with
// the remote task where it stands, without sending anything twice.
func Tool(opts Options) (*cairn.Tool, error) {
	if opts.Name == "" || opts.URL == "" {
		return nil, errors.New("a2aagent: Name and URL are required")
	}
	r := &remote{opts: opts}
	if r.opts.HTTPClient == nil {
		r.opts.HTTPClient = &http.Client{Timeout: 60 * time.Second}
	}
	// The remote's answers are read through a cap: a peer that sends more
	// fails the request instead of filling memory.
	capped := *r.opts.HTTPClient
	capped.Transport = cappedTransport{next: cmp.Or[http.RoundTripper](capped.Transport, http.DefaultTransport)}
	r.opts.HTTPClient = &capped
	if r.opts.Attempts <= 0 {
		r.opts.Attempts = 5
	}
	if r.opts.Backoff <= 0 {
		r.opts.Backoff = 200 * time.Millisecond
	}
	if r.opts.MaxOutput <= 0 {
		r.opts.MaxOutput = 64 << 10
	}
	desc := opts.Description
	if desc == "" {
		desc = fmt.Sprintf("Send the remote agent %s a message and get its answer. It may ask the user questions on the way.", opts.Name)
	}
	return &cairn.Tool{Name: opts.Name, Description: desc, Idempotent: true,
		Parameters: json.RawMessage(`{"type":"object","properties":{"input":{"type":"string","description":"the message for the agent"}},"required":["input"]}`),
		Handler:    r.run}, nil
}

type remote struct {
	opts Options

	mu     sync.Mutex
	client *a2aclient.Client
	name   string // the card's name
}

// askState is what a question keeps for the run after its answer: the
// remote task, and the status it asked in (its message id), to tell
// whether the answer reached the task before this process stopped.
type askState struct {
	TaskID    a2a.TaskID `json:"task_id"`
	ContextID string     `json:"context_id"`
	Asked     string     `json:"asked"`
	// Interrupt and Seq, when the remote is a Cairn agent, are its
	// interrupt asked about and the seq to decide it at: the answer goes
	// back as its decision.
	Interrupt string `json:"interrupt,omitempty"`
	Seq       int64  `json:"seq,omitempty"`
}

func (r *remote) run(ctx context.Context, raw json.RawMessage) (string, error) {
	var args struct {
		Input string `json:"input"`
	}
	if err := json.Unmarshal(raw, &args); err != nil || strings.TrimSpace(args.Input) == "" {
		return "", fmt.Errorf("%s takes {\"input\": \"the message for the agent\"}", r.opts.Name)
	}
	c, err := r.connect(ctx)
	if err != nil {
		return "", err
	}
	key := cairn.IdempotencyKey(ctx)
	answers := cairn.Answers(ctx)
	var task *a2a.Task
	if len(answers) == 0 {
		// The message's id and its context are the call's: a run again
		// after a crash finds the task the run before started (ListTasks
		// by context), and a server that keys tasks by the message's id
		// (Cairn's does) answers the same task if it is sent again.
		contextID := contextFor(key)
		if task = r.started(ctx, c, contextID); task == nil {
			msg := &a2a.Message{ID: key + "/0", ContextID: contextID, Role: a2a.MessageRoleUser, Parts: []*a2a.Part{a2a.NewTextPart(args.Input)}}
			res, err := retry(ctx, r, func() (a2a.SendMessageResult, error) {
				return c.SendMessage(ctx, &a2a.SendMessageRequest{Message: msg})
			})
			if err != nil {
				return "", r.failed("sending the message", err)
			}
			switch v := res.(type) {
			case *a2a.Message: // an answer with no task
				return r.bound(partsText(v.Parts)), nil
			case *a2a.Task:
				task = v
			default:
				return "", fmt.Errorf("remote agent %s answered neither a task nor a message", r.opts.Name)
			}
		}
	} else if task, err = r.answer(ctx, c, key, answers); err != nil {
		return "", err
	}
	if task, err = r.settle(ctx, c, task); err != nil {
		return "", err
	}
	return r.outcome(ctx, task)
}

// answer gives the remote task the latest answer, unless it already has it
// (the run before stopped after sending it), and returns the task.
func (r *remote) answer(ctx context.Context, c *a2aclient.Client, key string, answers []cairn.Answer) (*a2a.Task, error) {
	last := answers[len(answers)-1]
	var st askState
	if err := json.Unmarshal(last.State, &st); err != nil || st.TaskID == "" {
		return nil, fmt.Errorf("remote agent %s: the question's state is lost; the remote task cannot be found", r.opts.Name)
	}
	task, err := retry(ctx, r, func() (*a2a.Task, error) { return c.GetTask(ctx, &a2a.GetTaskRequest{ID: st.TaskID}) })
	if err != nil {
		return nil, r.failed("reading task "+string(st.TaskID), err)
	}
	if !asking(task) || statusKey(task) != st.Asked {
		return task, nil // it moved on: the answer reached it already
	}
	var part *a2a.Part
	switch {
	case st.Interrupt != "": // a Cairn agent's interrupt: its decision
		d := map[string]any{"interrupt_id": st.Interrupt}
		switch {
		case last.Approved:
			d["action"] = "approve"
		case last.Declined:
			d["action"], d["reason"] = "reject", last.Reason
		case len(last.Content) > 0:
			d["action"], d["content"] = "answer", json.RawMessage(last.Content)
		default:
			d["action"], d["text"] = "answer", last.Text
		}
		var v any
		raw, _ := json.Marshal(map[string]any{"decisions": []any{d}, "seq": st.Seq})
		_ = json.Unmarshal(raw, &v)
		part = a2a.NewDataPart(v)
	case last.Declined:
		task, err := retry(ctx, r, func() (*a2a.Task, error) { return c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: st.TaskID}) })
		if err != nil {
			return nil, r.failed("canceling task "+string(st.TaskID), err)
		}
		return task, nil
	case len(last.Content) > 0:
		var v any
		_ = json.Unmarshal(last.Content, &v)
		part = a2a.NewDataPart(v)
	default:
		part = a2a.NewTextPart(last.Text)
	}
	msg := &a2a.Message{ID: fmt.Sprintf("%s/%d", key, len(answers)), Role: a2a.MessageRoleUser, TaskID: st.TaskID, ContextID: st.ContextID, Parts: []*a2a.Part{part}}
	wait := r.opts.Backoff
	for attempt := 1; ; attempt++ {
		res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: msg})
		if err == nil {
			if t, ok := res.(*a2a.Task); ok {
				return t, nil
			}
			return c.GetTask(ctx, &a2a.GetTaskRequest{ID: st.TaskID})
		}
		// The answer may have arrived though its reply was lost: the task
		// says so (it moved on), and then it is never sent again.
		if now, gerr := c.GetTask(ctx, &a2a.GetTaskRequest{ID: st.TaskID}); gerr == nil && (!asking(now) || statusKey(now) != st.Asked) {
			return now, nil
		}
		if attempt >= r.opts.Attempts || !unreachable(err) {
			return nil, r.failed("answering task "+string(st.TaskID), err)
		}
		select {
		case <-ctx.Done():
			return nil, r.failed("answering task "+string(st.TaskID), errors.Join(err, ctx.Err()))
		case <-time.After(wait):
		}
		wait *= 2
	}
}

// contextFor is the A2A context of the call with idempotency key key: the
// same on every run of the call, on any process.
func contextFor(key string) string {
	sum := sha256.Sum256([]byte(key))
	return "cairn-" + hex.EncodeToString(sum[:16])
}

// started is the task an earlier run of this call started in contextID,
// if the remote lists tasks (A2A's ListTasks); nil when it started none,
// or does not say (a Cairn remote answers the same task to the same
// message instead).
func (r *remote) started(ctx context.Context, c *a2aclient.Client, contextID string) *a2a.Task {
	list, err := c.ListTasks(ctx, &a2a.ListTasksRequest{ContextID: contextID, PageSize: 1})
	if err != nil || list == nil || len(list.Tasks) == 0 || list.Tasks[0] == nil || list.Tasks[0].ContextID != contextID {
		return nil
	}
	return list.Tasks[0]
}

// settle reads the task until it stops working: done, or asking.
func (r *remote) settle(ctx context.Context, c *a2aclient.Client, task *a2a.Task) (*a2a.Task, error) {
	wait := 50 * time.Millisecond
	for task.Status.State == a2a.TaskStateSubmitted || task.Status.State == a2a.TaskStateWorking || task.Status.State == a2a.TaskStateUnspecified {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
		next, err := retry(ctx, r, func() (*a2a.Task, error) { return c.GetTask(ctx, &a2a.GetTaskRequest{ID: task.ID}) })
		if err != nil {
			return nil, r.failed("reading task "+string(task.ID), err)
		}
		task = next
	}
	return task, nil
}

// outcome is what the call returns for a task that stopped working: its
// answer, a question for a person (the call pauses), or an error the
// model reads.
func (r *remote) outcome(ctx context.Context, task *a2a.Task) (string, error) {
	switch {
	case task.Status.State == a2a.TaskStateCompleted:
		var texts []string
		for _, a := range task.Artifacts {
			texts = append(texts, partsText(a.Parts))
		}
		if len(texts) == 0 && task.Status.Message != nil {
			texts = append(texts, partsText(task.Status.Message.Parts))
		}
		return r.bound(strings.Join(texts, "\n")), nil
	case asking(task):
		q := r.question(task)
		st := askState{TaskID: task.ID, ContextID: task.ContextID, Asked: statusKey(task)}
		if q.interrupt != nil {
			st.Interrupt, st.Seq = q.interrupt.ID, q.seq
		}
		state, _ := json.Marshal(st)
		_, err := cairn.AskFor(ctx, cairn.Question{Text: q.text, Held: true, State: state, Path: q.path, Approval: q.approval,
			Remote: &cairn.Remote{URL: r.opts.URL, TaskID: string(task.ID)}})
		return "", err
	}
	why := string(task.Status.State)
	if task.Status.Message != nil {
		if t := partsText(task.Status.Message.Parts); t != "" {
			why += ": " + truncate(session.Visible(t), maxQuestion)
		}
	}
	return "", fmt.Errorf("remote agent %s: task %s ended %s", r.opts.Name, task.ID, why)
}

// asked is what an asking task asks, as a person reads it (bounded,
// hidden characters shown), and the hops through the remote agent. A
// Cairn agent's status lists its interrupts: the first for a person is
// asked, an approval as an approval, with its own path.
type asked struct {
	text      string
	path      []cairn.PathStep
	approval  bool
	interrupt *remoteInterrupt
	seq       int64
}

// remoteInterrupt is an interrupt as a Cairn agent's status lists it.
type remoteInterrupt struct {
	ID   string           `json:"id"`
	Kind cairn.Kind       `json:"kind"`
	Path []cairn.PathStep `json:"path"`
	Ask  struct {
		Text string `json:"text"`
	} `json:"ask"`
}

func (r *remote) question(task *a2a.Task) asked {
	q := asked{path: []cairn.PathStep{{Agent: r.remoteName(), Tool: "a2a", CallID: string(task.ID)}}}
	if m := task.Status.Message; m != nil {
		q.text = partsText(textParts(m.Parts))
		for _, p := range m.Parts {
			if d, ok := p.Content.(a2a.Data); ok {
				if in, seq := cairnPause(d.Value); in != nil {
					q.interrupt, q.seq, q.text = in, seq, in.Ask.Text
					q.approval = in.Kind == cairn.KindApproval
					if len(in.Path) > 0 && len(in.Path) <= 16 {
						q.path = make([]cairn.PathStep, len(in.Path))
						for i, s := range in.Path { // names from the remote, bounded and visible
							q.path[i] = cairn.PathStep{Agent: truncate(session.Visible(s.Agent), maxName),
								Tool: truncate(session.Visible(s.Tool), maxName), CallID: truncate(session.Visible(s.CallID), maxName)}
						}
					}
				}
			}
		}
	}
	if strings.TrimSpace(q.text) == "" {
		q.text = fmt.Sprintf("The remote agent %s needs input.", r.opts.Name)
	}
	if task.Status.State == a2a.TaskStateAuthRequired {
		q.text = "Authorization needed: " + q.text
	}
	q.text = truncate(session.Visible(q.text), maxQuestion)
	return q
}

// cairnPause reads a Cairn agent's status data part ({"interrupts": […],
// "seq": N}): the first interrupt for a person that is an approval or a
// plain question, and the seq; nil for anything else.
func cairnPause(v any) (*remoteInterrupt, int64) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, 0
	}
	var d struct {
		Interrupts []remoteInterrupt `json:"interrupts"`
		Seq        *int64            `json:"seq"`
	}
	if json.Unmarshal(raw, &d) != nil || d.Seq == nil {
		return nil, 0
	}
	for i, in := range d.Interrupts {
		if in.ID != "" && (in.Kind == cairn.KindApproval || in.Kind == cairn.KindInput) {
			return &d.Interrupts[i], *d.Seq
		}
	}
	return nil, 0
}

func (r *remote) remoteName() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.name != "" {
		return r.name
	}
	return r.opts.Name
}

// connect resolves the remote agent's card once and keeps the client.
func (r *remote) connect(ctx context.Context) (*a2aclient.Client, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.client != nil {
		return r.client, nil
	}
	resolver := agentcard.NewResolver(r.opts.HTTPClient)
	var ropts []agentcard.ResolveOption
	for k, v := range r.opts.Headers {
		ropts = append(ropts, agentcard.WithRequestHeader(k, v))
	}
	card, err := retry(ctx, r, func() (*a2a.AgentCard, error) { return resolver.Resolve(ctx, r.opts.URL, ropts...) })
	if err != nil {
		return nil, r.failed("reading its agent card", err)
	}
	c, err := a2aclient.NewFromCard(ctx, card, a2aclient.WithJSONRPCTransport(r.opts.HTTPClient),
		a2aclient.WithCallInterceptors(headers(r.opts.Headers)))
	if err != nil {
		return nil, fmt.Errorf("remote agent %s: %w", r.opts.Name, err)
	}
	r.client, r.name = c, card.Name
	return c, nil
}

// headers sends the configured headers with every call.
type headers map[string]string

func (h headers) Before(ctx context.Context, req *a2aclient.Request) (context.Context, any, error) {
	for k, v := range h {
		req.ServiceParams.Append(k, v)
	}
	return ctx, nil, nil
}

func (h headers) After(context.Context, *a2aclient.Response) error { return nil }

// failed is an error the model reads: what failed, and the remote's word.
func (r *remote) failed(what string, err error) error {
	return fmt.Errorf("remote agent %s (%s): %s failed: %w", r.opts.Name, r.opts.URL, what, err)
}

// retry runs call until it gets an answer from the remote, at most
// Attempts times with a doubling backoff; an answer that is an A2A error
// (the remote refused) is not tried again.
func retry[T any](ctx context.Context, r *remote, call func() (T, error)) (T, error) {
	wait := r.opts.Backoff
	for attempt := 1; ; attempt++ {
		v, err := call()
		if err == nil || attempt >= r.opts.Attempts || !unreachable(err) {
			return v, err
		}
		select {
		case <-ctx.Done():
			return v, errors.Join(err, ctx.Err())
		case <-time.After(wait):
		}
		wait *= 2
	}
}

// unreachable reports whether err says the remote gave no answer (as
// against an A2A error it answered with).
func unreachable(err error) bool {
	var e *a2a.Error
	if errors.As(err, &e) {
		return false
	}
	for _, known := range []error{a2a.ErrTaskNotFound, a2a.ErrInvalidParams, a2a.ErrUnsupportedOperation, a2a.ErrTaskNotCancelable,
		a2a.ErrUnauthenticated, a2a.ErrUnauthorized, a2a.ErrInvalidRequest, a2a.ErrMethodNotFound} {
		if errors.Is(err, known) {
			return false
		}
	}
	return true
}

// asking reports whether the task waits for its caller.
func asking(t *a2a.Task) bool {
	return t.Status.State == a2a.TaskStateInputRequired || t.Status.State == a2a.TaskStateAuthRequired
}

// statusKey names the task's current status: its message's id, else its
// time.
func statusKey(t *a2a.Task) string {
	if t.Status.Message != nil && t.Status.Message.ID != "" {
		return t.Status.Message.ID
	}
	if t.Status.Timestamp != nil {
		return t.Status.Timestamp.UTC().Format(time.RFC3339Nano)
	}
	return string(t.Status.State)
}

func textParts(parts []*a2a.Part) []*a2a.Part {
	var out []*a2a.Part
	for _, p := range parts {
		if _, ok := p.Content.(a2a.Text); ok {
			out = append(out, p)
		}
	}
	return out
}

// partsText is parts as text: text as it is, data as JSON.
func partsText(parts []*a2a.Part) string {
	var b strings.Builder
	for _, p := range parts {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		switch v := p.Content.(type) {
		case a2a.Text:
			b.WriteString(string(v))
		case a2a.Data:
			raw, _ := json.Marshal(v.Value)
			b.Write(raw)
		case a2a.URL:
			b.WriteString(string(v))
		}
	}
	return b.String()
}

// bound is the remote's answer as the model reads it: hidden characters
// shown, cut at MaxOutput.
func (r *remote) bound(s string) string {
	return truncate(session.Visible(s), r.opts.MaxOutput)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf(" …[cut: %d more bytes]", len(s)-cut)
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
