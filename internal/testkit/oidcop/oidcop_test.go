package oidcop_test

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/internal/testkit/oidcop"
)

// The provider signs a user in through its own login form and issues a JWT
// access token for the client, with the user's name and groups.
func TestSignIn(t *testing.T) {
	c := oidcop.Client{ID: "cairn", Secret: "s3cret", RedirectURIs: []string{"http://127.0.0.1:1/callback"}}
	p := oidcop.Start(t, []oidcop.Client{c}, oidcop.User{ID: "u1", Username: "ana", Password: "pw", Name: "Ana", Groups: []string{"sre"}})
	tok := p.SignIn(t, c, "ana", "pw")
	parts := strings.Split(tok.AccessToken, ".")
	if len(parts) != 3 {
		t.Fatalf("the access token is not a JWT: %q", tok.AccessToken)
	}
	body, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var claims map[string]any
	if err := json.Unmarshal(body, &claims); err != nil {
		t.Fatal(err)
	}
	if claims["iss"] != p.Issuer || claims["sub"] != "u1" || claims["name"] != "Ana" || claims["groups"].([]any)[0] != "sre" {
		t.Fatalf("claims %v", claims)
	}
}
