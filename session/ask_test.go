package session_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/session"
)

// Every kind has one description: a label, a text, who decides, and the
// choices its Ask offers, which are what the engine accepts
// (Interrupt.Actions derives from them), in the usual order.
func TestEveryKindIsDescribedOnce(t *testing.T) {
	t.Parallel()
	A := func(a ...session.Action) []session.Action { return a }
	want := map[session.Kind][]session.Action{
		session.KindApproval: A(session.ActionApprove, session.ActionReject),
		session.KindInput:    A(session.ActionAnswer, session.ActionReject),
		session.KindMessage:  A(),
		session.KindReview:   A(session.ActionApprove, session.ActionEdit, session.ActionReject),
		session.KindExternal: A(session.ActionComplete, session.ActionFail),
		session.KindClient:   A(session.ActionComplete, session.ActionFail),
	}
	for _, k := range session.AllKinds() {
		in := session.Interrupt{ID: "int_1", Kind: k, Tool: "deploy", Question: "Which env?", Text: "Hello"}
		spec, ask := k.Spec(), in.Ask()
		if spec.Label == "" || ask.Label != spec.Label || ask.Text == "" || ask.Decider == "" || ask.Reply != spec.Reply {
			t.Errorf("%s: spec %+v, ask %+v", k, spec, ask)
		}
		var offered []session.Action
		for _, c := range ask.Choices {
			offered = append(offered, c.Action)
			if c.Label == "" {
				t.Errorf("%s: choice %s has no label", k, c.Action)
			}
		}
		if w, ok := want[k]; !ok || !slices.Equal(offered, w) || !slices.Equal(in.Actions(), w) || k.Decided() != (len(w) > 0) {
			t.Errorf("%s: the ask offers %v, the engine takes %v, decided %v; want %v", k, offered, in.Actions(), k.Decided(), w)
		}
	}
	inDoubt := session.Interrupt{ID: "int_2", Kind: session.KindApproval, Tool: "charge", InDoubt: true}
	if got := inDoubt.Actions(); !slices.Equal(got, A(session.ActionApprove, session.ActionReject, session.ActionComplete, session.ActionFail)) || inDoubt.Ask().Warning == "" {
		t.Errorf("a call in doubt offers %v, warning %q", got, inDoubt.Ask().Warning)
	}
	if session.Kind("from a newer server").Known() || session.Kind("from a newer server").Decided() || session.Kinds() != "approval, input, message, review, external, client" {
		t.Fatalf("kinds: %s", session.Kinds())
	}
}

// Choose turns a person's choice into the decision, refusing what the
// interrupt does not offer with a message that names what it does.
func TestChooseBuildsTheDecision(t *testing.T) {
	t.Parallel()
	approval := session.Interrupt{ID: "a", Kind: session.KindApproval, Tool: "deploy", Arguments: json.RawMessage(`{"env":"prod"}`)}
	question := session.Interrupt{ID: "q", Kind: session.KindInput, Question: "Which env?", Schema: json.RawMessage(`{"type":"object"}`)}
	wait := session.Interrupt{ID: "w", Kind: session.KindExternal, Tool: "ci"}
	for _, c := range []struct {
		in     session.Interrupt
		action session.Action
		value  string
		want   string // the decision's JSON, or the error's start
	}{
		{approval, session.ActionApprove, "", `{"interrupt_id":"a","action":"approve"}`},
		{approval, session.ActionApprove, `{"env":"staging"}`, `{"interrupt_id":"a","action":"approve","arguments":{"env":"staging"}}`},
		{approval, session.ActionApprove, `staging`, `approve: the arguments must be JSON`},
		{approval, session.ActionReject, "freeze week", `{"interrupt_id":"a","action":"reject","reason":"freeze week"}`},
		{approval, session.ActionAnswer, "", `approval a takes approve, reject, not "answer"`},
		{question, session.ActionAnswer, `{"env":"prod"}`, `{"interrupt_id":"q","action":"answer","content":{"env":"prod"}}`},
		{question, session.ActionAnswer, "", `answer needs its content`},
		{wait, session.ActionComplete, `done`, `{"interrupt_id":"w","action":"complete","output":"done"}`},
		{wait, session.ActionComplete, `{"ok":true}`, `{"interrupt_id":"w","action":"complete","output":{"ok":true}}`},
		{wait, session.ActionFail, "", `{"interrupt_id":"w","action":"fail"}`},
	} {
		d, err := c.in.Choose(c.action, c.value)
		got := ""
		if err != nil {
			got = err.Error()
		} else {
			b, _ := json.Marshal(d)
			got = string(b)
		}
		if !strings.HasPrefix(got, c.want) {
			t.Errorf("%s %s %q: got %s, want %s", c.in.Kind, c.action, c.value, got, c.want)
		}
	}
}

