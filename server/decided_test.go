package server_test

import (
	"fmt"
	"strings"
	"testing"
)

// A second decision on an interrupt decided before answers 409
// already_decided naming what was decided, by whom and when, through the
// same request a first decision makes (issue 30).
func TestSecondDecisionSaysWhoDecidedFirst(t *testing.T) {
	e := newEnv(t, false)
	status, s := e.do("POST", "/v1/sessions", `{"agent":"main","input":"Deploy the latest build to production."}`)
	if status != 201 || s["status"] != "paused" {
		t.Fatalf("%d %v", status, s)
	}
	id, seq, in := s["id"].(string), seqOf(s), interrupts(s)[0]["id"].(string)
	body := fmt.Sprintf(`{"seq":%d,"decisions":[{"interrupt_id":%q,"action":"approve"}]}`, seq, in)
	if status, done := e.do("POST", "/v1/sessions/"+id+"/decisions", body); status != 200 {
		t.Fatalf("the first decision: %d %v", status, done)
	}
	status, again := e.do("POST", "/v1/sessions/"+id+"/decisions", body)
	msg, _ := again["error"].(map[string]any)["message"].(string)
	if status != 409 || errCode(again) != "already_decided" || !strings.Contains(msg, "was already decided: approve by ") || !strings.Contains(msg, " at 20") {
		t.Fatalf("the second decision: %d %v", status, again)
	}
}
