package session

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/cairnhq/cairn/model"
)

// randomRaw is raw JSON of any kind arguments come in: compact, spaced,
// with characters encoding/json escapes, invalid.
func randomRaw(r *rand.Rand) json.RawMessage {
	raws := []string{`{}`, `{"q":"x"}`, `{"n":1.5,"a":[true,null]}`, `{"q": "x"}`, `{"h":"<b>&"}`, "{\"s\":\"\u2028\"}",
		`[1,2]`, `"text"`, `{"q":"é"}`, `{"q":`, `{"q":"x"} `, "{\"q\":\"\xff\"}", `null`, `{"k":"a\nb"}`, `{"k":"a\\u003c"}`}
	return json.RawMessage(raws[r.IntN(len(raws))])
}

// randomPayload is a payload of one of the kinds AppendPayload writes,
// mostly in its common form, sometimes with a field it leaves to
// encoding/json.
func randomPayload(r *rand.Rand) Payload {
	odd := r.IntN(5) == 0
	switch r.IntN(6) {
	case 0:
		p := &SessionStarted{SessionID: randomText(r), Nonce: randomText(r), Agent: randomText(r), Frame: randomText(r), Owner: randomText(r), Tenant: randomText(r)}
		if odd {
			p.Metadata = map[string]any{randomText(r): randomText(r)}
		}
		return p
	case 1:
		p := &UserMessage{Text: randomText(r)}
		if odd {
			switch r.IntN(3) {
			case 0:
				p.Actor = Actor{Name: randomText(r), Role: "approver"}
			case 1:
				p.Call = &CallRequest{ID: "c1", Tool: "deploy", Arguments: json.RawMessage(`{}`)}
			default:
				p.Tools = []model.ToolDefinition{{Name: "t", Parameters: json.RawMessage(`{}`)}}
			}
		}
		return p
	case 2:
		p := &ModelResponse{Message: model.Message{Role: model.Role(randomText(r)), Content: randomText(r), ToolCallID: randomText(r),
			IsError: r.IntN(2) == 0, Agent: randomText(r)}, Usage: model.Usage{InputTokens: r.Int64() - r.Int64(), OutputTokens: r.Int64N(1 << 20)}}
		for range r.IntN(3) {
			p.Message.ToolCalls = append(p.Message.ToolCalls, model.ToolCall{ID: randomText(r), Name: randomText(r), Arguments: string(randomRaw(r)) + randomText(r)})
		}
		if odd {
			p.Message.Provider = &model.ProviderData{Name: "openai", Data: json.RawMessage(`{"id":"r1"}`)}
		}
		return p
	case 3:
		p := &ToolStarted{CallID: randomText(r), Tool: randomText(r), Arguments: randomRaw(r), IdempotencyKey: randomText(r)}
		if odd {
			if r.IntN(2) == 0 {
				p.Answers = []Answer{{Text: randomText(r)}}
			} else {
				p.WaitID = randomText(r)
			}
		}
		return p
	case 4:
		return &ToolResult{CallID: randomText(r), Tool: randomText(r), Content: randomText(r), IsError: r.IntN(2) == 0}
	default:
		p := &TurnCompleted{Output: randomText(r)}
		if odd {
			p.OutputJSON = randomRaw(r)
		}
		return p
	}
}

// TestAppendPayloadAgrees: what AppendPayload writes is what
// encoding/json writes, byte for byte, over 10,000 random payloads; what
// it declines, encoding/json writes (or refuses) and the engine encodes
// that way.
func TestAppendPayloadAgrees(t *testing.T) {
	r := rand.New(rand.NewPCG(46, 3))
	written := 0
	for i := range 10_000 {
		p := randomPayload(r)
		got, ok := AppendPayload([]byte("x"), p)
		if !ok {
			if string(got) != "x" {
				t.Fatalf("payload %d (%T): declined, but changed b to %q", i, p, got)
			}
			continue
		}
		written++
		want, err := json.Marshal(p)
		if err != nil {
			t.Fatalf("payload %d (%T): written, but encoding/json refuses it: %v\n%s", i, p, err, got)
		}
		if !bytes.Equal(got[1:], want) {
			t.Fatalf("payload %d (%T) differs from encoding/json\n got: %s\nwant: %s", i, p, got[1:], want)
		}
	}
	if written < 7_000 {
		t.Fatalf("only %d of 10,000 payloads written by hand", written)
	}
}

// FuzzAppendPayload: the same comparison with fuzzed text and arguments.
func FuzzAppendPayload(f *testing.F) {
	f.Add("deploy <prod> & \"all\"", `{"q":"x"}`, int64(12))
	f.Add("\u2028\xff\x00", `{"q": 1}`, int64(-1))
	f.Add("", `[1,"<"]`, int64(0))
	f.Fuzz(func(t *testing.T, text, raw string, n int64) {
		for _, p := range []Payload{
			&SessionStarted{SessionID: text, Nonce: raw, Agent: text, Frame: raw, Owner: text},
			&SessionStarted{SessionID: text, Agent: text, Frame: raw, Tenant: raw, Definition: text},
			&UserMessage{Text: text},
			&ModelResponse{Message: model.Message{Role: model.RoleAssistant, Content: text, Agent: raw,
				ToolCalls: []model.ToolCall{{ID: raw, Name: text, Arguments: raw}}}, Usage: model.Usage{InputTokens: n, OutputTokens: -n}},
			&ToolStarted{CallID: text, Tool: raw, Arguments: json.RawMessage(raw), IdempotencyKey: text},
			&ToolResult{CallID: raw, Tool: text, Content: text + raw, IsError: n%2 == 0},
			&TurnCompleted{Output: text},
		} {
			got, ok := AppendPayload(nil, p)
			if !ok {
				continue
			}
			want, err := json.Marshal(p)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%T: %v\n got: %s\nwant: %s", p, err, got, want)
			}
		}
	})
}
