package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	_ "modernc.org/sqlite"

	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/store/storeurl"
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
			for range 6 {
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
			if out, ok := verify(); !ok || !strings.Contains(out, "6 sessions") || !strings.Contains(out, "signed: 6 sessions") || !strings.Contains(out, "every chain and signed checkpoint holds") {
				t.Fatalf("the untouched store: %v\n%s", ok, out)
			}
			// An export of the untouched store verifies offline: with
			// cairn audit verify --file, and with the Python program that
			// docs/audit.md shows.
			export := filepath.Join(dir, "export.jsonl")
			if out, err := exec.Command(binary, "audit", "export", "--config", cfg, "--out", export).CombinedOutput(); err != nil || !strings.Contains(string(out), "6 sessions") {
				t.Fatalf("export: %v\n%s", err, out)
			}
			checkExport(t, export, "")

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
			// The events of a session rewritten with every hash recomputed,
			// as someone who read docs/audit.md would: the chain holds, the
			// signed checkpoint does not.
			rewritten := ids[4]
			st, err := storeurl.Open(context.Background(), url)
			if err != nil {
				t.Fatal(err)
			}
			recorded, err := st.Events(context.Background(), rewritten, 0)
			_ = st.Close()
			if err != nil {
				t.Fatal(err)
			}
			prev := ""
			for i := range recorded {
				recorded[i].Data = json.RawMessage(strings.ReplaceAll(string(recorded[i].Data), "production", "prod-eu"))
				recorded[i].Hash = session.EventHash(rewritten, &recorded[i], prev)
				prev = recorded[i].Hash
				blob := "CAST('%s' AS BLOB)"
				if name == "postgres" {
					blob = "convert_to('%s', 'UTF8')"
				}
				exec(fmt.Sprintf("UPDATE %s SET data = "+fmt.Sprintf(blob, recorded[i].Data)+", hash = '%s' WHERE session_id = '%s' AND seq = %d", events, recorded[i].Hash, rewritten, recorded[i].Seq))
			}
			if out, ok := verify("--session", rewritten); ok || !strings.Contains(out, "the events up to it were rewritten, hashes and all") {
				t.Errorf("rewritten with its hashes: ok=%v\n%s", ok, out)
			}
			if out, ok := verify("--session", ids[5]); !ok {
				t.Errorf("the untouched session: %s", out)
			}
			if out, ok := verify(); ok || !strings.Contains(out, "5 of 6 sessions are broken") {
				t.Errorf("the whole store: ok=%v\n%s", ok, out)
			}
			// The export's own lines, edited: both checks name the session.
			tamperExport(t, export, ids[5])
		})
	}
}

// checkExport runs cairn audit verify --file and docs/audit.md's Python
// program on an export: both pass, or (broken != "") both fail naming
// the session broken.
func checkExport(t *testing.T, export, broken string) {
	t.Helper()
	out, err := exec.Command(binary, "audit", "verify", "--file", export).CombinedOutput()
	if (err == nil) != (broken == "") || !strings.Contains(string(out), broken) || broken == "" && !strings.Contains(string(out), "every chain and signed checkpoint holds") {
		t.Errorf("verify --file (broken %q): %v\n%s", broken, err, out)
	}
	py, err := exec.Command("python3", docsPython(t), export).CombinedOutput()
	if (err == nil) != (broken == "") || broken != "" && !strings.Contains(string(py), "broken: session "+broken) {
		t.Errorf("the offline program (broken %q): %v\n%s", broken, err, py)
	}
}

