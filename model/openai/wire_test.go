package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/cairnhq/cairn/model"
)

// The differential tests: the lean path (wire.go) against the SDK's types,
// the reference, on recorded and generated requests and replies. Any
// difference in what Cairn sends or sees fails.

// fuzzedCount is how many generated replies and requests each test checks.
const fuzzedCount = 10_000

// gen makes random but well-formed wire values, odd where providers are.
type gen struct{ r *rand.Rand }

func newGen(seed uint64) gen { return gen{rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))} }

func (g gen) pick(n int) int { return g.r.IntN(n) }

// text is a string with what breaks naive handling: escapes, quotes, HTML,
// invisible and astral characters, invalid UTF-8 repaired by JSON.
func (g gen) text() string {
	pieces := []string{"", "done", "Deploy to staging?", `"quoted"`, `back\slash`, "<b>&amp;</b>", "line\nbreak\ttab",
		"\u200bzero\u200dwidth", "emoji 🚀👩‍💻", "\u2028sep\u2029", "日本語", "\x00nul", strings.Repeat("long ", 50), "{\"json\":true}"}
	var b strings.Builder
	for range g.pick(4) {
		b.WriteString(pieces[g.pick(len(pieces))])
	}
	return b.String()
}

// id is a call id as providers and proxies send them.
func (g gen) id() string {
	ids := []string{"call_1", "", "call_" + fmt.Sprint(g.r.Uint64()), "toolu_01A09q90qw90lq917835lq9", "fc-ünïcode", "id with spaces",
		`id"quote`, strings.Repeat("x", 300), "call_1", "0"}
	return ids[g.pick(len(ids))]
}

func (g gen) arguments() string {
	args := []string{`{}`, `{"env":"staging"}`, `{"q":"x","n":3,"nested":{"a":[1,2,{"b":null}]}}`, ``, `{"s":"` + strings.ReplaceAll(g.text(), `"`, `'`) + `"}`,
		`not json`, `{"unicode":"\u00e9\ud83d\ude80"}`}
	return args[g.pick(len(args))]
}

// maybe returns v or, sometimes, null or a value of another type (out of
// the contract, yet sent by OpenAI-compatible servers now and then).
func (g gen) maybe(v any) any {
	switch g.pick(20) {
	case 0:
		return nil
	case 1:
		return g.pick(1000)
	}
	return v
}

func (g gen) reasoningItem() map[string]any {
	item := map[string]any{"type": "reasoning", "id": "rs_" + fmt.Sprint(g.r.Uint64()),
		"summary": []any{map[string]any{"type": "summary_text", "text": g.text()}}}
	if g.pick(2) == 0 {
		item["encrypted_content"] = "gAAAA" + strings.Repeat("QUJD", g.pick(200))
	}
	if g.pick(3) == 0 {
		item["content"] = []any{map[string]any{"type": "reasoning_text", "text": g.text()}}
	}
	return item
}

func (g gen) outputItem() map[string]any {
	switch g.pick(5) {
	case 0, 1:
		var content []any
		for range g.pick(4) {
			switch g.pick(4) {
			case 0:
				content = append(content, map[string]any{"type": "refusal", "refusal": g.text()})
			default:
				content = append(content, map[string]any{"type": "output_text", "text": g.maybe(g.text()), "annotations": []any{}, "logprobs": []any{}})
			}
		}
		return map[string]any{"type": "message", "id": "msg_" + g.id(), "status": "completed", "role": "assistant", "content": content}
	case 2:
		return map[string]any{"type": "function_call", "id": "fc_" + g.id(), "call_id": g.maybe(g.id()), "name": g.maybe("deploy"),
			"arguments": g.maybe(g.arguments()), "status": "completed"}
	case 3:
		return g.reasoningItem()
	}
	return map[string]any{"type": "web_search_call", "id": "ws_1", "status": "completed", "action": map[string]any{"type": "search", "query": g.text()}}
}

