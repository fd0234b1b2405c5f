package main

import (
	"bufio"
	"encoding/json"
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/session"
)

// chatWith is a chatter that reads lines from input and writes to out.
func chatWith(input string, out *strings.Builder) *chatter {
	return &chatter{in: bufio.NewScanner(strings.NewReader(input)), out: out, refused: map[string]string{}}
}

// An interrupt whose shape the chat has no prompt of its own for is asked
// from its Ask alone: its text, then its choices as /ACTION [value]; a
// choice it does not offer or a value that does not fit is said, not sent.
func TestChatAsksAnyShapeFromItsAsk(t *testing.T) {
	in := cairn.Interrupt{ID: "int_1", Kind: cairn.KindExternal, Tool: "pipeline", Message: "run 42 started"}
	var out strings.Builder
	c := chatWith("/teleport\n/complete {\"status\":\n/complete {\"status\":\"green\"}\n", &out)
	d, ok := c.choose("", in, in.Ask())
	if !ok || d == nil || d.Action != cairn.ActionComplete || string(d.Output) != `{"status":"green"}` {
		t.Fatalf("decision %+v %v\n%s", d, ok, out.String())
	}
	for _, want := range []string{"pipeline (waits on a system): run 42 started", "/complete output (JSON), /fail reason", "is not a command here", "must be JSON"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the chat did not say %q:\n%s", want, out.String())
		}
	}
}

// A call in doubt is settled from the chat with /complete or /fail, as
// its Ask offers, instead of being run again.
func TestChatSettlesACallInDoubt(t *testing.T) {
	in := cairn.Interrupt{ID: "int_2", Kind: cairn.KindApproval, Tool: "charge", Arguments: json.RawMessage(`{"cents":500}`),
		InDoubt: true, IdempotencyKey: "ses_1/n/f1/c1"}
	var out strings.Builder
	c := chatWith("/fail the card was declined\n", &out)
	d, ok := c.ask(in)
	if !ok || d == nil || d.Action != session.ActionFail || d.Reason != "the card was declined" {
		t.Fatalf("decision %+v %v\n%s", d, ok, out.String())
	}
	if !strings.Contains(out.String(), "/complete RESULT or /fail WHY") {
		t.Fatalf("the chat did not offer to settle it:\n%s", out.String())
	}
}
