// Package oidcop runs a real OpenID Provider on loopback for tests: the
// example OP that ships with github.com/zitadel/oidc (its discovery
// document, JWKS, login page and token endpoint), around a storage that
// adds what the example's lacks: users with a display name and groups (the
// "name" and "groups" claims), JWT access tokens, a token lifetime the test
// sets, and a signing key it can rotate. Nothing here mints a token itself:
// every token comes from the provider's own endpoints.
package oidcop

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
	"golang.org/x/text/language"
)

// User is a person the provider signs in.
type User struct {
	ID, Username, Password string
	Name                   string
	Groups                 []string
}

// Client is an application registered with the provider: a web client
// with a secret (HTTP Basic or form post at the token endpoint).
type Client struct {
	ID, Secret   string
	RedirectURIs []string
}

// Provider is a running OpenID Provider.
type Provider struct {
	// Issuer is its issuer URL (http://127.0.0.1:PORT/).
	Issuer string
	stor   *store
}

// Start runs a provider for clients and users until the test ends.
func Start(t testing.TB, clients []Client, users ...User) *Provider {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	issuer := "http://" + ln.Addr().String() + "/"
	registered := map[string]*storage.Client{}
	for _, c := range clients {
		registered[c.ID] = storage.WebClient(c.ID, c.Secret, c.RedirectURIs...)
	}
	st := &store{users: map[string]User{}, lifetime: 5 * time.Minute}
	for _, u := range users {
		st.users[u.ID] = u
	}
	st.Storage = storage.NewStorageWithClients(userStore{st}, registered)
	st.rotate()
	srv := &http.Server{Handler: exampleop.SetupServer(issuer, st, nil, false), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return &Provider{Issuer: issuer, stor: st}
}

// Rotate signs from now on with a new key; the old one leaves the key set,
// so tokens it signed no longer verify.
func (p *Provider) Rotate() { p.stor.rotate() }

// SetLifetime sets how long the access tokens issued from now on last.
func (p *Provider) SetLifetime(d time.Duration) {
	p.stor.mu.Lock()
	defer p.stor.mu.Unlock()
	p.stor.lifetime = d
}

// Tokens are what the token endpoint answered.
type Tokens struct {
	AccessToken string `json:"access_token"`
	IDToken     string `json:"id_token"`
}

// SignIn runs the authorization code flow with PKCE over HTTP as a browser
// would: the authorization request, the provider's login form, its
// redirect with the code, and the code's exchange at the token endpoint.
func (p *Provider) SignIn(t testing.TB, c Client, username, password string) Tokens {
	t.Helper()
	var disc struct {
		Authorization string `json:"authorization_endpoint"`
		Token         string `json:"token_endpoint"`
	}
	getJSON(t, p.Issuer+".well-known/openid-configuration", &disc)
	verifier := base64.RawURLEncoding.EncodeToString([]byte(rand.Text() + rand.Text()))
	sum := sha256.Sum256([]byte(verifier))
	q := url.Values{"client_id": {c.ID}, "redirect_uri": {c.RedirectURIs[0]}, "response_type": {"code"}, "scope": {"openid profile"},
		"state": {"st"}, "code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"}}
	back := p.Authorize(t, disc.Authorization+"?"+q.Encode(), username, password)
	code := mustURL(t, back).Query().Get("code")
	if code == "" {
		t.Fatalf("no code in the redirect %s", back)
	}
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {c.RedirectURIs[0]}, "code_verifier": {verifier}}
	req, _ := http.NewRequest(http.MethodPost, disc.Token, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(c.ID, c.Secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out Tokens
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK || out.AccessToken == "" {
		t.Fatalf("the token endpoint answered %d (%v)", resp.StatusCode, err)
	}
	return out
}

// Authorize takes an authorization request URL (the provider's, with a
// client's parameters) through the provider's login form as a browser
// would, and returns where the provider sends the browser back: the
// client's redirect URI with the code and state.
func (p *Provider) Authorize(t testing.TB, authURL, username, password string) string {
	t.Helper()
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	loc := redirect(t, noFollow, http.MethodGet, authURL, nil)
	login, err := url.Parse(loc)
	if err != nil {
		t.Fatal(err)
	}
	id := login.Query().Get("authRequestID")
	if id == "" {
		t.Fatalf("the provider did not send the browser to its login page: %s", loc)
	}
	next := redirect(t, noFollow, http.MethodPost, p.Issuer+"login/username", url.Values{"id": {id}, "username": {username}, "password": {password}})
	if !strings.HasPrefix(next, "http") {
		next = strings.TrimSuffix(p.Issuer, "/") + next
	}
	return redirect(t, noFollow, http.MethodGet, next, nil)
}

func redirect(t testing.TB, c *http.Client, method, u string, form url.Values) string {
	t.Helper()
	var body *strings.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	} else {
		body = strings.NewReader("")
	}
	req, _ := http.NewRequest(method, u, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	loc := resp.Header.Get("Location")
	if resp.StatusCode/100 != 3 || loc == "" {
		t.Fatalf("%s %s: %d, no redirect (wrong password?)", method, u, resp.StatusCode)
	}
	return loc
}

func mustURL(t testing.TB, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func getJSON(t testing.TB, u string, v any) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("%s: %v", u, err)
	}
}