// responseBody is a generated Response as the API sends it.
func (g gen) responseBody() []byte {
	var output []any
	for range g.pick(6) {
		output = append(output, g.outputItem())
	}
	r := map[string]any{"id": "resp_" + g.id(), "object": "response", "created_at": 1764000000, "status": "completed",
		"model": "o4-mini", "output": output, "error": nil, "incomplete_details": nil, "parallel_tool_calls": true,
		"metadata": map[string]any{}, "tools": []any{}, "tool_choice": "auto", "unknown_future_field": map[string]any{"x": 1}}
	if g.pick(5) > 0 {
		r["usage"] = map[string]any{"input_tokens": g.maybe(g.pick(100000)), "output_tokens": g.pick(4000),
			"output_tokens_details": map[string]any{"reasoning_tokens": g.pick(100)}, "total_tokens": 1}
	}
	b, err := json.Marshal(r)
	if err != nil {
		panic(err)
	}
	if g.pick(3) == 0 { // as some servers send it: indented
		var out bytes.Buffer
		_ = json.Indent(&out, b, "", "  ")
		return out.Bytes()
	}
	return b
}

// recordedResponses are replies as the API and the strict fakes sent them.
var recordedResponses = []string{
	`{"id":"resp_1","object":"response","status":"completed","output":[{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAAAB"},{"type":"function_call","id":"fc_1","call_id":"call_1","name":"deploy","arguments":"{\"env\":\"staging\"}","status":"completed"}],"usage":{"input_tokens":20,"output_tokens":9}}`,
	`{"id":"resp_2","object":"response","status":"completed","output":[{"type":"message","id":"msg_1","role":"assistant","status":"completed","content":[{"type":"output_text","text":"Done.","annotations":[]}]}],"usage":{"input_tokens":30,"output_tokens":3}}`,
	`{"id":"resp_3","output":[{"type":"message","content":[{"type":"refusal","refusal":"I can't help with that."}]}]}`,
	`{"id":"resp_4","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[]}`,
	`{"output":null,"usage":null}`, `{}`, `null`, `[]`, `"text"`, `{"output":[1,"x",null]}`, `{"output":[{"type":"message","content":"hi"}]}`,
	`{"output":[{"type":"function_call","call_id":7,"name":null,"arguments":{"q":1}}],"usage":{"input_tokens":"7","output_tokens":1.5}}`,
	`{"output":[5,{"type":"function_call","call_id":"a","name":"n","arguments":"{}"}]}`, `{"output":[null,{"type":"function_call","call_id":"a","name":"n","arguments":"{}"}]}`,
	`{"output":[{"type":"message","content":[5,{"type":"output_text","text":"hi"}]}]}`, `{"output":[{"type":"message","content":[null,{"type":"output_text","text":"hi"}]}]}`,
	`not json`, ``,
}

func sameResponse(t *testing.T, what string, body []byte, lean, sdk *model.Response, leanErr, sdkErr error) {
	t.Helper()
	if (leanErr != nil) != (sdkErr != nil) {
		t.Fatalf("%s: lean error %v, SDK error %v\nbody: %s", what, leanErr, sdkErr, body)
	}
	if !reflect.DeepEqual(lean, sdk) {
		t.Fatalf("%s: the two paths differ\nbody: %s\nlean: %+v\nSDK:  %+v", what, body, show(lean), show(sdk))
	}
}

func show(r *model.Response) string {
	b, _ := json.Marshal(r)
	return string(b)
}

// sdkResponses decodes body as the SDK's client does (json.Decoder into a
// *responses.Response), then reads it as the SDK path does.
func sdkResponses(m *Responses, body []byte) (*model.Response, error) {
	var r *responses.Response
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(&r); err != nil {
		return nil, err
	}
	if r == nil {
		r = &responses.Response{}
	}
	return m.response(r)
}

// decoder reads a reply body.
type decoder func(body []byte) (*model.Response, error)

