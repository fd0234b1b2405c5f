package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/model"
)

// A structured answer over REST: output is the JSON value, output_text its
// text, in the session a POST returns and in the one a GET reads back.
func TestStructuredOutputOverREST(t *testing.T) {
	m := model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		return &model.Response{Message: model.Message{Content: `{"priority": "high"}`}}, nil
	})
	runner, err := cairn.NewRunner([]*cairn.Agent{{Name: "triage", Model: m,
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"priority":{"enum":["low","high"]}},"required":["priority"]}`)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer runner.Close()
	api := httptest.NewServer(New(runner, nil))
	defer api.Close()
	resp, err := http.Post(api.URL+"/v1/sessions", "application/json", strings.NewReader(`{"agent":"triage","input":"db down"}`))
	if err != nil {
		t.Fatal(err)
	}
	var created struct {
		ID         string         `json:"id"`
		Status     string         `json:"status"`
		Output     map[string]any `json:"output"`
		OutputText string         `json:"output_text"`
	}
	json.NewDecoder(resp.Body).Decode(&created)
	resp.Body.Close()
	if created.Status != "completed" || created.Output["priority"] != "high" || created.OutputText != `{"priority": "high"}` {
		t.Fatalf("POST: %+v", created)
	}
	resp, err = http.Get(api.URL + "/v1/sessions/" + created.ID)
	if err != nil {
		t.Fatal(err)
	}
	var read map[string]any
	json.NewDecoder(resp.Body).Decode(&read)
	resp.Body.Close()
	if out, _ := read["output"].(map[string]any); out["priority"] != "high" || read["output_text"] != `{"priority": "high"}` {
		t.Fatalf("GET: %v", read)
	}
}
