package cairn

import (
	"bytes"
	"compress/flate"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/store"
)

// Token formats: "cairn.v2.<payload>.<mac>", both parts base64url without
// padding, mac = HMAC-SHA256(key, "cairn.v2.<payload>"), the payload
// compressed with DEFLATE: the Continuation's JSON (one line), a newline,
// then its Snapshot. Version 1 (issued before) was the Continuation's JSON
// with the whole event log, uncompressed; it still decodes.
const (
	tokenPrefix   = "cairn.v2."
	tokenPrefixV1 = "cairn.v1."
)

// maxContinuationJSON bounds what a token's payload may inflate to, so a
// small token cannot make the server allocate without limit.
const maxContinuationJSON = 64 << 20

// MaxContinuationBytes bounds the size of a token: the codec refuses to
// decode a longer one, and a stateless turn whose paused session would need
// a longer one fails with the code "too_large" instead of handing out a
// token no server would take (the HTTP API accepts a body of this size plus
// room for the decisions).
const MaxContinuationBytes = 4 << 20

// Continuation is the decoded content of a continuation token: a paused
// session's state, so any process holding the key can resume it.
type Continuation struct {
	// ID is unique per token; a token resumes once (see store.Ledger).
	ID string `json:"tid"`
	// KeyID names the key that signed it, for rotation.
	KeyID string `json:"kid"`
	Agent string `json:"agent"`
	// Snapshot is the paused session's state (the tokens Cairn issues). It
	// follows the JSON header in the payload, so it is neither re-encoded
	// nor scanned twice.
	Snapshot json.RawMessage `json:"-"`
	// Events is the paused session's whole log instead (version 1 tokens).
	Events []Event `json:"events,omitempty"`
}

// Codec signs and verifies continuation tokens with HMAC-SHA256. The first
// key signs; every key verifies, so keys can be rotated by putting the new
// one first. Tokens are authenticated, not encrypted: do not put secrets in
// what a client holds.
type Codec struct {
	keys [][]byte
	// Compressors cost about 1 MB each to make: Encode reuses them.
	writers sync.Pool // of *flate.Writer
}

// NewCodec returns a codec for keys (at least one, each at least 32 bytes).
func NewCodec(keys ...[]byte) (*Codec, error) {
	if len(keys) == 0 {
		return nil, errors.New("cairn: a continuation codec needs a key")
	}
	for i, k := range keys {
		if len(k) < 32 {
			return nil, fmt.Errorf("cairn: continuation key %d is %d bytes; use at least 32 random bytes", i, len(k))
		}
	}
	return &Codec{keys: keys}, nil
}

func keyID(key []byte) string {
	h := sha256.Sum256(append([]byte("cairn-kid:"), key...))
	return hex.EncodeToString(h[:4])
}

// Encode signs c with the first key, setting c.ID (if empty) and c.KeyID.
func (c *Codec) Encode(cont *Continuation) (string, error) {
	if cont.ID == "" {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", err
		}
		cont.ID = "tok_" + hex.EncodeToString(b[:])
	}
	cont.KeyID = keyID(c.keys[0])
	var payload bytes.Buffer
	zw, _ := c.writers.Get().(*flate.Writer)
	if zw == nil {
		var err error
		if zw, err = flate.NewWriter(&payload, flate.BestSpeed); err != nil {
			return "", err
		}
	} else {
		zw.Reset(&payload)
	}
	defer c.writers.Put(zw)
	if err := json.NewEncoder(zw).Encode(cont); err != nil { // a line: Encode ends it with '\n'
		return "", err
	}
	if _, err := zw.Write(cont.Snapshot); err != nil {
		return "", err
	}
	if err := zw.Close(); err != nil {
		return "", err
	}
	signed := tokenPrefix + base64.RawURLEncoding.EncodeToString(payload.Bytes())
	return signed + "." + base64.RawURLEncoding.EncodeToString(mac(c.keys[0], signed)), nil
}

func mac(key []byte, s string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(s))
	return m.Sum(nil)
}

