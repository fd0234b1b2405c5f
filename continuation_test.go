package cairn_test

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/store"
)

func key(c byte) []byte { return []byte(strings.Repeat(string(c), 32)) }

func TestContinuationTokens(t *testing.T) {
	ctx := context.Background()
	var rec counter
	st := store.NewMemory()
	r, err := cairn.NewRunner(cairn.RunnerOptions{Store: st, ContinuationKeys: [][]byte{key('a')},
		Agents: []*cairn.Agent{{Name: "main", Model: deleteScript(), Tools: []*cairn.Tool{deleteTool(&rec)}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	res, err := r.Invoke(ctx, "main", "Delete test.txt")
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

	foreign, _ := cairn.NewRunner(cairn.RunnerOptions{ContinuationKeys: [][]byte{key('b')},
		Agents: []*cairn.Agent{{Name: "main", Model: deleteScript(), Tools: []*cairn.Tool{deleteTool(&rec)}}}})
	foreignRes, _ := foreign.Invoke(ctx, "main", "Delete test.txt")
	dot := strings.LastIndexByte(tok, '.')
	payload, _ := base64.RawURLEncoding.DecodeString(tok[len("cairn.v1."):dot])
	forged := "cairn.v1." + base64.RawURLEncoding.EncodeToString([]byte(strings.Replace(string(payload), "test.txt", "/etc/passwd", 1))) + tok[dot:]
	flip := []byte(tok)
	flip[len("cairn.v1.")+10] ^= 1
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
		if _, err := r.Continue(ctx, "main", b, approve); !errors.Is(err, cairn.ErrInvalidContinuation) {
			t.Errorf("%s: err = %v, want ErrInvalidContinuation", name, err)
		}
	}
	if _, err := r.Continue(ctx, "other", tok, approve); !errors.Is(err, cairn.ErrInvalidContinuation) {
		t.Errorf("wrong agent: %v", err)
	}
	// A decision the session refuses does not spend the token.
	if _, err := r.Continue(ctx, "main", tok, []cairn.Decision{{InterruptID: "int_nope", Action: "approve"}}); !errors.Is(err, cairn.ErrUnknownInterrupt) {
		t.Fatalf("unknown interrupt: %v", err)
	}
	if len(rec.runs()) != 0 {
		t.Fatal("a refused token ran the tool")
	}
	done, err := r.Continue(ctx, "main", tok, approve)
	if err != nil {
		t.Fatal(err)
	}
	if done.Status != cairn.StatusCompleted || done.Output != "Result: Deleted test.txt" || done.Continuation != "" || len(rec.runs()) != 1 {
		t.Fatalf("continue: %+v, runs %v", done, rec.runs())
	}
	if _, err := r.Continue(ctx, "main", tok, approve); !errors.Is(err, cairn.ErrConflict) {
		t.Fatalf("replay: %v, want ErrConflict", err)
	}
	if len(rec.runs()) != 1 {
		t.Fatal("a replayed token ran the tool again")
	}
}

func TestGeneratedKeyIsSharedThroughTheStore(t *testing.T) {
	ctx := context.Background()
	var rec counter
	st := store.NewMemory()
	agents := func() []*cairn.Agent {
		return []*cairn.Agent{{Name: "main", Model: deleteScript(), Tools: []*cairn.Tool{deleteTool(&rec)}}}
	}
	r1, _ := cairn.NewRunner(cairn.RunnerOptions{Store: st, Agents: agents()})
	r2, _ := cairn.NewRunner(cairn.RunnerOptions{Store: st, Agents: agents()})
	res, err := r1.Invoke(ctx, "main", "Delete test.txt")
	if err != nil {
		t.Fatal(err)
	}
	done, err := r2.Continue(ctx, "main", res.Continuation, []cairn.Decision{{InterruptID: res.Interrupts[0].ID, Action: cairn.ActionApprove}})
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
	f.Add("cairn.v1..")
	f.Add("cairn.v1.e30.AAAA")
	f.Add(good[:len(good)-3])
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
