package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/model"
)

// A call the client runs, through AG-UI: the run finishes with an
// interrupt of reason client_tool whose response schema carries the
// tool's result schema; a resume with the output completes the call.
func TestClientToolThroughAGUI(t *testing.T) {
	m := model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		if l := req.Messages[len(req.Messages)-1]; l.Role == model.RoleTool {
			return &model.Response{Message: model.Message{Content: "You are in " + l.Content}}, nil
		}
		return &model.Response{Message: model.Message{ToolCalls: []model.ToolCall{{ID: "c1", Name: "get_location", Arguments: `{}`}}}}, nil
	})
	locate := cairn.ClientTool(&cairn.Tool{Name: "get_location", ResultSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)})
	runner, err := cairn.NewRunner([]*cairn.Agent{{Name: "weather", Model: m, Tools: []*cairn.Tool{locate}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer runner.Close()
	api := httptest.NewServer(New(runner, nil))
	defer api.Close()
	post := func(body string) string {
		t.Helper()
		resp, err := http.Post(api.URL+"/v1/agents/weather/ag-ui", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	first := post(`{"threadId":"t_loc","runId":"r1","messages":[{"id":"m1","role":"user","content":"where am I?"}]}`)
	if !strings.Contains(first, `"reason":"client_tool"`) || !strings.Contains(first, `"output":{"type":"object","properties":{"city"`) {
		t.Fatalf("the first run: %s", first)
	}
	s, err := runner.Session(context.Background(), "t_loc")
	if err != nil || len(s.Interrupts) != 1 || s.Interrupts[0].Kind != cairn.KindClient {
		t.Fatalf("%v %+v", err, s)
	}
	second := post(`{"threadId":"t_loc","runId":"r2","messages":[],"resume":[{"interruptId":"` + s.Interrupts[0].ID + `","status":"resolved","payload":{"output":{"city":"Lyon"}}}]}`)
	if !strings.Contains(second, "RUN_FINISHED") {
		t.Fatalf("the resume: %s", second)
	}
	done, err := runner.Session(context.Background(), "t_loc")
	if err != nil || done.Status != cairn.StatusCompleted || done.Output != `You are in {"city":"Lyon"}` {
		t.Fatalf("%v %+v", err, done)
	}
	// A cancelled resume fails a client call (it has no reject), with the reason.
	post(`{"threadId":"t_loc2","runId":"r1","messages":[{"id":"m1","role":"user","content":"where am I?"}]}`)
	s, err = runner.Session(context.Background(), "t_loc2")
	if err != nil || len(s.Interrupts) != 1 {
		t.Fatalf("%v %+v", err, s)
	}
	post(`{"threadId":"t_loc2","runId":"r2","messages":[],"resume":[{"interruptId":"` + s.Interrupts[0].ID + `","status":"cancelled","payload":{"reason":"no GPS"}}]}`)
	if done, err = runner.Session(context.Background(), "t_loc2"); err != nil || done.Status != cairn.StatusCompleted || done.Output != "You are in the client could not run tool get_location: no GPS" {
		t.Fatalf("cancelled: %v %+v", err, done)
	}
}
