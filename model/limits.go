package model

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// Defaults of Limits: a whole call, a silence and a reply.
const (
	DefaultTimeout       = 10 * time.Minute
	DefaultIdleTimeout   = 60 * time.Second
	DefaultMaxReplyBytes = 8 << 20
)

// Error codes of calls a limit ended; a failed turn records them as
// error.code (session.Failure.Code) and ProviderError.Code.
const (
	CodeReplyTooLarge = "model_reply_too_large"
	CodeTimeout       = "model_timeout"
)

// Limits bound one model call, so that a provider that stalls, trickles
// or answers without end can neither hold a session running nor fill the
// memory and the store. Zero fields mean the defaults; a negative field
// turns that limit off.
type Limits struct {
	// Timeout bounds the whole call, the provider's retries included
	// (config: timeout; default 10m).
	Timeout time.Duration
	// IdleTimeout ends an attempt during which the provider sent no byte
	// for so long: before the answer's headers, between them and the body,
	// or within a streamed answer (config: idle_timeout; default 60s). The
	// provider's SDK retries such an attempt like a connection error when
	// it happens before the headers.
	IdleTimeout time.Duration
	// MaxReplyBytes bounds one reply's size: the HTTP body of a provider's
	// answer (streamed or not), and the text plus tool-call arguments of
	// any model's reply (config: max_reply_bytes; default 8 MiB).
	MaxReplyBytes int64
}

// Resolved returns l with the defaults filled in; off limits stay negative.
func (l Limits) Resolved() Limits {
	if l.Timeout == 0 {
		l.Timeout = DefaultTimeout
	}
	if l.IdleTimeout == 0 {
		l.IdleTimeout = DefaultIdleTimeout
	}
	if l.MaxReplyBytes == 0 {
		l.MaxReplyBytes = DefaultMaxReplyBytes
	}
	return l
}

// Limited is a Model that states its own limits; the runner applies
// Timeout and MaxReplyBytes to every model and takes them from here when
// a model has them (the OpenAI and Anthropic adapters do).
type Limited interface {
	Limits() Limits
}

// LimitsOf returns m's limits, resolved: its own when it is Limited, else
// the defaults.
func LimitsOf(m Model) Limits {
	if l, ok := m.(Limited); ok {
		return l.Limits().Resolved()
	}
	return Limits{}.Resolved()
}

// LimitError is a model call that one of its Limits ended.
type LimitError struct {
	// Code is CodeReplyTooLarge or CodeTimeout.
	Code string
	// Key is the config key of the limit: max_reply_bytes, timeout or
	// idle_timeout.
	Key string
	// Limit is its value, as written in a config (8MiB, 60s).
	Limit string
	// InAnswer is set when the limit ended an answer being read, an
	// attempt the SDKs do not retry.
	InAnswer bool
}

// Error says which limit ended the call and how to raise it.
func (e *LimitError) Error() string {
	switch e.Key {
	case "max_reply_bytes":
		return fmt.Sprintf("the model's reply is larger than %s (max_reply_bytes); nothing of it was kept. Raise the model's max_reply_bytes in the config if replies this large are expected", e.Limit)
	case "idle_timeout":
		if e.InAnswer {
			return fmt.Sprintf("the provider stopped sending its answer for %s (idle_timeout); raise the model's idle_timeout in the config if it pauses that long", e.Limit)
		}
		return fmt.Sprintf("the provider sent nothing for %s (idle_timeout); raise the model's idle_timeout in the config if it thinks that long before answering", e.Limit)
	}
	return fmt.Sprintf("the model call took longer than %s (timeout), retries included; raise the model's timeout in the config if calls this long are expected", e.Limit)
}

// ReplyTooLarge is the error of a reply over limit bytes.
func ReplyTooLarge(limit int64) *LimitError {
	return &LimitError{Code: CodeReplyTooLarge, Key: "max_reply_bytes", Limit: FormatBytes(limit)}
}

// TimedOut is the error of a call past its timeout (key "timeout") or of
// an attempt silent past its idle timeout (key "idle_timeout").
func TimedOut(key string, d time.Duration) *LimitError {
	return &LimitError{Code: CodeTimeout, Key: key, Limit: d.String()}
}

// FormatBytes writes n as a config would: 8MiB, 512KiB, 1000B.
func FormatBytes(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}

// ReplySize is the size of a reply that counts against MaxReplyBytes: its
// text and its tool calls' names and arguments.
func ReplySize(m Message) int64 {
	n := int64(len(m.Content))
	for _, c := range m.ToolCalls {
		n += int64(len(c.ID) + len(c.Name) + len(c.Arguments))
	}
	return n
}