// invalid is an ErrInvalidContinuation; a %w in format makes that error
// its cause, reachable with errors.Is and errors.As.
func invalid(format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	return &session.Error{Code: session.CodeInvalidContinuation, Message: "invalid continuation: " + err.Error(), Err: errors.Unwrap(err)}
}

// Decode verifies a token and returns its content. Any defect gives an
// error that errors.Is ErrInvalidContinuation; it never panics.
func (c *Codec) Decode(token string) (*Continuation, error) {
	if len(token) > MaxContinuationBytes {
		return nil, invalid("token is larger than %d bytes", MaxContinuationBytes)
	}
	compressed := strings.HasPrefix(token, tokenPrefix)
	if !compressed && !strings.HasPrefix(token, tokenPrefixV1) {
		return nil, invalid("not a cairn token (it must start with %q)", tokenPrefix)
	}
	dot := strings.LastIndexByte(token, '.')
	if dot < len(tokenPrefix) {
		return nil, invalid("the signature is missing")
	}
	// Canonical form only: the base64 decoder skips '\r' and '\n', so a
	// token with inserted line breaks would otherwise verify.
	for i := len(tokenPrefix); i < len(token); i++ {
		if !isTokenByte(token[i]) {
			return nil, invalid("byte %d (%q) is not part of a token: send the token exactly as it was issued", i, token[i])
		}
	}
	signed, sigText := token[:dot], token[dot+1:]
	if strings.IndexByte(signed[len(tokenPrefix):], '.') >= 0 {
		return nil, invalid("the token has more than two parts")
	}
	sig, err := base64.RawURLEncoding.Strict().DecodeString(sigText)
	if err != nil || len(sig) != sha256.Size {
		return nil, invalid("the signature is malformed")
	}
	var key []byte
	for _, k := range c.keys {
		if hmac.Equal(sig, mac(k, signed)) {
			key = k
			break
		}
	}
	if key == nil {
		return nil, invalid("the signature does not match (modified, truncated, or signed by another server)")
	}
	payload, err := base64.RawURLEncoding.Strict().DecodeString(signed[len(tokenPrefix):])
	if err != nil {
		return nil, invalid("the payload is not base64url: %w", err)
	}
	var snapshot []byte
	if compressed {
		plain, err := io.ReadAll(io.LimitReader(flate.NewReader(bytes.NewReader(payload)), maxContinuationJSON+1))
		if err != nil {
			return nil, invalid("the payload does not inflate: %w", err)
		}
		if len(plain) > maxContinuationJSON {
			return nil, invalid("the payload inflates to more than %d bytes", maxContinuationJSON)
		}
		nl := bytes.IndexByte(plain, '\n')
		if nl < 0 {
			return nil, invalid("the payload has no header line")
		}
		payload, snapshot = plain[:nl], plain[nl+1:]
	}
	var cont Continuation
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cont); err != nil {
		return nil, invalid("the payload is not a continuation: %w", err)
	}
	if dec.More() {
		return nil, invalid("the payload has more than one header")
	}
	if len(snapshot) > 0 {
		cont.Snapshot = snapshot
	}
	if (cont.Snapshot == nil) == (cont.Events == nil) {
		return nil, invalid("the payload must hold a snapshot or events, not both or neither")
	}
	if cont.KeyID != keyID(key) || cont.ID == "" || cont.Agent == "" || len(cont.Snapshot)+len(cont.Events) == 0 {
		return nil, invalid("the payload is incomplete")
	}
	return &cont, nil
}

// isTokenByte reports whether b may appear after the prefix: the base64url
// alphabet and the dot between payload and signature.
func isTokenByte(b byte) bool {
	return 'A' <= b && b <= 'Z' || 'a' <= b && b <= 'z' || '0' <= b && b <= '9' || b == '-' || b == '_' || b == '.'
}

// sharedKey returns the 32-byte key kept in the store under name,
// generating it on first use: the first writer wins, so every runner on
// the store gets the same one.
func sharedKey(ctx context.Context, secrets store.Secrets, name string) ([]byte, error) {
	fresh := make([]byte, 32)
	if _, err := rand.Read(fresh); err != nil {
		return nil, err
	}
	return secrets.Secret(ctx, name, fresh)
}