// store is the example's storage with users that have names and groups,
// JWT access tokens of a set lifetime, and a rotating signing key.
type store struct {
	*storage.Storage
	users    map[string]User
	mu       sync.Mutex
	key      *rsa.PrivateKey
	keyID    string
	lifetime time.Duration
}

func (s *store) rotate() {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.key, s.keyID = key, fmt.Sprintf("key-%d", time.Now().UnixNano())
}

type signingKey struct {
	id  string
	key *rsa.PrivateKey
}

func (k signingKey) SignatureAlgorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k signingKey) Key() any                                    { return k.key }
func (k signingKey) ID() string                                  { return k.id }

type publicKey struct{ signingKey }

func (k publicKey) Algorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k publicKey) Use() string                        { return "sig" }
func (k publicKey) Key() any                           { return &k.key.PublicKey }

// SigningKey is the current key.
func (s *store) SigningKey(context.Context) (op.SigningKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return signingKey{s.keyID, s.key}, nil
}

// SignatureAlgorithms is RS256.
func (s *store) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{jose.RS256}, nil
}

// KeySet is the current key alone: a rotated-out key is gone from it.
func (s *store) KeySet(context.Context) ([]op.Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return []op.Key{publicKey{signingKey{s.keyID, s.key}}}, nil
}

// GetClientByClientID gives every client JWT access tokens.
func (s *store) GetClientByClientID(ctx context.Context, id string) (op.Client, error) {
	c, err := s.Storage.GetClientByClientID(ctx, id)
	if err != nil {
		return nil, err
	}
	return jwtClient{c}, nil
}

type jwtClient struct{ op.Client }

func (jwtClient) AccessTokenType() op.AccessTokenType { return op.AccessTokenTypeJWT }

// GetPrivateClaimsFromScopes adds the user's name and groups.
func (s *store) GetPrivateClaimsFromScopes(ctx context.Context, userID, clientID string, scopes []string) (map[string]any, error) {
	claims, err := s.Storage.GetPrivateClaimsFromScopes(ctx, userID, clientID, scopes)
	if err != nil {
		return nil, err
	}
	if claims == nil {
		claims = map[string]any{}
	}
	if u, ok := s.users[userID]; ok {
		claims["name"], claims["groups"] = u.Name, u.Groups
	}
	return claims, nil
}

// SetUserinfoFromScopes adds the user's name and groups to the ID token
// and the userinfo answer, whatever the scopes.
func (s *store) SetUserinfoFromScopes(ctx context.Context, info *oidc.UserInfo, userID, clientID string, scopes []string) error {
	if err := s.Storage.SetUserinfoFromScopes(ctx, info, userID, clientID, scopes); err != nil {
		return err
	}
	if u, ok := s.users[userID]; ok {
		info.Name = u.Name
		info.AppendClaims("groups", u.Groups)
	}
	return nil
}

// CreateAccessToken issues the token for the set lifetime.
func (s *store) CreateAccessToken(ctx context.Context, req op.TokenRequest) (string, time.Time, error) {
	id, _, err := s.Storage.CreateAccessToken(ctx, req)
	s.mu.Lock()
	defer s.mu.Unlock()
	return id, time.Now().Add(s.lifetime), err
}

// CreateAccessAndRefreshTokens issues the access token for the set lifetime.
func (s *store) CreateAccessAndRefreshTokens(ctx context.Context, req op.TokenRequest, current string) (string, string, time.Time, error) {
	id, refresh, _, err := s.Storage.CreateAccessAndRefreshTokens(ctx, req, current)
	s.mu.Lock()
	defer s.mu.Unlock()
	return id, refresh, time.Now().Add(s.lifetime), err
}

// userStore is the example storage's view of the users.
type userStore struct{ s *store }

func (u userStore) GetUserByID(id string) *storage.User {
	if v, ok := u.s.users[id]; ok {
		return exampleUser(v)
	}
	return nil
}

func (u userStore) GetUserByUsername(name string) *storage.User {
	for _, v := range u.s.users {
		if v.Username == name {
			return exampleUser(v)
		}
	}
	return nil
}

func (u userStore) ExampleClientID() string { return storage.ServiceUserID }

func exampleUser(u User) *storage.User {
	return &storage.User{ID: u.ID, Username: u.Username, Password: u.Password, FirstName: u.Name, Email: u.Username + "@example.org",
		EmailVerified: true, PreferredLanguage: language.English}
}