// tamperExport edits one session's lines in copies of an export, in each
// way the offline check must notice.
func tamperExport(t *testing.T, export, id string) {
	t.Helper()
	data, err := os.ReadFile(export)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	edit := func(name string, f func(rec map[string]any) bool) {
		t.Helper()
		var out []string
		done := false
		for _, line := range lines {
			var rec map[string]any
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatal(err)
			}
			if !done && (rec["session"] == id || rec["id"] == id) && f(rec) {
				done = true
				b, _ := json.Marshal(rec)
				line = string(b)
			}
			out = append(out, line)
		}
		if !done {
			t.Fatalf("%s: no line to edit", name)
		}
		path := filepath.Join(filepath.Dir(export), name+".jsonl")
		if err := os.WriteFile(path, []byte(strings.Join(out, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		checkExport(t, path, id)
	}
	edit("data", func(rec map[string]any) bool {
		d, ok := rec["data"].(string)
		if ok && strings.Contains(d, "production") {
			rec["data"] = strings.ReplaceAll(d, "production", "staging")
		}
		return ok && rec["data"] != d
	})
	edit("checkpoint", func(rec map[string]any) bool {
		cp, ok := rec["checkpoint"].(map[string]any)
		if ok {
			cp["at_us"] = cp["at_us"].(float64) + 1
		}
		return ok
	})
}

// docsPython writes the Python program of docs/audit.md to a file.
func docsPython(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile("../../docs/audit.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "```python\n")
	program, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("docs/audit.md shows no Python program")
	}
	path := filepath.Join(t.TempDir(), "verify.py")
	if err := os.WriteFile(path, []byte(program), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
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

// A key from the config signs; after a rotation to another key, the old
// one kept in audit.public_keys still verifies what it signed, and
// without it verify names the key it does not trust.
func TestAuditKeyRotation(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "cairn.yaml")
	store := "sqlite:" + filepath.Join(dir, "cairn.db")
	keygen := func() (private, public string) {
		t.Helper()
		out, err := exec.Command(binary, "audit", "keygen").Output()
		if err != nil {
			t.Fatal(err)
		}
		var id string
		if _, err := fmt.Sscanf(string(out), "# public key %s id %s", &public, &id); err != nil {
			t.Fatalf("keygen said %q: %v", out, err)
		}
		return string(out), strings.TrimSuffix(public, ",")
	}
	k1, pub1 := keygen()
	k2, _ := keygen()
	write := func(audit string) {
		t.Helper()
		if err := os.WriteFile(cfg, []byte(fmt.Sprintf(auditConfig, store)+audit), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("CAIRN_AUDIT_KEY", k1)
	write("audit: {signing_key_env: CAIRN_AUDIT_KEY, key_id: k1}\n")
	cmd, base := serve(t, cfg)
	_, s := apiCall(t, "POST", base+"/v1/sessions", "", `{"agent":"main","input":"ship it"}`)
	if s["status"] != "paused" {
		t.Fatalf("%v", s)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	verify := func() (string, bool) {
		out, err := exec.Command(binary, "audit", "verify", "--config", cfg).CombinedOutput()
		return string(out), err == nil
	}
	if out, ok := verify(); !ok || !strings.Contains(out, "by key k1") || !strings.Contains(out, "signed: 1 sessions") {
		t.Fatalf("signed with k1: %v\n%s", ok, out)
	}
	// Rotated to k2, with k1 kept.
	t.Setenv("CAIRN_AUDIT_KEY", k2)
	write("audit: {signing_key_env: CAIRN_AUDIT_KEY, key_id: k2, public_keys: {k1: " + pub1 + "}}\n")
	if out, ok := verify(); !ok || !strings.Contains(out, "key k1: "+pub1) || !strings.Contains(out, "key k2: ") {
		t.Fatalf("after the rotation, k1 kept: %v\n%s", ok, out)
	}
	// Rotated without keeping k1: the checkpoint it signed is not trusted.
	write("audit: {signing_key_env: CAIRN_AUDIT_KEY, key_id: k2}\n")
	if out, ok := verify(); ok || !strings.Contains(out, `signed by key "k1", which is not among the keys trusted (k2)`) {
		t.Fatalf("after the rotation, k1 dropped: %v\n%s", ok, out)
	}
	// The config's mistakes name the key path.
	write("audit: {signing_key_env: CAIRN_NO_SUCH_KEY}\n")
	if out, ok := verify(); ok || !strings.Contains(out, "audit.signing_key_env: environment variable CAIRN_NO_SUCH_KEY is not set") {
		t.Fatalf("an unset key variable: %v\n%s", ok, out)
	}
	write("audit: {signing_key_env: CAIRN_AUDIT_KEY, key_id: k2, public_keys: {k2: " + pub1 + "}}\n")
	if out, ok := verify(); ok || !strings.Contains(out, "key id k2 names two different public keys") {
		t.Fatalf("one id for two keys: %v\n%s", ok, out)
	}
}