// HTTPClient returns a client for a provider SDK that applies IdleTimeout
// and MaxReplyBytes to every attempt: an attempt silent for IdleTimeout
// fails with a LimitError (before the headers: as a transport error, which
// the SDKs retry), and a body read past MaxReplyBytes fails with one, so
// an oversized reply is never read whole. base nil (or its Transport nil)
// means a transport of its own like http.DefaultTransport but keeping up
// to MaxIdleConnsPerHost idle connections to the provider.
func (l Limits) HTTPClient(base *http.Client) *http.Client {
	l = l.Resolved()
	c := &http.Client{}
	if base != nil {
		*c = *base
	}
	next := c.Transport
	if next == nil {
		next = newTransport()
	}
	c.Transport = &limitedTransport{next: next, limits: l}
	return c
}

// MaxIdleConnsPerHost is how many idle connections to a provider a model's
// own transport keeps. http.DefaultTransport keeps 2: a server running more
// turns at once than that would open (and, over TLS, handshake) a new
// connection for most model calls, and close one after each.
const MaxIdleConnsPerHost = 256

func newTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = MaxIdleConnsPerHost
	t.MaxIdleConns = max(t.MaxIdleConns, MaxIdleConnsPerHost)
	return t
}

type limitedTransport struct {
	next   http.RoundTripper
	limits Limits
}

// RoundTrip runs one attempt under an idle watchdog, which each byte of the
// answer rewinds.
func (t *limitedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancelCause(req.Context())
	w := &watchdog{ctx: ctx, cancel: cancel, idle: t.limits.IdleTimeout}
	w.start()
	attempt := req.WithContext(ctx)
	inMemoryBody(attempt)
	resp, err := t.next.RoundTrip(attempt)
	if err != nil {
		w.stop()
		if w.fired() {
			return nil, TimedOut("idle_timeout", t.limits.IdleTimeout)
		}
		return nil, err
	}
	w.kick()
	resp.Body = &limitedBody{body: resp.Body, w: w, max: t.limits.MaxReplyBytes}
	return resp, nil
}

// inMemoryBody gives an attempt (a copy of the caller's request) its body
// again from GetBody, and closes the body it had. The SDKs wrap a body of
// bytes in a reader of their own (openai-go and anthropic-sdk-go: a
// close-once reader), which hides from net/http that the body is already
// in memory; net/http then writes the headers and the body with two write
// calls — two TCP segments, and a wake-up of the provider's side for each
// — where GetBody's reader (a bytes.Reader) goes out with the headers in
// one. A body without GetBody, or of unknown length, is left as it is.
func inMemoryBody(attempt *http.Request) {
	if attempt.GetBody == nil || attempt.ContentLength <= 0 || attempt.Body == nil || attempt.Body == http.NoBody {
		return
	}
	body, err := attempt.GetBody()
	if err != nil {
		return // the transport reads the body it has
	}
	_ = attempt.Body.Close() // RoundTrip closes the body it is given; this one is not sent
	attempt.Body = body
}

// watchdog cancels an attempt's ctx after idle without a kick, with a
// LimitError as the cause; idle < 0: never.
type watchdog struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	idle   time.Duration
	timer  *time.Timer
}

func (w *watchdog) start() {
	if w.idle < 0 {
		return
	}
	w.timer = time.AfterFunc(w.idle, func() { w.cancel(TimedOut("idle_timeout", w.idle)) })
}

func (w *watchdog) kick() {
	if w.timer != nil {
		w.timer.Reset(w.idle)
	}
}

func (w *watchdog) stop() {
	if w.timer != nil {
		w.timer.Stop()
	}
	w.cancel(nil)
}

// fired reports whether the timer ended the attempt (the first cancel's
// cause is the one kept; stop's own cancel has none).
func (w *watchdog) fired() bool {
	var le *LimitError
	return errors.As(context.Cause(w.ctx), &le)
}

// limitedBody counts an answer's bytes and rewinds the watchdog on each.
type limitedBody struct {
	body io.ReadCloser
	w    *watchdog
	max  int64 // < 0: no limit
	n    int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.max >= 0 && b.n > b.max {
		return 0, ReplyTooLarge(b.max)
	}
	n, err := b.body.Read(p)
	b.n += int64(n)
	if n > 0 {
		b.w.kick()
	}
	if b.max >= 0 && b.n > b.max {
		b.w.stop()
		return 0, ReplyTooLarge(b.max)
	}
	if err != nil && b.w.fired() {
		e := TimedOut("idle_timeout", b.w.idle)
		e.InAnswer = true
		return n, e
	}
	return n, err
}

func (b *limitedBody) Close() error {
	b.w.stop()
	return b.body.Close()
}