// decodersAgree checks lean against ref (the SDK path) on the recorded bodies and on
// fuzzedCount generated ones.
func decodersAgree(t *testing.T, lean, ref decoder, recorded []string, generate func() []byte) {
	t.Helper()
	check := func(what string, body []byte) {
		l, lErr := lean(body)
		s, sErr := ref(body)
		sameResponse(t, what, body, l, s, lErr, sErr)
	}
	for i, body := range recorded {
		check(fmt.Sprintf("recorded %d", i), []byte(body))
	}
	for i := range fuzzedCount {
		check(fmt.Sprintf("generated %d", i), generate())
	}
}

// fuzzDecoders fuzzes lean against ref (the SDK path) from the recorded bodies and a few
// generated ones.
func fuzzDecoders(f *testing.F, lean, ref decoder, recorded []string, generate func() []byte) {
	for _, body := range recorded {
		f.Add([]byte(body))
	}
	for range 20 {
		f.Add(generate())
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if !json.Valid(body) || bytes.Count(body, []byte("{")) > 200 {
			return // the SDK's and encoding/json's errors for broken JSON are both errors; checked above
		}
		l, lErr := lean(body)
		s, sErr := ref(body)
		sameResponse(t, "fuzzed", body, l, s, lErr, sErr)
	})
}

func TestResponsesDecodeMatchesTheSDK(t *testing.T) {
	m := NewResponses("o4-mini", nil)
	decodersAgree(t, m.decode, func(b []byte) (*model.Response, error) { return sdkResponses(m, b) }, recordedResponses, newGen(1).responseBody)
}

func FuzzResponsesDecode(f *testing.F) {
	m := NewResponses("o4-mini", nil)
	fuzzDecoders(f, m.decode, func(b []byte) (*model.Response, error) { return sdkResponses(m, b) }, recordedResponses, newGen(2).responseBody)
}

// request is a generated model.Request: every role, kept reasoning, tools
// with and without schemas, an output schema now and then.
func (g gen) request() *model.Request {
	req := &model.Request{}
	if g.pick(2) == 0 {
		req.System = g.text()
	}
	for range g.pick(8) {
		switch g.pick(3) {
		case 0:
			req.Messages = append(req.Messages, model.Message{Role: model.RoleUser, Content: g.text()})
		case 1:
			msg := model.Message{Role: model.RoleAssistant, Content: g.text()}
			for range g.pick(3) {
				msg.ToolCalls = append(msg.ToolCalls, model.ToolCall{ID: g.id(), Name: "deploy", Arguments: g.arguments()})
			}
			if g.pick(2) == 0 {
				items := []any{g.reasoningItem()}
				if g.pick(2) == 0 {
					items = append(items, g.reasoningItem())
				}
				data, _ := json.Marshal(items)
				msg.Provider = &model.ProviderData{Name: ResponsesProvider, Data: data}
			}
			req.Messages = append(req.Messages, msg)
		default:
			req.Messages = append(req.Messages, model.Message{Role: model.RoleTool, ToolCallID: g.id(), Content: g.text()})
		}
	}
	schemas := []string{``, `{}`, `{"type":"object","properties":{"env":{"type":"string","enum":["staging","prod"]}},"required":["env"]}`,
		`{"type":"object","properties":{"n":{"type":"integer","minimum":0,"maximum":10}},"additionalProperties":false}`, `null`}
	for i := range g.pick(4) {
		req.Tools = append(req.Tools, model.ToolDefinition{Name: fmt.Sprintf("tool_%d", i), Description: g.text(), Parameters: json.RawMessage(schemas[g.pick(len(schemas))])})
	}
	if g.pick(4) == 0 {
		req.OutputSchema = json.RawMessage(schemas[2])
	}
	return req
}

// sameJSON compares two bodies as JSON values (numbers exactly).
func sameJSON(a, b []byte) bool {
	decode := func(data []byte) any {
		d := json.NewDecoder(bytes.NewReader(data))
		d.UseNumber()
		var v any
		if d.Decode(&v) != nil {
			return fmt.Sprintf("invalid: %s", data)
		}
		return v
	}
	return reflect.DeepEqual(decode(a), decode(b))
}

