package engine

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/session"
)

// A tool the sender declares with its message (an AG-UI frontend tool) is
// offered to the model with the agent's; its call waits for the sender's
// result (a client interrupt), its arguments checked against what the
// sender declared; the next message without it takes it away.
func TestSenderToolsAreOfferedUntilTheNextMessage(t *testing.T) {
	t.Parallel()
	check := func(schema json.RawMessage, v any) error {
		if strings.Contains(string(schema), `"city"`) {
			if _, ok := v.(map[string]any)["city"].(string); !ok {
				return errors.New("city is required")
			}
		}
		return nil
	}
	lookup := &Tool{Definition: model.ToolDefinition{Name: "lookup"}}
	m := New(map[string]*Agent{
		"ui":     {Name: "ui", Tools: map[string]*Tool{"lookup": lookup}, Definitions: []model.ToolDefinition{lookup.Definition}, MaxIterations: 5},
		"locked": {Name: "locked", NoSenderTools: true, MaxIterations: 5},
	}, &Options{CheckAnswer: check})
	weather := model.ToolDefinition{Name: "show_weather", Description: "Shows the weather card.", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)}

	st := &State{}
	s := step(t, m, st, Start{SessionID: "s", Agent: "ui", Text: "weather in Oslo?", Tools: []model.ToolDefinition{weather}})
	cm := s.Effects[0].(CallModel)
	if names := toolNamesOf(cm.Request.Tools); names != "lookup show_weather" {
		t.Fatalf("offered: %s", names)
	}
	s = step(t, m, st, ModelDone{Frame: cm.Frame, Response: assistant(
		model.ToolCall{ID: "c1", Name: "show_weather", Arguments: `{"city":"Oslo"}`},
		model.ToolCall{ID: "c2", Name: "show_weather", Arguments: `{"town":"Oslo"}`})})
	ins := st.Interrupts()
	if got := types(s.Events); got != "model_response client_requested tool_result turn_paused" || len(ins) != 1 || ins[0].Kind != session.KindClient {
		t.Fatalf("%s %+v", got, ins)
	}
	if r := st.Root().Calls[1]; !r.IsError || !strings.Contains(r.Result, "city is required") {
		t.Fatalf("the call off the declared schema: %+v", r)
	}
	s = step(t, m, st, Decide{Seq: st.Seq, Decisions: []session.Decision{{InterruptID: ins[0].ID, Action: session.ActionComplete, Output: json.RawMessage(`"shown"`)}}})
	cm = s.Effects[0].(CallModel)
	step(t, m, st, ModelDone{Frame: cm.Frame, Response: &model.Response{Message: model.Message{Role: model.RoleAssistant, Content: "Shown."}}})
	s = step(t, m, st, Message{Text: "and now?"})
	if names := toolNamesOf(s.Effects[0].(CallModel).Request.Tools); names != "lookup" {
		t.Fatalf("offered after a message without tools: %s", names)
	}
	replayed, err := Replay(collect(t, m, weather))
	if err != nil || len(replayed.Root().SenderTools) != 1 {
		t.Fatalf("replay: %v %+v", err, replayed)
	}

	for name, in := range map[string]Start{
		"forbidden":   {SessionID: "x", Agent: "locked", Text: "hi", Tools: []model.ToolDefinition{weather}},
		"agent's own": {SessionID: "x", Agent: "ui", Text: "hi", Tools: []model.ToolDefinition{{Name: "lookup"}}},
		"bad name":    {SessionID: "x", Agent: "ui", Text: "hi", Tools: []model.ToolDefinition{{Name: "no spaces"}}},
		"twice":       {SessionID: "x", Agent: "ui", Text: "hi", Tools: []model.ToolDefinition{weather, weather}},
		"bad schema":  {SessionID: "x", Agent: "ui", Text: "hi", Tools: []model.ToolDefinition{{Name: "x", Parameters: json.RawMessage(`[]`)}}},
	} {
		st := &State{}
		if _, err := m.Step(st, in, t0); session.CodeOf(err) != session.CodeInvalidRequest || st.Seq != 0 {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func toolNamesOf(defs []model.ToolDefinition) string {
	var names []string
	for _, d := range defs {
		names = append(names, d.Name)
	}
	return strings.Join(names, " ")
}

// collect is the log of a session that starts with tools declared.
func collect(t *testing.T, m *Machine, tool model.ToolDefinition) []session.Event {
	st := &State{}
	return step(t, m, st, Start{SessionID: "r", Agent: "ui", Text: "hi", Tools: []model.ToolDefinition{tool}}).Events
}
