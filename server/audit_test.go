package server_test

import (
	"context"
	"crypto/ed25519"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/audit"
	"github.com/cairnhq/cairn/model/scripted"
	"github.com/cairnhq/cairn/server"
	"github.com/cairnhq/cairn/store/sqlite"
)

// GET /v1/sessions/{id}/audit says how far a session's chain holds and
// its last signed checkpoint; after an edit straight in the database, it
// says where the record breaks.
func TestAuditEndpoint(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "cairn.db")
	st, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	_, priv, _ := ed25519.GenerateKey(nil)
	key, err := audit.NewKey("k1", priv)
	if err != nil {
		t.Fatal(err)
	}
	deploy := cairn.NewTool(&cairn.Tool{Name: "deploy", Description: "Deploy.", Approval: cairn.Always()},
		func(ctx context.Context, a struct{}) (string, error) { return "deployed", nil })
	model := scripted.New(scripted.Reply{ToolCalls: []scripted.Call{{Name: "deploy", Arguments: `{}`}}}, scripted.Reply{Text: "done"})
	r, err := cairn.NewRunner([]*cairn.Agent{{Name: "main", Model: model, Tools: []*cairn.Tool{deploy}}}, &cairn.RunnerOptions{Store: st, Signer: key})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	srv := httptest.NewServer(server.New(r, nil))
	t.Cleanup(srv.Close)
	s, err := r.Start(ctx, "main", "deploy", nil)
	if err != nil || s.Status != cairn.StatusPaused {
		t.Fatalf("%+v %v", s, err)
	}
	get := func(id string) (int, map[string]any) {
		t.Helper()
		resp, err := http.Get(srv.URL + "/v1/sessions/" + id + "/audit")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, body
	}
	code, body := get(s.ID)
	cp, _ := body["checkpoint"].(map[string]any)
	if code != 200 || body["verified_seq"] != float64(s.Seq) || body["signed_seq"] != float64(s.Seq) || cp == nil || cp["key"] != "k1" ||
		!strings.HasPrefix(body["summary"].(string), fmt.Sprintf("verified up to seq %d; signed checkpoint at seq %d, ", s.Seq, s.Seq)) {
		t.Fatalf("the paused session: %d %v", code, body)
	}
	if code, body := get("no-such-session"); code != 404 {
		t.Fatalf("an unknown session: %d %v", code, body)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE events SET data = CAST(replace(CAST(data AS TEXT), 'deploy', 'destroy') AS BLOB) WHERE session_id = ? AND seq = 2`, s.ID); err != nil {
		t.Fatal(err)
	}
	code, body = get(s.ID)
	broken, _ := body["broken"].(map[string]any)
	if code != 200 || broken == nil || broken["seq"] != float64(2) || body["verified_seq"] != float64(1) || body["signed_seq"] != float64(0) ||
		!strings.HasPrefix(body["summary"].(string), "broken at seq 2: it does not match its hash") {
		t.Fatalf("after an edit: %d %v", code, body)
	}
}
