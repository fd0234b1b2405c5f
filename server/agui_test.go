package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// aguiRun is what the AG-UI client script prints.
type aguiRun struct {
	Outcomes []struct {
		Type       string `json:"type"`
		Interrupts []struct {
			ID             string          `json:"id"`
			Reason         string          `json:"reason"`
			Message        string          `json:"message"`
			ToolCallID     string          `json:"toolCallId"`
			ResponseSchema json.RawMessage `json:"responseSchema"`
			Metadata       struct {
				Preview *struct {
					Format  string `json:"format"`
					Content string `json:"content"`
				} `json:"preview"`
			} `json:"metadata"`
		} `json:"interrupts"`
	} `json:"outcomes"`
	Errors   []map[string]string `json:"errors"`
	Types    []string            `json:"types"`
	Messages []map[string]any    `json:"messages"`
}

// aguiClient runs AG-UI's HttpAgent (server/testdata/clients/agui.mjs) against e.
func aguiClient(t *testing.T, e *env, thread, text, answers string) aguiRun {
	t.Helper()
	out := nodeClient(t, "agui.mjs", "@ag-ui/client", nil, e.base+"/v1/agents/main/ag-ui", "", thread, text, answers)
	var got aguiRun
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return got
}

// AG-UI's HttpAgent: a pause is RUN_FINISHED with an interrupt outcome (a
// tool_call interrupt with the tool's call id and a response schema); a
// resume with edited arguments runs the tool once, with them; a cancelled
// resume tells the model; resuming a decided interrupt again changes
// nothing; one the thread never had is RUN_ERROR.
func TestAGUIInterruptAndResume(t *testing.T) {
	e := newEnv(t, true)
	got := aguiClient(t, e, "agui_1", "Deploy to production", `[{"approved":true,"editedArgs":{"environment":"staging"}}]`)
	if len(got.Errors) > 0 || len(got.Outcomes) != 2 {
		t.Fatalf("runs: %+v", got)
	}
	first := got.Outcomes[0]
	if first.Type != "interrupt" || len(first.Interrupts) != 1 || first.Interrupts[0].Reason != "tool_call" || first.Interrupts[0].ToolCallID != "call_abc" ||
		first.Interrupts[0].Message != "Deploy to production?" || !strings.Contains(string(first.Interrupts[0].ResponseSchema), `"editedArgs":{`) {
		t.Fatalf("the pause: %+v", first)
	}
	if p := first.Interrupts[0].Metadata.Preview; p == nil || p.Format != "diff" || !strings.Contains(p.Content, "+release: v42") {
		t.Fatalf("the interrupt's preview (metadata): %+v", p)
	}
	if got.Outcomes[1].Type != "success" || !slices.Equal(e.runs("deploy_code"), []string{"staging"}) {
		t.Fatalf("after the resume: %+v, deploys %v", got.Outcomes[1], e.runs("deploy_code"))
	}
	for _, want := range []string{"RUN_STARTED", "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT", "TEXT_MESSAGE_CONTENT", "RUN_FINISHED"} {
		if !slices.Contains(got.Types, want) {
			t.Fatalf("no %s in %v", want, got.Types)
		}
	}

	cancelled := aguiClient(t, e, "agui_2", "Deploy to production", `[{"cancel":true}]`)
	if len(cancelled.Errors) > 0 || cancelled.Outcomes[1].Type != "success" || len(e.runs("deploy_code")) != 1 {
		t.Fatalf("cancelled: %+v, deploys %v", cancelled, e.runs("deploy_code"))
	}
	if b, _ := json.Marshal(cancelled.Messages); !strings.Contains(string(b), "I could not deploy: The user rejected this tool call: cancelled by the user") {
		t.Fatalf("the model did not hear of the cancel: %s", b)
	}

	// Resume again what agui_1 decided: idempotent, nothing runs twice.
	_, s := e.do("GET", "/v1/sessions/agui_1", "")
	decided := got.Outcomes[0].Interrupts[0].ID
	resp := aguiPost(t, e, `{"threadId":"agui_1","runId":"r9","messages":[],"resume":[{"interruptId":"`+decided+`","status":"resolved","payload":{"approved":true}}]}`)
	if !strings.Contains(resp, `"type":"RUN_FINISHED"`) || strings.Contains(resp, "RUN_ERROR") || len(e.runs("deploy_code")) != 1 {
		t.Fatalf("a repeated resume: %s (deploys %v, session %v)", resp, e.runs("deploy_code"), s["status"])
	}
	resp = aguiPost(t, e, `{"threadId":"agui_1","runId":"r10","messages":[],"resume":[{"interruptId":"int_forged","status":"resolved","payload":{"approved":true}}]}`)
	if !strings.Contains(resp, `"type":"RUN_ERROR"`) || !strings.Contains(resp, "unknown_interrupt") {
		t.Fatalf("a forged interrupt: %s", resp)
	}
}

// aguiPost posts a RunAgentInput and returns the event stream's text.
func aguiPost(t *testing.T, e *env, body string) string {
	t.Helper()
	resp, err := http.Post(e.base+"/v1/agents/main/ag-ui", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
