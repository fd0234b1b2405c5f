package local_test

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
	"io"
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/continuation"
	"github.com/cairnhq/cairn/store"
)

func key(c byte) []byte { return []byte(strings.Repeat(string(c), 32)) }

func TestContinuationTokens(t *testing.T) {
	ctx := context.Background()
	var rec counter
	st := store.NewMemory()
	r := runnerFor(t, []*cairn.Agent{{Name: "main", Model: deleteScript(), Tools: []*cairn.Tool{deleteTool(&rec)}}}, &cairn.RunnerOptions{Store: st, ContinuationKeys: [][]byte{key('a')}})
	res, err := r.Invoke(ctx, "main", "Delete test.txt", nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != cairn.StatusPaused || res.Continuation == "" || len(res.Interrupts) != 1 {
		t.Fatalf("invoke: %+v", res)
	}
	if sessions, _ := r.Sessions(ctx, ""); len(sessions) != 0 {
		t.Fatal("a stateless invocation left a session in the store")
	}
	approve := []cairn.Decision{{InterruptID: res.Interrupts[0].ID, Action: cairn.ActionApprove}}
	tok := res.Continuation

	foreign := runnerFor(t, []*cairn.Agent{{Name: "main", Model: deleteScript(), Tools: []*cairn.Tool{deleteTool(&rec)}}}, &cairn.RunnerOptions{ContinuationKeys: [][]byte{key('b')}})
	foreignRes, err := foreign.Invoke(ctx, "main", "Delete test.txt", nil)
	if err != nil {
		t.Fatal(err)
	}
	dot := strings.LastIndexByte(tok, '.')
	payload := inflate(t, tok[len("cairn.v2."):dot])
	if !strings.Contains(payload, "test.txt") {
		t.Fatalf("the payload does not hold the call: %s", payload)
	}
	forged := "cairn.v2." + deflate(t, strings.Replace(payload, "test.txt", "/etc/passwd", 1)) + tok[dot:]
	flip := []byte(tok)
	flip[len("cairn.v2.")+10] ^= 1
	bad := map[string]string{
		"tampered payload": forged,
		"flipped byte":     string(flip),
		"truncated":        tok[:len(tok)-5],
		"no signature":     tok[:dot],
		"foreign key":      foreignRes.Continuation,
		"garbage":          "hello",
		"empty":            "",
	}
	for name, b := range bad {
		if _, err := r.Continue(ctx, "main", b, approve, nil); !errors.Is(err, cairn.ErrInvalidContinuation) {
			t.Errorf("%s: err = %v, want ErrInvalidContinuation", name, err)
		}
	}
	if _, err := r.Continue(ctx, "other", tok, approve, nil); !errors.Is(err, cairn.ErrInvalidContinuation) {
		t.Errorf("wrong agent: %v", err)
	}
	// A decision the session refuses does not spend the token.
	if _, err := r.Continue(ctx, "main", tok, []cairn.Decision{{InterruptID: "int_nope", Action: "approve"}}, nil); !errors.Is(err, cairn.ErrUnknownInterrupt) {
		t.Fatalf("unknown interrupt: %v", err)
	}
	if len(rec.runs()) != 0 {
		t.Fatal("a refused token ran the tool")
	}
	done, err := r.Continue(ctx, "main", tok, approve, nil)
	if err != nil {
		t.Fatal(err)
	}
	if done.Status != cairn.StatusCompleted || done.Output != "Result: Deleted test.txt" || done.Continuation != "" || len(rec.runs()) != 1 {
		t.Fatalf("continue: %+v, runs %v", done, rec.runs())
	}
	_, err = r.Continue(ctx, "main", tok, approve, nil)
	var spent *continuation.SpentError
	if !errors.Is(err, cairn.ErrConflict) || !errors.As(err, &spent) {
		t.Fatalf("replay: %v, want a SpentContinuationError (ErrConflict)", err)
	}
	// A client that lost the answer gets it with the 409.
	if spent.Result == nil || spent.Result.Output != done.Output || spent.Result.Status != done.Status {
		t.Fatalf("the spent token's answer = %+v, want %+v", spent.Result, done)
	}
	if len(rec.runs()) != 1 {
		t.Fatal("a replayed token ran the tool again")
	}
}

// twoRunnersOnOneStore returns two runners of the delete agent sharing one
// store (and so its generated key and its token ledger).
func twoRunnersOnOneStore(t *testing.T, rec *counter) (*cairn.Runner, *cairn.Runner) {
	t.Helper()
	st := store.NewMemory()
	var runners [2]*cairn.Runner
	for i := range runners {
		r := runnerFor(t, []*cairn.Agent{{Name: "main", Model: deleteScript(), Tools: []*cairn.Tool{deleteTool(rec)}}}, &cairn.RunnerOptions{Store: st})
		runners[i] = r
	}
	return runners[0], runners[1]
}

func TestGeneratedKeyIsSharedThroughTheStore(t *testing.T) {
	ctx := context.Background()
	var rec counter
	r1, r2 := twoRunnersOnOneStore(t, &rec)
	res, err := r1.Invoke(ctx, "main", "Delete test.txt", nil)
	if err != nil {
		t.Fatal(err)
	}
	done, err := r2.Continue(ctx, "main", res.Continuation, []cairn.Decision{{InterruptID: res.Interrupts[0].ID, Action: cairn.ActionApprove}}, nil)
	if err != nil || done.Status != cairn.StatusCompleted {
		t.Fatalf("%v %+v", err, done)
	}
}

// FuzzDecodeContinuation: any string is a token or an error, never a panic,
// and nothing but a token this key signed decodes.
func FuzzDecodeContinuation(f *testing.F) {
	c, _ := cairn.NewCodec(key('k'))
	good, _ := c.Encode(&cairn.Continuation{ID: "tok_fixed", Agent: "main", Events: []cairn.Event{{Seq: 1, Type: "session_started", Data: []byte(`{}`)}}})
	f.Add(good)
	f.Add("cairn.v2..")
	f.Add("cairn.v2.e30.AAAA")
	f.Add("cairn.v1..")
	f.Add("cairn.v1.e30.AAAA")
	f.Add(good[:len(good)-3])
	f.Add(good[:len(good)-4] + "\n" + good[len(good)-4:])
	f.Add(good[:len(good)-4] + "\r\n" + good[len(good)-4:])
	f.Fuzz(func(t *testing.T, tok string) {
		cont, err := c.Decode(tok)
		if err == nil && tok != good {
			// Only a byte-identical token verifies (the MAC covers every byte but
			// allows no alternative encodings of the signature).
			if _, err2 := c.Encode(cont); err2 != nil {
				t.Fatal(err2)
			}
			t.Fatalf("a token other than the signed one decoded: %q", tok)
		}
		if err != nil && !errors.Is(err, cairn.ErrInvalidContinuation) {
			t.Fatalf("error is not ErrInvalidContinuation: %v", err)
		}
	})
}

// Line breaks inserted anywhere in a token are refused: the base64 decoder
// would skip them, so the token would otherwise verify.
func TestContinuationWhitespaceRefused(t *testing.T) {
	c, _ := cairn.NewCodec(key('k'))
	good, err := c.Encode(&cairn.Continuation{Agent: "main", Events: []cairn.Event{{Seq: 1, Type: "session_started", Data: []byte(`{}`)}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Decode(good); err != nil {
		t.Fatal(err)
	}
	for _, at := range []int{len("cairn.v1.") + 3, strings.LastIndexByte(good, '.') + 1, len(good) - 2, len(good)} {
		for _, ws := range []string{"\n", "\r\n", " "} {
			bad := good[:at] + ws + good[at:]
			if _, err := c.Decode(bad); !errors.Is(err, cairn.ErrInvalidContinuation) {
				t.Errorf("%q inserted at %d: %v, want ErrInvalidContinuation", ws, at, err)
			}
		}
	}
}

// A paused session whose token would exceed MaxContinuationBytes is refused
// when the token would be issued, not handed out to fail on resume.
func TestContinuationTooLargeIsRefusedAtIssue(t *testing.T) {
	var rec counter
	r := runnerFor(t, []*cairn.Agent{{Name: "main", Model: deleteScript(), Tools: []*cairn.Tool{deleteTool(&rec)}}}, &cairn.RunnerOptions{ContinuationKeys: [][]byte{key('a')}})
	// Random text: tokens are compressed, so a repeated letter would fit.
	noise := func(n int) string {
		b := make([]byte, n*3/4)
		rand.Read(b)
		return base64.StdEncoding.EncodeToString(b)
	}
	_, err := r.Invoke(context.Background(), "main", "Delete test.txt "+noise(cairn.MaxContinuationBytes*3/2), nil)
	if cairn.ErrorCode(err) != "too_large" || !strings.Contains(err.Error(), "POST /v1/sessions") {
		t.Fatalf("err = %v, want too_large naming the alternative", err)
	}
	res, err := r.Invoke(context.Background(), "main", "Delete test.txt "+noise(cairn.MaxContinuationBytes/2), nil)
	if err != nil || len(res.Continuation) > cairn.MaxContinuationBytes {
		t.Fatalf("a token under the limit: %v, %d bytes", err, len(res.Continuation))
	}
}

// Two runners sharing a ledger (here: one store) spend a token once, even
// resuming at the same time: the tool runs once.
func TestContinuationSpentOnceUnderRace(t *testing.T) {
	ctx := context.Background()
	var rec counter
	r1, r2 := twoRunnersOnOneStore(t, &rec)
	res, err := r1.Invoke(ctx, "main", "Delete test.txt", nil)
	if err != nil {
		t.Fatal(err)
	}
	approve := []cairn.Decision{{InterruptID: res.Interrupts[0].ID, Action: cairn.ActionApprove}}
	errs := make(chan error, 2)
	for _, r := range []*cairn.Runner{r1, r2} {
		go func() { _, err := r.Continue(ctx, "main", res.Continuation, approve, nil); errs <- err }()
	}
	e1, e2 := <-errs, <-errs
	if (e1 == nil) == (e2 == nil) || !errors.Is(errors.Join(e1, e2), cairn.ErrConflict) {
		t.Fatalf("errors %v / %v, want one nil and one ErrConflict", e1, e2)
	}
	if len(rec.runs()) != 1 {
		t.Fatalf("tool runs %v, want 1", rec.runs())
	}
}

// FuzzPageCursor: any cursor is a page or an invalid_request error, never a
// panic.
func FuzzPageCursor(f *testing.F) {
	r, err := cairn.NewRunner([]*cairn.Agent{{Name: "main", Model: deleteScript()}}, nil)
	if err != nil {
		f.Fatal(err)
	}
	defer r.Close()
	ctx := context.Background()
	for range 3 {
		if _, err := r.Start(ctx, "main", "Delete test.txt", nil); err != nil {
			f.Fatal(err)
		}
	}
	_, next, _ := r.SessionsPage(ctx, "", cairn.Page{Limit: 1})
	f.Add(next, 1)
	f.Add("", 0)
	f.Add("eyJ1IjoiYmFkIn0", 2)
	f.Add("eyJuIjotMX0", 5)
	f.Fuzz(func(t *testing.T, cursor string, limit int) {
		for _, list := range []func() error{
			func() error {
				_, _, err := r.SessionsPage(ctx, "", cairn.Page{Limit: limit, Cursor: cursor})
				return err
			},
			func() error { _, _, err := r.InterruptsPage(ctx, cairn.Page{Limit: limit, Cursor: cursor}); return err },
		} {
			if err := list(); err != nil && cairn.ErrorCode(err) != "invalid_request" {
				t.Fatalf("cursor %q limit %d: %v", cursor, limit, err)
			}
		}
	})
}

// logOnly is a store with the event log alone: none of the optional
// capabilities (store.Secrets, store.Ledger) the memory store also has.
type logOnly struct{ store.Store }

func TestStoreCapabilitiesAreOptional(t *testing.T) {
	ctx := context.Background()
	var _ store.Secrets = store.NewMemory()
	var _ store.Ledger = store.NewMemory()
	agents := func(rec *counter) []*cairn.Agent {
		return []*cairn.Agent{{Name: "main", Model: deleteScript(), Tools: []*cairn.Tool{deleteTool(rec)}}}
	}

	// Sessions need only the log.
	var rec counter
	r := runnerFor(t, agents(&rec), &cairn.RunnerOptions{Store: logOnly{store.NewMemory()}})
	s, err := r.Start(ctx, "main", "Delete test.txt", nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err = r.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove}}, nil)
	if err != nil || s.Status != cairn.StatusCompleted || len(rec.runs()) != 1 {
		t.Fatalf("resume on a log-only store: %v %+v", err, s)
	}

	// Stateless tokens without a key say which option to set.
	if _, err := r.Invoke(ctx, "main", "Delete test.txt", nil); err == nil || !strings.Contains(err.Error(), "ContinuationKeys") {
		t.Fatalf("invoke without keys or secrets: %v", err)
	}

	// With keys, tokens are issued; resuming one needs a ledger, and says so
	// before anything runs.
	var rec2 counter
	r2 := runnerFor(t, agents(&rec2), &cairn.RunnerOptions{Store: logOnly{store.NewMemory()}, ContinuationKeys: [][]byte{key('k')}})
	res, err := r2.Invoke(ctx, "main", "Delete test.txt", nil)
	if err != nil || res.Continuation == "" {
		t.Fatalf("invoke with keys: %v %+v", err, res)
	}
	_, err = r2.Continue(ctx, "main", res.Continuation, []cairn.Decision{{InterruptID: res.Interrupts[0].ID, Action: cairn.ActionApprove}}, nil)
	if err == nil || !strings.Contains(err.Error(), "RunnerOptions.Ledger") || len(rec2.runs()) != 0 {
		t.Fatalf("continue without a ledger: %v (tool runs %d)", err, len(rec2.runs()))
	}
}

// A refused token keeps its cause: a correctly signed payload that is not
// JSON gives ErrInvalidContinuation wrapping the JSON decoder's error.
func TestInvalidContinuationKeepsItsCause(t *testing.T) {
	c, err := cairn.NewCodec(key('a'))
	if err != nil {
		t.Fatal(err)
	}
	signed := "cairn.v1." + base64.RawURLEncoding.EncodeToString([]byte("not json"))
	m := hmac.New(sha256.New, key('a'))
	m.Write([]byte(signed))
	_, err = c.Decode(signed + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil)))
	var syntax *json.SyntaxError
	if !errors.Is(err, cairn.ErrInvalidContinuation) || !errors.As(err, &syntax) {
		t.Fatalf("err = %v (%T)", err, errors.Unwrap(err))
	}
}

