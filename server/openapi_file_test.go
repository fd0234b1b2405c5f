package server

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/session"
)

var updateOpenAPI = flag.Bool("update-openapi", false, "rewrite api/openapi.json from the server")

// api/openapi.json is the document GET /v1/openapi.json serves, indented:
// clients generate their types from it, so a server change that does not
// update it fails here. Rewrite it with
// go test ./server -run TestOpenAPIFileIsTheServers -update-openapi.
func TestOpenAPIFileIsTheServers(t *testing.T) {
	doc, err := openAPIDocument()
	if err != nil {
		t.Fatal(err)
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, doc, "", "  "); err != nil {
		t.Fatal(err)
	}
	pretty.WriteByte('\n')
	path := filepath.Join("..", "api", "openapi.json")
	if *updateOpenAPI {
		if err := os.WriteFile(path, pretty.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	file, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v; write it with -update-openapi", err)
	}
	if !bytes.Equal(file, pretty.Bytes()) {
		t.Fatalf("api/openapi.json differs from what the server serves; rewrite it: go test ./server -run TestOpenAPIFileIsTheServers -update-openapi")
	}
}

// Every enum of the wire is an enum in the document, with exactly the
// values of its Go list: a kind, status, action, mode, scope or event type
// added in Go and not here (or the other way) fails.
func TestOpenAPIEnumsAreTheGoLists(t *testing.T) {
	doc, err := openAPIDocument()
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Components struct {
			Schemas map[string]json.RawMessage `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		t.Fatal(err)
	}
	component := func(name string) map[string]any {
		var s map[string]any
		if err := json.Unmarshal(d.Components.Schemas[name], &s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	enumAt := func(schema string, path ...string) []string {
		s := component(schema)
		for _, p := range path {
			next, _ := s["properties"].(map[string]any)[p].(map[string]any)
			if items, ok := next["items"].(map[string]any); ok {
				next = items
			}
			if ref, ok := next["$ref"].(string); ok {
				next = component(strings.TrimPrefix(ref, "#/components/schemas/"))
			}
			s = next
		}
		var out []string
		for _, v := range s["enum"].([]any) {
			out = append(out, v.(string))
		}
		return out
	}
	for _, c := range []struct {
		got  []string
		want []string
	}{
		{enumAt("Session", "interrupts", "kind"), names(session.AllKinds())},
		{enumAt("Session", "status"), names(session.AllStatuses())},
		{enumAt("DecisionsRequest", "decisions", "action"), names(session.AllActions())},
		{enumAt("Session", "stack", "mode"), names(session.AllModes())},
		{enumAt("CancelRequest", "scope"), names(session.AllCancelScopes())},
		{enumAt("EventsBody", "events", "type"), names(session.AllEventTypes())},
		{enumAt("Session", "interrupts", "ask", "decider"), names(session.AllDeciders())},
		{enumAt("Session", "interrupts", "ask", "choices", "field"), names(session.AllFields())},
	} {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("enum %v, Go list %v", c.got, c.want)
		}
	}
}

func names[S ~string](values []S) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = string(v)
	}
	return out
}