// requestsAgree checks the lean request against the SDK's params, as
// JSON, for fuzzedCount generated requests; adapter makes the adapter of
// each (its options may vary) and returns its two builders.
func requestsAgree(t *testing.T, g gen, adapter func() (lean func(*model.Request) ([]byte, error), ref func(*model.Request) (any, error))) {
	t.Helper()
	for i := range fuzzedCount {
		lean, ref := adapter()
		req := g.request()
		l, lErr := lean(req)
		params, sErr := ref(req)
		if (lErr != nil) != (sErr != nil) {
			t.Fatalf("request %d: lean error %v, SDK error %v", i, lErr, sErr)
		}
		if lErr != nil {
			continue
		}
		s, err := json.Marshal(params)
		if err != nil {
			t.Fatal(err)
		}
		if !sameJSON(l, s) {
			t.Fatalf("request %d: the two paths send different bodies\nlean: %s\nSDK:  %s", i, l, s)
		}
	}
}

func TestResponsesRequestMatchesTheSDK(t *testing.T) {
	g := newGen(3)
	efforts := []string{"", "minimal", "high"}
	requestsAgree(t, g, func() (func(*model.Request) ([]byte, error), func(*model.Request) (any, error)) {
		store := g.pick(3) == 0
		opts := &ResponsesOptions{ReasoningEffort: efforts[g.pick(len(efforts))], MaxOutputTokens: int64(g.pick(3) * 1000)}
		if g.pick(2) == 0 {
			opts.Store = &store
		}
		m := NewResponses("o4-mini", opts)
		return m.body, func(r *model.Request) (any, error) { return m.params(r) }
	})
}

// chatBody is a generated ChatCompletion as the API (and compatible
// servers: Ollama, vLLM) send it.
func (g gen) chatBody() []byte {
	var choices []any
	for i := range g.pick(3) {
		msg := map[string]any{"role": "assistant", "content": g.maybe(g.text()), "refusal": nil, "annotations": []any{}}
		if g.pick(4) == 0 {
			msg["content"], msg["refusal"] = nil, g.text()
		}
		if g.pick(2) == 0 {
			var calls []any
			for range 1 + g.pick(3) {
				switch g.pick(6) {
				case 0:
					calls = append(calls, map[string]any{"id": g.id(), "type": "custom", "custom": map[string]any{"name": "grep", "input": g.text()}})
				case 1:
					calls = append(calls, map[string]any{"id": g.id(), "function": map[string]any{"name": "deploy", "arguments": g.arguments()}}) // no type: some servers
				default:
					calls = append(calls, map[string]any{"id": g.maybe(g.id()), "type": "function", "function": map[string]any{"name": g.maybe("deploy"), "arguments": g.maybe(g.arguments())}})
				}
			}
			msg["tool_calls"] = calls
		}
		choices = append(choices, map[string]any{"index": i, "message": msg, "logprobs": nil, "finish_reason": "tool_calls"})
	}
	r := map[string]any{"id": "chatcmpl-" + g.id(), "object": "chat.completion", "created": 1764000000, "model": "gpt-4o-mini",
		"choices": choices, "system_fingerprint": "fp_1", "service_tier": "default"}
	if g.pick(5) > 0 {
		r["usage"] = map[string]any{"prompt_tokens": g.maybe(g.pick(100000)), "completion_tokens": g.pick(4000), "total_tokens": 1,
			"prompt_tokens_details": map[string]any{"cached_tokens": 0}}
	}
	b, err := json.Marshal(r)
	if err != nil {
		panic(err)
	}
	return b
}