// Result is the answer of a stateless invocation.
type Result struct {
	Status     Status      `json:"status"`
	Output     string      `json:"output"`
	Interrupts []Interrupt `json:"interrupts"`
	Error      *Failure    `json:"error,omitempty"`
	// Continuation is present while paused: hand it back with decisions to resume.
	Continuation string `json:"continuation,omitempty"`
}

// continuationKeyName is where a generated key is kept in the store.
const continuationKeyName = "continuation-hmac-v1"

// codec returns the runner's codec: RunnerOptions.ContinuationKeys, or a key
// generated once and kept in the store (if it implements store.Secrets).
func (r *Runner) codec(ctx context.Context) (*Codec, error) {
	r.codecMu.Lock()
	defer r.codecMu.Unlock()
	if r.cont != nil {
		return r.cont, nil
	}
	keys := r.contKeys
	if len(keys) == 0 {
		secrets, ok := r.store.(store.Secrets)
		if !ok {
			return nil, errors.New("cairn: continuation tokens need a signing key: set RunnerOptions.ContinuationKeys (the store keeps no secrets: it does not implement store.Secrets)")
		}
		k, err := sharedKey(ctx, secrets, continuationKeyName)
		if err != nil {
			return nil, fmt.Errorf("continuation key: %w", err)
		}
		keys = [][]byte{k}
	}
	c, err := NewCodec(keys...)
	if err != nil {
		return nil, err
	}
	r.cont = c
	return c, nil
}

// Invoke runs agent statelessly: nothing is kept on the server. If the turn
// pauses, the Result carries a signed continuation token holding the whole
// session; Continue resumes it, once.
//
// opts may be nil.
func (r *Runner) Invoke(ctx context.Context, agent, input string, opts *TurnOptions) (*Result, error) {
	ctx, _ = opts.apply(ctx)
	scratch := store.NewMemory()
	st := &engine.State{}
	step, err := r.compiled.Load().machine.Step(st, engine.Start{SessionID: r.newID(), Agent: agent, Text: input}, r.now())
	if err != nil {
		return nil, err
	}
	if err := r.driveIn(ctx, scratch, st, step, false); err != nil {
		return nil, err
	}
	return r.result(ctx, st, agent)
}

// Continue verifies a continuation token, applies decisions and runs the
// resumed turn. A modified, truncated or foreign token, or one for another
// agent, gives ErrInvalidContinuation and nothing runs. Decisions are checked
// (unknown interrupt, invalid arguments, expiry) before the token is spent.
//
// A token resumes once across every runner sharing the ledger
// (RunnerOptions.Ledger, by default the Store): spending it is recorded
// before the turn runs, so two concurrent resumes cannot both run it, and
// the turn's answer is recorded with it when the turn ends. A token that was
// already spent gives a *SpentContinuationError (errors.Is ErrConflict)
// carrying that answer, so a client that lost it can carry on.
//
// opts.Actor is recorded as who decided; opts may be nil.
func (r *Runner) Continue(ctx context.Context, agent, token string, decisions []Decision, opts *TurnOptions) (*Result, error) {
	ctx, actor := opts.apply(ctx)
	c, err := r.codec(ctx)
	if err != nil {
		return nil, err
	}
	cont, err := c.Decode(token)
	if err != nil {
		return nil, err
	}
	if cont.Agent != agent {
		return nil, invalid("the token is for agent %q, not %q", cont.Agent, agent)
	}
	st, err := cont.state()
	if err != nil {
		return nil, err
	}
	paused := st.Seq
	in := engine.Decide{Seq: paused, Actor: actor, Decisions: decisions}
	step, err := r.compiled.Load().machine.Step(st, in, r.now())
	if err != nil {
		return nil, err
	}
	if r.ledger == nil {
		return nil, errors.New("cairn: continuation tokens cannot be resumed: the store keeps no token ledger (set RunnerOptions.Ledger)")
	}
	if err := r.ledger.MarkUsed(ctx, cont.ID); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return nil, r.spent(ctx, cont.ID)
		}
		return nil, fmt.Errorf("spend continuation %s: %w", cont.ID, err)
	}
	res, err := r.resumeStateless(ctx, st, paused, step, agent)
	r.settle(ctx, cont.ID, res, err)
	return res, err
}