// The JSON of an interrupt carries its Ask, so a page or a client in any
// language renders a kind it has no code for; a pending interrupt keeps
// where it waits.
func TestInterruptJSONCarriesItsAsk(t *testing.T) {
	t.Parallel()
	p := session.PendingInterrupt{Interrupt: session.Interrupt{ID: "a", Kind: session.KindApproval, Tool: "deploy", Message: "Deploy?"}, SessionID: "ses_1", Seq: 7}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		SessionID string      `json:"session_id"`
		Seq       int64       `json:"seq"`
		Kind      string      `json:"kind"`
		Ask       session.Ask `json:"ask"`
	}
	if err := json.Unmarshal(b, &got); err != nil || got.SessionID != "ses_1" || got.Seq != 7 || got.Kind != "approval" ||
		got.Ask.Text != "Deploy?" || len(got.Ask.Choices) != 2 || got.Ask.Choices[0].Label != "Approve" {
		t.Fatalf("%v: %s", err, b)
	}
	var back session.Interrupt
	if err := json.Unmarshal(b, &back); err != nil || back.ID != "a" || back.Message != "Deploy?" {
		t.Fatalf("read back: %v %+v", err, back)
	}
}

// An output that starts as JSON does must be JSON: a cut-off object is
// refused, not sent as text.
func TestChooseRefusesBrokenJSONOutput(t *testing.T) {
	t.Parallel()
	wait := session.Interrupt{ID: "w", Kind: session.KindExternal, Tool: "ci"}
	if _, err := wait.Choose(session.ActionComplete, `{"status":`); err == nil || !strings.Contains(err.Error(), "must be JSON") {
		t.Fatalf("a cut-off object: %v", err)
	}
}

// A review whose policy failed says why a person reviews it.
func TestReviewAskSaysWhyAPersonReviews(t *testing.T) {
	t.Parallel()
	in := session.Interrupt{ID: "r", Kind: session.KindReview, Message: "the review policy failed, so a person reviews this answer: boom"}
	if got := in.Ask().Text; got != in.Message {
		t.Fatalf("ask text %q", got)
	}
	if got := (session.Interrupt{ID: "r", Kind: session.KindReview}).Ask().Text; got != "The answer waits for your review." {
		t.Fatalf("ask text %q", got)
	}
}

// The log and the stored summaries keep interrupts without their Ask
// (readers derive it, and its defaults repeat the arguments); what a
// session or an event payload says is otherwise the same, and a session
// written out to a reader carries the Ask again.
func TestStoredFormsKeepNoAsk(t *testing.T) {
	args := json.RawMessage(`{"env":"prod","note":"` + strings.Repeat("x", 500) + `"}`)
	in := session.Interrupt{ID: "a", Kind: session.KindApproval, Tool: "deploy", Arguments: args, Message: "Deploy?"}
	s := session.Session{ID: "ses_1", Status: session.StatusPaused, Interrupts: []session.Interrupt{in}}
	stored, err := s.MarshalStored()
	if err != nil {
		t.Fatal(err)
	}
	wire, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var back session.Session
	if err := json.Unmarshal(stored, &back); err != nil || len(back.Interrupts) != 1 || back.Interrupts[0].Tool != "deploy" {
		t.Fatalf("read back: %v %+v", err, back)
	}
	again, _ := json.Marshal(back)
	if strings.Contains(string(stored), `"ask"`) || !strings.Contains(string(wire), `"ask"`) || string(again) != string(wire) {
		t.Fatalf("stored %d bytes, wire %d; stored carries an ask %v, the session read back writes %s", len(stored), len(wire), strings.Contains(string(stored), `"ask"`), again)
	}
	t.Logf("a summary with one approval of %d-byte arguments: stored %d bytes, written to a reader %d", len(args), len(stored), len(wire))
	for _, p := range []any{session.InterruptRequested{CallID: "c1", Interrupt: in},
		session.TurnPaused{Interrupts: []session.Interrupt{in}}, session.ReviewRequested{Interrupt: in, Text: "t"}} {
		b, err := json.Marshal(p)
		if err != nil || strings.Contains(string(b), `"ask"`) || !strings.Contains(string(b), `"tool":"deploy"`) {
			t.Fatalf("%T recorded as %s (%v)", p, b, err)
		}
	}
}