var recordedChat = []string{
	`{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"deploy","arguments":"{\"env\":\"staging\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":20,"completion_tokens":9,"total_tokens":29}}`,
	`{"id":"chatcmpl-2","choices":[{"index":0,"message":{"role":"assistant","content":"Done."},"finish_reason":"stop"}],"usage":{"prompt_tokens":30,"completion_tokens":3}}`,
	`{"id":"chatcmpl-3","choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"I can't."}}]}`,
	`{"id":"ollama","model":"llama3.1","choices":[{"index":0,"message":{"role":"assistant","content":"","tool_calls":[{"id":"call_x","function":{"name":"deploy","arguments":{"env":"prod"}}}]}}]}`,
	`{"choices":[1,{"message":{"content":"x"}}]}`, `{"choices":[{"message":{"content":"x"}},1]}`, `{"choices":[{"message":5}]}`,
	`{"choices":[{"message":{"content":"x","tool_calls":[1,{"id":"a","function":{"name":"n"}}]}}]}`,
	`{"choices":[]}`, `{"choices":null}`, `{"choices":{"0":{}}}`, `{"choices":[null]}`, `{"choices":[1]}`, `{}`, `null`, `[]`, `not json`,
	`{"choices":[{"message":{"content":5,"tool_calls":[{"id":1,"type":"function","function":{"name":"x","arguments":{"a":1}}}]}}],"usage":{"prompt_tokens":"3","completion_tokens":2.5}}`,
}

// sdkChat decodes body as the SDK's client does, then reads it as the SDK
// path does.
func sdkChat(m *Model, body []byte) (*model.Response, error) {
	var cc *sdk.ChatCompletion
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(&cc); err != nil {
		return nil, err
	}
	if cc == nil || len(cc.Choices) == 0 {
		return nil, fmt.Errorf("no choices") // as the SDK path answers
	}
	return response(cc.Choices[0].Message, cc.Usage), nil
}

func TestChatDecodeMatchesTheSDK(t *testing.T) {
	m := New("gpt-4o-mini", nil)
	decodersAgree(t, m.decode, func(b []byte) (*model.Response, error) { return sdkChat(m, b) }, recordedChat, newGen(4).chatBody)
}

func FuzzChatDecode(f *testing.F) {
	m := New("gpt-4o-mini", nil)
	fuzzDecoders(f, m.decode, func(b []byte) (*model.Response, error) { return sdkChat(m, b) }, recordedChat, newGen(5).chatBody)
}

func TestChatRequestMatchesTheSDK(t *testing.T) {
	m := New("gpt-4o-mini", nil)
	requestsAgree(t, newGen(6), func() (func(*model.Request) ([]byte, error), func(*model.Request) (any, error)) {
		return m.body, func(r *model.Request) (any, error) { return m.params(r) }
	})
}

// The lean decoders read a reply in place; what they keep is their own:
// the reply's buffer may be reused (and is not kept alive) afterwards.
func TestDecodedRepliesDoNotAliasTheBody(t *testing.T) {
	r := NewResponses("o4-mini", nil)
	c := New("gpt-4o-mini", nil)
	for _, tc := range []struct {
		body   string
		decode func([]byte) (*model.Response, error)
	}{
		{recordedResponses[0], r.decode}, {recordedResponses[1], r.decode}, {recordedChat[0], c.decode}, {recordedChat[1], c.decode},
	} {
		body := []byte(tc.body)
		got, err := tc.decode(body)
		if err != nil {
			t.Fatal(err)
		}
		want := show(got)
		for i := range body {
			body[i] = 'x'
		}
		if now := show(got); now != want {
			t.Fatalf("the reply changed with its body's buffer:\nbefore %s\nafter  %s", want, now)
		}
	}
}

// A server answering 200 with the body null: an empty answer from the
// Responses API and "no choices" from Chat Completions, on both paths,
// never a panic.
func TestNullRepliesOnBothPaths(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, "null")
	}))
	defer srv.Close()
	req := &model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}}
	for _, sdkPath := range []bool{false, true} {
		r, err := NewResponses("o4-mini", &ResponsesOptions{Options: Options{BaseURL: srv.URL, APIKey: "k", SDK: sdkPath}}).Generate(context.Background(), req)
		if err != nil || r.Message.Content != "" || len(r.Message.ToolCalls) != 0 {
			t.Fatalf("responses, sdk %v: %+v %v", sdkPath, r, err)
		}
		_, err = New("gpt-4o-mini", &Options{BaseURL: srv.URL, APIKey: "k", SDK: sdkPath}).Generate(context.Background(), req)
		if err == nil || !strings.Contains(err.Error(), "has no choices") {
			t.Fatalf("chat, sdk %v: %v", sdkPath, err)
		}
	}
}
