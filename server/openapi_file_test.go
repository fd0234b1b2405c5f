package server

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
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
