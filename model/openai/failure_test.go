package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/model/openai"
	"github.com/cairnhq/cairn/server"
	"github.com/cairnhq/cairn/store/sqlite"
)

// A provider's refusal fails the session, and its status and request id
// stay reachable with errors.As: from the turn's answer, from the stored
// session (after a JSON round trip through SQLite), and over HTTP.
func TestFailedSessionKeepsTheProviderError(t *testing.T) {
	ctx := context.Background()
	srv, _ := flaky(t, 100, 400, "")
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	m := openai.New("gpt-x", &openai.Options{BaseURL: srv.URL + "/v1", APIKey: "k"})
	r, err := cairn.NewRunner([]*cairn.Agent{{Name: "main", Model: m}}, &cairn.RunnerOptions{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	live, err := r.Start(ctx, "main", "hi", nil)
	if err != nil || live.Status != cairn.StatusFailed {
		t.Fatalf("start: %v %+v", err, live)
	}
	stored, err := r.Session(ctx, live.ID)
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]*cairn.Session{"live": live, "stored": stored} {
		var pe *model.ProviderError
		if !errors.As(s.Error, &pe) {
			t.Fatalf("%s: errors.As found no *model.ProviderError in %#v", name, s.Error)
		}
		if pe.Provider != "openai" || pe.Model != "gpt-x" || pe.Status != 400 || pe.RequestID != "req_1" || pe.Message == "" {
			t.Errorf("%s: provider error %+v", name, pe)
		}
	}

	api := httptest.NewServer(server.New(r, nil))
	defer api.Close()
	resp, err := http.Get(api.URL + "/v1/sessions/" + live.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Error struct {
			Code     string `json:"code"`
			Provider struct {
				Status    int    `json:"status"`
				RequestID string `json:"request_id"`
			} `json:"provider"`
		} `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if body.Error.Code != "model_error" || body.Error.Provider.Status != 400 || body.Error.Provider.RequestID != "req_1" {
		t.Errorf("GET session: %+v", body.Error)
	}
}
