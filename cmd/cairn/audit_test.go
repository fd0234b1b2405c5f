package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	_ "modernc.org/sqlite"
)

const auditConfig = `store: %s
models:
  demo:
    provider: scripted
    script:
      - tool_calls: [{name: deploy, arguments: {environment: production}}]
      - text: "done: {{.LastResult}}"
tools:
  deploy:
    parameters: {type: object, properties: {environment: {type: string}}, required: [environment]}
    builtin: echo
    approval: always
agents:
  main: {model: demo, tools: [deploy]}
`

// Rows edited, deleted, inserted and moved straight in the database, on
// SQLite and PostgreSQL: cairn audit verify names the first broken event
// of each session and exits 1; an untouched session, and the store before
// the edits, verify.
func TestAuditVerifyFindsEdits(t *testing.T) {
	for name, storeURL := range stores(t) {
		t.Run(name, func(t *testing.T) {
			url := storeURL(t)
			dir := t.TempDir()
			cfg := filepath.Join(dir, "cairn.yaml")
			if err := os.WriteFile(cfg, []byte(fmt.Sprintf(auditConfig, url)), 0o600); err != nil {
				t.Fatal(err)
			}
			cmd, base := serve(t, cfg)
			var ids []string
			for range 5 {
				_, s := apiCall(t, "POST", base+"/v1/sessions", "", `{"agent":"main","input":"ship it"}`)
				in := s["interrupts"].([]any)[0].(map[string]any)
				if status, done := apiCall(t, "POST", base+"/v1/sessions/"+s["id"].(string)+"/decisions", "",
					fmt.Sprintf(`{"seq":%d,"decisions":[{"interrupt_id":%q,"action":"approve"}]}`, int64(s["seq"].(float64)), in["id"])); status != 200 || done["status"] != "completed" {
					t.Fatalf("approve: %d %v", status, done)
				}
				ids = append(ids, s["id"].(string))
			}
			// The API shows the chain: each event's prev is the hash of
			// the one before, also on a page that starts mid-log.
			_, all := apiCall(t, "GET", base+"/v1/sessions/"+ids[0]+"/events", "", "")
			_, page := apiCall(t, "GET", base+"/v1/sessions/"+ids[0]+"/events?after=2", "", "")
			evs, tail := all["events"].([]any), page["events"].([]any)
			for i, ev := range evs {
				ev := ev.(map[string]any)
				want := ""
				if i > 0 {
					want = evs[i-1].(map[string]any)["hash"].(string)
				}
				if h, _ := ev["hash"].(string); len(h) != 64 || fmt.Sprint(ev["prev"]) != want && !(want == "" && ev["prev"] == nil) {
					t.Fatalf("event %d: hash %v, prev %v, want prev %q", i+1, ev["hash"], ev["prev"], want)
				}
			}
			if first := tail[0].(map[string]any); first["prev"] != evs[1].(map[string]any)["hash"] {
				t.Fatalf("the page after event 2 starts with prev %v", first["prev"])
			}
			_ = cmd.Process.Kill()
			_ = cmd.Wait()

			verify := func(args ...string) (string, bool) {
				out, err := exec.Command(binary, append([]string{"audit", "verify", "--config", cfg}, args...)...).CombinedOutput()
				return string(out), err == nil
			}
			if out, ok := verify(); !ok || !strings.Contains(out, "5 sessions") || !strings.Contains(out, "every chain holds") {
				t.Fatalf("the untouched store: %v\n%s", ok, out)
			}

			exec := dbExec(t, url)
			events := "events"
			if name == "postgres" {
				events = "cairn_events"
			}
			for i, c := range []struct {
				what, sql, says string
			}{
				{"an edited event", "UPDATE %[1]s SET agent = 'mallory' WHERE session_id = '%[2]s' AND seq = 3",
					"event 3: it does not match its hash"},
				{"a deleted event", "DELETE FROM %[1]s WHERE session_id = '%[2]s' AND seq = 2",
					"event 3: seq 3 follows seq 1"},
				{"an inserted event", "INSERT INTO %[1]s(session_id, seq, type, time, frame, agent, data, hash) SELECT session_id, seq + 1, type, time, frame, agent, data, hash FROM %[1]s WHERE session_id = '%[2]s' AND seq = (SELECT MAX(seq) FROM %[1]s WHERE session_id = '%[2]s')",
					"it does not match its hash"},
				{"two events swapped", "UPDATE %[1]s SET seq = -1 WHERE session_id = '%[2]s' AND seq = 2; UPDATE %[1]s SET seq = 2 WHERE session_id = '%[2]s' AND seq = 3; UPDATE %[1]s SET seq = 3 WHERE session_id = '%[2]s' AND seq = -1",
					"event 2: it does not match its hash"},
			} {
				id := ids[i]
				for _, q := range strings.Split(fmt.Sprintf(c.sql, events, id), "; ") {
					exec(q)
				}
				out, ok := verify("--session", id)
				if ok || !strings.Contains(out, "broken: session "+id+", ") || !strings.Contains(out, c.says) {
					t.Errorf("%s: verify exited ok=%v:\n%s", c.what, ok, out)
				}
			}
			if out, ok := verify("--session", ids[4]); !ok {
				t.Errorf("the untouched session: %s", out)
			}
			if out, ok := verify(); ok || !strings.Contains(out, "the chain of 4 of 5 sessions is broken") {
				t.Errorf("the whole store: ok=%v\n%s", ok, out)
			}
		})
	}
}

// dbExec runs SQL on the store at url, behind Cairn's back.
func dbExec(t *testing.T, url string) func(q string) {
	if path, ok := strings.CutPrefix(url, "sqlite:"); ok {
		db, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		return func(q string) {
			if _, err := db.Exec(q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(ctx) })
	return func(q string) {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}