// state is the paused session a continuation carries.
func (cont *Continuation) state() (*engine.State, error) {
	if cont.Snapshot == nil {
		st, err := engine.Replay(cont.Events)
		if err != nil {
			return nil, invalid("its events do not replay: %w", err)
		}
		return st, nil
	}
	st, _, err := engine.Restore(cont.Snapshot, nil, nil)
	if err != nil {
		return nil, invalid("its state does not load: %w", err)
	}
	return st, nil
}

// resumeStateless runs a resumed turn in a scratch store, which starts at
// seq, the paused session's (the log up to it lives in no store).
func (r *Runner) resumeStateless(ctx context.Context, st *engine.State, seq int64, step engine.Step, agent string) (*Result, error) {
	scratch := store.NewMemory()
	if err := scratch.Append(ctx, store.Head{ID: st.SessionID, Agent: st.Agent, Seq: seq}, 0, nil); err != nil {
		return nil, err
	}
	if err := r.driveIn(ctx, scratch, st, step, false); err != nil {
		return nil, err
	}
	return r.result(context.WithoutCancel(ctx), st, agent)
}

// SpentContinuationError answers a continuation token that was already
// resumed. It wraps ErrConflict.
type SpentContinuationError struct {
	// TokenID is the spent token's id.
	TokenID string
	// Result is the answer of the resume that spent the token, or nil while
	// that resume runs or when it ended with an error or its process
	// stopped first.
	Result *Result
	// Failure is the error that resume ended with, if it did.
	Failure string
}

// Error implements error.
func (e *SpentContinuationError) Error() string {
	switch {
	case e.Result != nil:
		return "this continuation was already resumed; its answer is attached (continue from its continuation)"
	case e.Failure != "":
		return "this continuation was already resumed and that resume failed: " + e.Failure
	}
	return "this continuation was already resumed (the resume is running, or its process stopped before it answered)"
}

// Unwrap makes the error errors.Is ErrConflict.
func (e *SpentContinuationError) Unwrap() error { return ErrConflict }

// outcome is what the ledger keeps of a resume.
type outcome struct {
	Result *Result `json:"result,omitempty"`
	Error  string  `json:"error,omitempty"`
}

func (r *Runner) spent(ctx context.Context, id string) error {
	e := &SpentContinuationError{TokenID: id}
	data, err := r.ledger.Outcome(ctx, id)
	if err != nil || len(data) == 0 {
		return e
	}
	var o outcome
	if json.Unmarshal(data, &o) == nil {
		e.Result, e.Failure = o.Result, o.Error
	}
	return e
}

// settle records a resume's answer with its spent token. It is written even
// when the caller's ctx ended: the answer is what a retry gets.
func (r *Runner) settle(ctx context.Context, id string, res *Result, runErr error) {
	o := outcome{Result: res}
	if runErr != nil {
		o.Error = runErr.Error()
	}
	data, err := json.Marshal(o)
	if err == nil {
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		err = r.ledger.SetOutcome(wctx, id, data)
	}
	if err != nil {
		r.log.Error("could not record the answer of a spent continuation token", "token", id, "err", err)
	}
}

func (r *Runner) result(ctx context.Context, st *engine.State, agent string) (*Result, error) {
	sess := st.View()
	res := &Result{Status: sess.Status, Output: sess.Output, Interrupts: sess.Interrupts, Error: sess.Error}
	if sess.Status != StatusPaused {
		return res, nil
	}
	snap, err := engine.Snapshot(st)
	if err != nil {
		return nil, err
	}
	c, err := r.codec(ctx)
	if err != nil {
		return nil, err
	}
	if res.Continuation, err = c.Encode(&Continuation{Agent: agent, Snapshot: snap}); err != nil {
		return nil, err
	}
	if n := len(res.Continuation); n > MaxContinuationBytes {
		return nil, &session.Error{Code: session.CodeTooLarge, Message: fmt.Sprintf(
			"the paused session needs a %d-byte continuation token, over the %d-byte limit: run conversations this long as stored sessions (POST /v1/sessions)", n, MaxContinuationBytes)}
	}
	return res, nil
}
