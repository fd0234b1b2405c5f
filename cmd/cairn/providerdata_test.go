package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/cairnhq/cairn/internal/testkit/fakeanthropic"
	"github.com/cairnhq/cairn/internal/testkit/fakegemini"
	"github.com/cairnhq/cairn/internal/testkit/fakeresponses"
	"github.com/cairnhq/cairn/internal/testkit/providertest"
)

const providerConfig = `
store: sqlite:./cairn.db
models:
  claude:
    provider: anthropic
    model: claude-test
    base_url: %s
    api_key_env: FAKE_KEY
    max_tokens: 8000
    thinking: {budget_tokens: 2048}
  gpt:
    provider: openai-responses
    model: o4-mini
    base_url: %s/v1
    api_key_env: FAKE_KEY
    reasoning: {effort: medium}
    store: false
  gemini:
    provider: gemini
    model: gemini-test
    base_url: %s
    api_key_env: FAKE_KEY
    thinking: {budget_tokens: 2048}
tools:
  delete_file:
    parameters: {type: object, properties: {filename: {type: string}}, required: [filename]}
    command: ["sh", "-c", "echo deleted"]
    approval: always
agents:
  files: {model: %s, tools: [delete_file]}
`

// For each provider whose data must come back (Anthropic's signed thinking,
// the Responses API's encrypted reasoning, Gemini's thought signatures), a session paused for approval
// on one server is approved on another after the first was killed with -9:
// the second sends the stored data back and the fake, which checks it as
// the provider does, accepts. With the data removed from the stored
// events, the provider refuses and the turn fails with its error.
func TestProviderDataAcrossKill9AndAnotherReplica(t *testing.T) {
	anthropicFake := fakeanthropic.Start(t, func(r fakeanthropic.Request) fakeanthropic.Reply {
		if last := r.LastBlock(); last.Type == "tool_result" {
			return fakeanthropic.Reply{Thinking: "Report it.", Text: "Done: " + strings.TrimSpace(last.ContentText())}
		}
		return fakeanthropic.Reply{Thinking: "Deleting needs the tool.", Redacted: true,
			ToolCalls: []fakeanthropic.Call{{ID: "toolu_01", Name: "delete_file", Input: `{"filename":"test.txt"}`}}}
	})
	responsesFake := fakeresponses.Start(t, func(r fakeresponses.Request) fakeresponses.Reply {
		if last := r.Last(); last.Type == "function_call_output" {
			return fakeresponses.Reply{Reasoning: "Report it.", Text: "Done: " + strings.TrimSpace(last.OutputText())}
		}
		return fakeresponses.Reply{Reasoning: "Deleting needs the tool.",
			ToolCalls: []fakeresponses.Call{{CallID: "call_01", Name: "delete_file", Arguments: `{"filename":"test.txt"}`}}}
	})
	geminiFake := fakegemini.Start(t, func(r fakegemini.Request) fakegemini.Reply {
		if res := r.Responses(); len(res) > 0 {
			return fakegemini.Reply{Text: "Done: " + strings.TrimSpace(fmt.Sprint(res[0].Response["output"]))}
		}
		return fakegemini.Reply{Thought: "Deleting needs the tool.",
			ToolCalls: []fakegemini.Call{{Name: "delete_file", Args: map[string]any{"filename": "test.txt"}}}}
	})
	t.Setenv("FAKE_KEY", "sk-fake")
	for _, c := range []struct{ agentModel, refusal string }{
		{"claude", "must start with a thinking block"},
		{"gpt", "without its required 'reasoning' item"},
		{"gemini", "missing a thought_signature"},
	} {
		for _, strip := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stripped=%v", c.agentModel, strip), func(t *testing.T) {
				dir := t.TempDir()
				cfg := filepath.Join(dir, "cairn.yaml")
				if err := os.WriteFile(cfg, []byte(fmt.Sprintf(providerConfig, anthropicFake.URL, responsesFake.URL, geminiFake.URL, c.agentModel)), 0o600); err != nil {
					t.Fatal(err)
				}

				a, baseA := serve(t, cfg)
				_, baseB := serve(t, cfg)
				code, s := post(t, baseA+"/v1/sessions", `{"agent":"files","input":"Delete test.txt"}`)
				if code != 201 || s["status"] != "paused" {
					t.Fatalf("%d %v", code, s)
				}
				a.Process.Kill() // kill -9
				a.Wait()
				if strip {
					providertest.StripProviderData(t, filepath.Join(dir, "cairn.db"))
				}
				in := s["interrupts"].([]any)[0].(map[string]any)
				code, done := post(t, baseB+"/v1/sessions/"+s["id"].(string)+"/decisions",
					fmt.Sprintf(`{"seq":%v,"decisions":[{"interrupt_id":%q,"action":"approve"}]}`, s["seq"], in["id"]))
				if strip {
					e, _ := done["error"].(map[string]any)
					prov, _ := e["provider"].(map[string]any)
					if code != 200 || done["status"] != "failed" || prov["status"] != 400.0 || !strings.Contains(fmt.Sprint(prov["message"]), c.refusal) {
						t.Fatalf("without the provider data: %d %v", code, done)
					}
					return
				}
				if code != 200 || done["status"] != "completed" || done["output"] != "Done: deleted" {
					t.Fatalf("approve on the other replica: %d %v", code, done)
				}
			})
		}
	}
}
