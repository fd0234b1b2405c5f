package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"

	"github.com/cairnhq/cairn/session"
)

// OIDC has the server accept bearer JWTs issued by an OpenID Provider
// (Options.OIDC), besides its static tokens. Tokens are verified with
// github.com/coreos/go-oidc against the issuer's discovery document and
// JWKS (a key the set no longer has is refused; a new key is fetched when
// a token names it): the signature, iss, aud, exp (with ClockSkew) and nbf.
type OIDC struct {
	// Issuer is the provider's issuer URL.
	Issuer string
	// Audience is what the tokens' aud must hold; empty: ClientID.
	Audience string
	// ClientID is the server's client at the provider, and ClientSecret
	// its secret for the page's sign-in (empty: a public client, PKCE
	// alone). The sign-in's redirect URL is Options.BaseURL + /auth/callback.
	ClientID, ClientSecret string
	// NameClaim, GroupsClaim and TenantClaim are the claims of the display
	// name, the groups and the tenant; empty: "name" (then
	// "preferred_username"), "groups" and "tenant". A token without the
	// tenant claim acts in the default tenant; one whose tenant is not a
	// tenant name (session.ValidTenant) is refused. No claim makes a
	// person global: only a configured token does.
	NameClaim, GroupsClaim, TenantClaim string
	// Roles maps a role (RoleAdmin, RoleApprover) to the groups that have
	// it; a person in none of them is a RoleUser.
	Roles map[string][]string
	// ClockSkew is how long past its exp a token is still taken (clocks
	// differ); 0 means 30 s, and it is at most 5 minutes.
	ClockSkew time.Duration
}

// MaxClockSkew bounds OIDC.ClockSkew.
const MaxClockSkew = 5 * time.Minute

// oidcVerifier verifies bearer JWTs and the page's ID tokens. The
// provider's discovery document is read on the first token (and again after
// a failure), so a server starts while its provider is down.
type oidcVerifier struct {
	cfg      OIDC
	mu       sync.Mutex
	prov     *oidc.Provider
	bearer   *oidc.IDTokenVerifier // aud: Audience, or ClientID
	idTokens *oidc.IDTokenVerifier // aud: ClientID (the page's sign-in)
	loaded   time.Time
}

// keySetAge bounds how long a key the provider no longer publishes may
// still verify tokens: the key set is read again when a token names a key
// it lacks, and at the latest this long after it was read.
const keySetAge = 10 * time.Minute

func newOIDCVerifier(cfg *OIDC) *oidcVerifier {
	if cfg == nil {
		return nil
	}
	c := *cfg
	if c.ClockSkew <= 0 {
		c.ClockSkew = 30 * time.Second
	}
	c.ClockSkew = min(c.ClockSkew, MaxClockSkew)
	return &oidcVerifier{cfg: c}
}

// errNotAJWT: the bearer token is not a JWT (three dot-separated parts).
var errNotAJWT = errors.New("not a JWT")

// errProviderDown: the OpenID Provider could not be reached, so no JWT can
// be checked now; the token may well be good (503, not 401).
var errProviderDown = errors.New("the OpenID Provider cannot be reached")

// verify checks a bearer JWT and returns its principal.
func (v *oidcVerifier) verify(ctx context.Context, raw string) (principal, error) {
	if strings.Count(raw, ".") != 2 {
		return principal{}, errNotAJWT
	}
	if _, err := v.provider(ctx); err != nil {
		return principal{}, err
	}
	v.mu.Lock()
	ver := v.bearer
	v.mu.Unlock()
	p, _, err := v.check(ctx, ver, raw, "")
	return p, err
}

// verifyIDToken checks an ID token of the page's sign-in (and its nonce,
// when given) and returns its principal and expiry.
func (v *oidcVerifier) verifyIDToken(ctx context.Context, raw, nonce string) (principal, time.Time, error) {
	if _, err := v.provider(ctx); err != nil {
		return principal{}, time.Time{}, err
	}
	v.mu.Lock()
	ver := v.idTokens
	v.mu.Unlock()
	return v.check(ctx, ver, raw, nonce)
}