// inflate decodes a version 2 token's payload.
func inflate(t *testing.T, payload string) string {
	t.Helper()
	raw, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(flate.NewReader(bytes.NewReader(raw)))
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// deflate encodes a version 2 token's payload.
func deflate(t *testing.T, payload string) string {
	t.Helper()
	var b bytes.Buffer
	w, _ := flate.NewWriter(&b, flate.BestSpeed)
	if _, err := w.Write([]byte(payload)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(b.Bytes())
}

// Tokens issued before the compact format (version 1: the whole log,
// uncompressed) still resume, once; the answer is a version 2 token.
func TestVersion1ContinuationStillResumes(t *testing.T) {
	ctx := context.Background()
	var rec counter
	agents := []*cairn.Agent{{Name: "main", Model: deleteScript(), Tools: []*cairn.Tool{deleteTool(&rec)}}}
	r := runnerFor(t, agents, &cairn.RunnerOptions{ContinuationKeys: [][]byte{key('a')}})
	// A stored session pauses the same way; its log is what a v1 token held.
	s, err := r.Start(ctx, "main", "Delete test.txt", nil)
	if err != nil || s.Status != cairn.StatusPaused {
		t.Fatalf("%v %+v", err, s)
	}
	evs, err := r.Events(ctx, s.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	payload, _ := json.Marshal(map[string]any{"tid": "tok_v1", "kid": kid(key('a')), "agent": "main", "events": evs})
	signed := "cairn.v1." + base64.RawURLEncoding.EncodeToString(payload)
	m := hmac.New(sha256.New, key('a'))
	m.Write([]byte(signed))
	tok := signed + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
	approve := []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove}}
	res, err := r.Continue(ctx, "main", tok, approve, nil)
	if err != nil || res.Status != cairn.StatusCompleted || len(rec.runs()) != 1 {
		t.Fatalf("v1 token: %v %+v runs %v", err, res, rec.runs())
	}
	if _, err := r.Continue(ctx, "main", tok, approve, nil); !errors.Is(err, cairn.ErrConflict) || len(rec.runs()) != 1 {
		t.Fatalf("v1 token spent twice: %v runs %v", err, rec.runs())
	}
}

// kid is the codec's key id (its derivation is part of the token format).
func kid(key []byte) string {
	h := sha256.Sum256(append([]byte("cairn-kid:"), key...))
	return hex.EncodeToString(h[:4])
}
