package main

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/cairnhq/cairn/internal/fakeanthropic"
)

const thinkingConfig = `
store: sqlite:./cairn.db
models:
  claude:
    provider: anthropic
    model: claude-test
    base_url: %s
    api_key_env: FAKE_ANTHROPIC_KEY
    max_tokens: 8000
    thinking: {budget_tokens: 2048}
tools:
  delete_file:
    parameters: {type: object, properties: {filename: {type: string}}, required: [filename]}
    command: ["sh", "-c", "echo deleted"]
    approval: always
agents:
  files: {model: claude, tools: [delete_file]}
`

// With extended thinking on, a session paused for approval on one server
// is approved on another after the first was killed with -9: the second
// sends the stored thinking blocks back and the API, which checks them,
// accepts. With the blocks removed from the stored events, the API refuses
// and the turn fails with its error.
func TestThinkingAcrossKill9AndAnotherReplica(t *testing.T) {
	for _, strip := range []bool{false, true} {
		t.Run(fmt.Sprintf("stripped=%v", strip), func(t *testing.T) {
			fake := fakeanthropic.Start(t, func(r fakeanthropic.Request) fakeanthropic.Reply {
				if last := r.LastBlock(); last.Type == "tool_result" {
					return fakeanthropic.Reply{Thinking: "Report it.", Text: "Done: " + strings.TrimSpace(last.ContentText())}
				}
				return fakeanthropic.Reply{Thinking: "Deleting needs the tool.", Redacted: true,
					ToolCalls: []fakeanthropic.Call{{ID: "toolu_01", Name: "delete_file", Input: `{"filename":"test.txt"}`}}}
			})
			t.Setenv("FAKE_ANTHROPIC_KEY", "sk-fake")
			dir := t.TempDir()
			cfg := filepath.Join(dir, "cairn.yaml")
			os.WriteFile(cfg, []byte(fmt.Sprintf(thinkingConfig, fake.URL)), 0o600)

			a, baseA := serve(t, cfg)
			_, baseB := serve(t, cfg)
			code, s := post(t, baseA+"/v1/sessions", `{"agent":"files","input":"Delete test.txt"}`)
			if code != 201 || s["status"] != "paused" {
				t.Fatalf("%d %v", code, s)
			}
			a.Process.Kill() // kill -9
			a.Wait()
			if strip {
				db, err := sql.Open("sqlite", filepath.Join(dir, "cairn.db"))
				if err != nil {
					t.Fatal(err)
				}
				if _, err := db.Exec(`UPDATE events SET data = json_remove(data, '$.message.provider_data') WHERE type = 'model_response'`); err != nil {
					t.Fatal(err)
				}
				db.Close()
			}
			in := s["interrupts"].([]any)[0].(map[string]any)
			code, done := post(t, baseB+"/v1/sessions/"+s["id"].(string)+"/decisions",
				fmt.Sprintf(`{"seq":%v,"decisions":[{"interrupt_id":%q,"action":"approve"}]}`, s["seq"], in["id"]))
			if strip {
				e, _ := done["error"].(map[string]any)
				prov, _ := e["provider"].(map[string]any)
				if code != 200 || done["status"] != "failed" || prov["status"] != 400.0 || !strings.Contains(fmt.Sprint(prov["message"]), "must start with a thinking block") {
					t.Fatalf("without the thinking blocks: %d %v", code, done)
				}
				return
			}
			if code != 200 || done["status"] != "completed" || done["output"] != "Done: deleted" {
				t.Fatalf("approve on the other replica: %d %v", code, done)
			}
		})
	}
}