func (v *oidcVerifier) check(ctx context.Context, ver *oidc.IDTokenVerifier, raw, nonce string) (principal, time.Time, error) {
	tok, err := ver.Verify(ctx, raw)
	if err != nil {
		var expired *oidc.TokenExpiredError
		if errors.As(err, &expired) {
			return principal{}, time.Time{}, fmt.Errorf("the token expired at %s", expired.Expiry.UTC().Format(time.RFC3339))
		}
		return principal{}, time.Time{}, fmt.Errorf("the token does not verify against %s: %w", v.cfg.Issuer, err)
	}
	if nonce != "" && tok.Nonce != nonce {
		return principal{}, time.Time{}, errors.New("the ID token's nonce is not this sign-in's")
	}
	var claims map[string]any
	if err := tok.Claims(&claims); err != nil {
		return principal{}, time.Time{}, fmt.Errorf("the token's claims: %w", err)
	}
	name := stringClaim(claims, v.cfg.NameClaim, "name", "preferred_username")
	tenantClaim := cmp.Or(v.cfg.TenantClaim, "tenant")
	tenant := ""
	if raw, ok := claims[tenantClaim]; ok {
		t, isString := raw.(string)
		if !isString || !session.ValidTenant(t) {
			return principal{}, time.Time{}, fmt.Errorf("the token's %s claim is not a tenant name (letters, digits, '.', '_' and '-', at most 64)", tenantClaim)
		}
		tenant = t
	}
	groups := groupsClaim(claims[cmp.Or(v.cfg.GroupsClaim, "groups")])
	role := RoleUser
	for _, r := range []string{RoleApprover, RoleAdmin} {
		if slices.ContainsFunc(groups, func(g string) bool { return slices.Contains(v.cfg.Roles[r], g) }) {
			role = r
		}
	}
	// The owner of what they start is the subject (names repeat, subjects
	// do not), marked so that no static token's name can be it.
	owner := "oidc:" + tok.Subject
	return principal{name: owner, role: role, actor: session.Actor{Name: cmp.Or(name, tok.Subject), Role: role, Subject: tok.Subject,
		Issuer: tok.Issuer, Groups: groups, Tenant: tenant, Via: session.ViaOIDC}}, tok.Expiry, nil
}

// provider reads the discovery document once (again after keySetAge, so
// that the key set is read afresh too) and makes the verifiers.
func (v *oidcVerifier) provider(ctx context.Context) (*oidc.Provider, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.prov != nil && time.Since(v.loaded) < keySetAge {
		return v.prov, nil
	}
	// The provider (and its key set, which refreshes itself) outlives the
	// request that first needed it.
	p, err := oidc.NewProvider(context.WithoutCancel(ctx), v.cfg.Issuer)
	if err != nil {
		return nil, fmt.Errorf("%w (%s): %v", errProviderDown, v.cfg.Issuer, err)
	}
	skew := v.cfg.ClockSkew
	now := func() time.Time { return time.Now().Add(-skew) }
	v.prov, v.loaded = p, time.Now()
	v.bearer = p.Verifier(&oidc.Config{ClientID: cmp.Or(v.cfg.Audience, v.cfg.ClientID), Now: now})
	v.idTokens = p.Verifier(&oidc.Config{ClientID: v.cfg.ClientID, Now: now})
	return p, nil
}

func stringClaim(claims map[string]any, names ...string) string {
	for _, n := range names {
		if s, ok := claims[n].(string); ok && n != "" && s != "" {
			return s
		}
	}
	return ""
}

// groupsClaim reads a groups claim: a list of strings, or one string.
func groupsClaim(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, g := range v {
			if s, ok := g.(string); ok && s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}
