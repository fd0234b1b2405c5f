package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// invokeBody is the body resuming a stateless token with one approval.
func invokeBody(res map[string]any) string {
	in := res["interrupts"].([]any)[0].(map[string]any)
	return fmt.Sprintf(`{"continuation":%q,"decisions":[{"interrupt_id":%q,"action":"approve"}]}`, res["continuation"], in["id"])
}

// A continuation token is single use across every node sharing a store: of
// two concurrent resumes on two nodes one wins (200) and one gets 409; after
// the nodes restart it is still spent (409, with the answer of the resume
// that spent it); the tool ran once; a byte inserted anywhere is a 400.
func TestTokenSingleUseAcrossNodes(t *testing.T) {
	for name, newStore := range stores(t) {
		t.Run(name, func(t *testing.T) {
			c := newCluster(t, newStore(t), 2)
			code, res := post(t, c.url(0)+"/v1/agents/main/invoke", `{"input":"Deploy to production."}`)
			if code != 200 || res["status"] != "paused" || res["continuation"] == nil {
				t.Fatalf("invoke: %d %v", code, res)
			}
			body := invokeBody(res)
			codes := make([]int, 2)
			var wg sync.WaitGroup
			for i := range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					codes[i], _ = post(t, c.url(i)+"/v1/agents/main/invoke", body)
				}()
			}
			wg.Wait()
			sort.Ints(codes)
			if codes[0] != 200 || codes[1] != 409 {
				t.Fatalf("two nodes resuming one token answered %v, want [200 409]", codes)
			}
			for i := range 2 {
				c.nodes[i].Process.Signal(syscall.SIGTERM)
				c.nodes[i].Wait()
				c.start(i)
			}
			code, again := post(t, c.url(1)+"/v1/agents/main/invoke", body)
			if code != 409 {
				t.Fatalf("a spent token after a restart: %d %v, want 409", code, again)
			}
			if r, _ := again["result"].(map[string]any); r["status"] != "completed" || !strings.Contains(fmt.Sprint(r["output"]), "deployed") {
				t.Fatalf("the 409 does not carry the answer of the resume that spent the token: %v", again)
			}
			if starts, _ := c.runs(); len(starts) != 1 {
				t.Fatalf("tool starts per key: %v, want one run", starts)
			}
			tok := res["continuation"].(string)
			for _, at := range []int{len(tok) - 5, len(tok) / 2, strings.LastIndexByte(tok, '.') + 1} {
				for _, ws := range []string{"\n", "\r\n"} {
					bad := strings.Replace(body, tok, tok[:at]+ws+tok[at:], 1)
					if code, out := post(t, c.url(0)+"/v1/agents/main/invoke", strings.ReplaceAll(strings.ReplaceAll(bad, "\r", `\r`), "\n", `\n`)); code != 400 {
						t.Fatalf("token with %q inserted at %d: %d %v, want 400", ws, at, code, out)
					}
				}
			}
		})
	}
}

// With store: memory, keys from secret_env and a token_ledger file, a spent
// token stays spent after the process restarts.
func TestTokenLedgerSurvivesRestartWithMemoryStore(t *testing.T) {
	t.Setenv("CAIRN_TEST_TOKEN_KEY", strings.Repeat("k", 40))
	dir := t.TempDir()
	cfg := filepath.Join(dir, "cairn.yaml")
	conf := strings.Replace(fmt.Sprintf(replicaConfig, "memory"), "lease: 3s", "lease: 3s\nsecret_env: CAIRN_TEST_TOKEN_KEY\ntoken_ledger: tokens.db", 1)
	conf = strings.ReplaceAll(conf, "runs.txt", filepath.Join(dir, "runs.txt"))
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd, url := serve(t, cfg)
	_, res := post(t, url+"/v1/agents/main/invoke", `{"input":"Deploy to production."}`)
	body := invokeBody(res)
	if code, out := post(t, url+"/v1/agents/main/invoke", body); code != 200 {
		t.Fatalf("resume: %d %v", code, out)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	_, url = serve(t, cfg)
	if code, out := post(t, url+"/v1/agents/main/invoke", body); code != 409 {
		t.Fatalf("a spent token after a restart: %d %v, want 409", code, out)
	}
}
