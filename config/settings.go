package config

import (
	"cmp"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/audit"
	"github.com/cairnhq/cairn/internal/suggest"
	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/store/storeurl"
	"github.com/cairnhq/cairn/webhook"
)

// server reads the settings of the process: keys, auth, store, lease.
func (l *loader) server(f *File, cfg *Config) error {
	var err error
	if cfg.ContinuationKeys, err = l.keys(f.SecretEnv); err != nil {
		return err
	}
	if s := f.Suggestions; s != nil {
		if s.MinApprovals < 0 || s.MinPeople < 0 {
			return l.errf("suggestions", "min_approvals and min_people are counts (0: the defaults, 20 and 2); to offer none, off: true")
		}
		cfg.Suggestions = cairn.SuggestionPolicy{MinApprovals: s.MinApprovals, MinPeople: s.MinPeople, Off: s.Off}
	}
	if f.Auth != nil {
		cfg.AdminOverride = f.Auth.AdminOverride
		if f.Auth.OIDC != nil {
			if cfg.OIDC, err = l.oidc(*f.Auth.OIDC); err != nil {
				return err
			}
		}
		if len(f.Auth.Tokens) > 0 || cfg.OIDC == nil {
			if cfg.Tokens, err = l.tokens(f.Auth); err != nil {
				return err
			}
		}
	}
	if cfg.Store, err = l.store(f.Store); err != nil {
		return err
	}
	if cfg.TokenLedger, err = l.tokenLedger(f, cfg); err != nil {
		return err
	}
	if cfg.Lease, err = l.duration("lease", f.Lease, cairn.DefaultLease); err != nil {
		return err
	}
	if cfg.Lease < 3*time.Second {
		return l.errf("lease", "%s is too short: a process renews every third of it; use 3s or more (default 15s)", cfg.Lease)
	}
	if cfg.ShutdownGrace, err = l.duration("shutdown_grace", f.ShutdownGrace, 30*time.Second); err != nil {
		return err
	}
	if err := l.retention(f.Retention, cfg); err != nil {
		return err
	}
	if cfg.Audit, err = l.audit(f.Audit, cfg.Store); err != nil {
		return err
	}
	if f.PublicURL != "" {
		if u, err := url.Parse(f.PublicURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" {
			return l.errf("public_url", "%q is not an absolute http(s) URL like https://cairn.example.org", f.PublicURL)
		}
		cfg.PublicURL = strings.TrimRight(f.PublicURL, "/")
	}
	for i, h := range f.AllowedHosts {
		if h == "" || strings.ContainsAny(h, "/:@ ") {
			return l.errf(fmt.Sprintf("allowed_hosts[%d]", i), "%q is not a host name: write the name alone, like cairn.internal (no scheme, port or path)", h)
		}
	}
	cfg.AllowedHosts = f.AllowedHosts
	for i, o := range f.AllowedOrigins {
		if u, err := url.Parse(o); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
			return l.errf(fmt.Sprintf("allowed_origins[%d]", i), "%q is not a web origin: write scheme://host[:port], like https://app.example.org", o)
		}
		cfg.AllowedOrigins = append(cfg.AllowedOrigins, strings.TrimRight(o, "/"))
	}
	if cfg.Webhooks, err = l.webhooks(f, cfg.Tokens); err != nil {
		return err
	}
	cfg.Temporal, err = l.temporal(f)
	return err
}

// temporal reads driver and the temporal section.
func (l *loader) temporal(f *File) (*Temporal, error) {
	switch f.Driver {
	case "", "local":
		if f.Temporal != nil {
			return nil, l.errf("temporal", "the temporal section is read only with driver: temporal")
		}
		return nil, nil
	case "temporal":
	default:
		return nil, l.errf("driver", "%q is not local or temporal%s", f.Driver, suggest.Hint(f.Driver, []string{"local", "temporal"}))
	}
	if f.Store == "memory" || f.Store == "memory:" {
		return nil, l.errf("store", "driver: temporal mirrors sessions to the store for the API and the workers to share; use sqlite:PATH (one machine) or postgres://…")
	}
	tc := TemporalConfig{}
	if f.Temporal != nil {
		tc = *f.Temporal
	}
	t := &Temporal{HostPort: cmp.Or(tc.HostPort, "127.0.0.1:7233"), Namespace: cmp.Or(tc.Namespace, "default"), TaskQueue: cmp.Or(tc.TaskQueue, "cairn")}
	var err error
	if t.Heartbeat, err = l.duration("temporal.heartbeat", tc.Heartbeat, 10*time.Second); err != nil {
		return nil, err
	}
	if t.MaxHistory = tc.MaxHistory; t.MaxHistory < 0 {
		return nil, l.errf("temporal.max_history", "%d is negative; 0 means the default (10000)", t.MaxHistory)
	}
	if _, _, err := net.SplitHostPort(t.HostPort); err != nil {
		return nil, l.errf("temporal.host_port", "%q is not HOST:PORT (e.g. 127.0.0.1:7233)", t.HostPort)
	}
	if tc.TLS != nil {
		abs := func(p string) string {
			if p != "" && !filepath.IsAbs(p) {
				return filepath.Join(l.dir, p)
			}
			return p
		}
		t.CertFile, t.KeyFile, t.CAFile, t.ServerName = abs(tc.TLS.CertFile), abs(tc.TLS.KeyFile), abs(tc.TLS.CAFile), tc.TLS.ServerName
		if (t.CertFile == "") != (t.KeyFile == "") {
			return nil, l.errf("temporal.tls", "cert_file and key_file go together (a client certificate and its key)")
		}
		for key, p := range map[string]string{"cert_file": t.CertFile, "key_file": t.KeyFile, "ca_file": t.CAFile} {
			if _, err := os.Stat(p); p != "" && err != nil {
				return nil, l.errf("temporal.tls."+key, "%v", err)
			}
		}
	}
	if tc.APIKeyEnv != "" {
		key, ok := l.env(tc.APIKeyEnv)
		if !ok || key == "" {
			return nil, l.errf("temporal.api_key_env", "environment variable %s is not set", tc.APIKeyEnv)
		}
		t.APIKey = key
	}
	return t, nil
}

// webhooks reads the webhooks section; secrets come from the environment.
func (l *loader) webhooks(f *File, tokens []Token) ([]webhook.Subscription, error) {
	if len(f.Webhooks) > 0 && f.PublicURL == "" {
		return nil, l.errf("webhooks", "webhooks need public_url, the address people reach this server at: their action links are built from it (public_url: https://cairn.example.org)")
	}
	var out []webhook.Subscription
	names := map[string]bool{}
	for i, w := range f.Webhooks {
		key := fmt.Sprintf("webhooks[%d]", i)
		if u, err := url.Parse(w.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, l.errf("webhooks", "%s.url: %q is not an absolute http(s) URL", key, w.URL)
		}
		if w.SecretEnv == "" {
			return nil, l.errf("webhooks", "%s.secret_env: name the environment variable that holds the signing secret (whsec_ followed by base64: echo whsec_$(openssl rand -base64 32))", key)
		}
		secret, ok := l.env(w.SecretEnv)
		if !ok || secret == "" {
			return nil, l.errf("webhooks", "%s.secret_env: environment variable %s is not set", key, w.SecretEnv)
		}
		if err := webhook.CheckSecret(secret); err != nil {
			return nil, l.errf("webhooks", "%s: %s: %v", key, w.SecretEnv, err)
		}
		for j, ev := range w.Events {
			if !slices.Contains(webhook.EventTypes(), ev) {
				return nil, l.errf("webhooks", "%s.events[%d]: %q is not one of %s%s", key, j, ev, webhook.EventTypeNames(), suggest.Hint(string(ev), strings.Split(webhook.EventTypeNames(), ", ")))
			}
		}
		timeout, err := l.duration(key+".timeout", w.Timeout, 10*time.Second)
		if err != nil {
			return nil, err
		}
		name := cmp.Or(w.Name, w.URL)
		if names[name] {
			return nil, l.errf("webhooks", "%s: the name %q is used twice; give each endpoint its own name", key, name)
		}
		names[name] = true
		if err := l.tenantName(key+".tenant", w.Tenant); err != nil {
			return nil, err
		}
		sub := webhook.Subscription{Name: name, URL: w.URL, Secret: secret, Events: w.Events, Timeout: timeout, Groups: w.Groups, Tenant: w.Tenant}
		if w.Person != "" {
			if len(w.Groups) > 0 || w.Tenant != "" {
				return nil, l.errf("webhooks", "%s: a receiver issued to a person speaks with their groups and tenant; remove groups and tenant (or person)", key)
			}
			i := slices.IndexFunc(tokens, func(t Token) bool { return t.Name == w.Person })
			if i < 0 {
				var names []string
				for _, t := range tokens {
					names = append(names, t.Name)
				}
				return nil, l.errf("webhooks", "%s.person: %q is none of the auth tokens' names (%s)%s", key, w.Person, strings.Join(names, ", "), suggest.Hint(w.Person, names))
			}
			t := tokens[i]
			sub.Person = &session.Actor{Name: t.Name, Role: t.Role, Subject: t.Subject, Groups: t.Groups, Tenant: t.Tenant, AllTenants: t.AllTenants}
		}
		out = append(out, sub)
	}
	return out, nil
}

// keys reads the continuation keys from the variable secret_env names.
func (l *loader) keys(secretEnv string) ([][]byte, error) {
	if secretEnv == "" {
		return nil, nil
	}
	v, ok := l.env(secretEnv)
	if !ok || strings.TrimSpace(v) == "" {
		return nil, l.errf("secret_env", "environment variable %s is not set; export it (openssl rand -hex 32) or remove secret_env to let Cairn generate and store a key", secretEnv)
	}
	var keys [][]byte
	for i, k := range strings.Split(v, ",") {
		k = strings.TrimSpace(k)
		if len(k) < 32 {
			return nil, l.errf("secret_env", "key %d in %s is %d characters; use at least 32 (openssl rand -hex 32)", i, secretEnv, len(k))
		}
		keys = append(keys, []byte(k))
	}
	return keys, nil
}

// audit reads the audit section. Sessions in a memory store are signed
// only when the section says so: what no one can edit needs no proof,
// and two signatures a pause and resume would be a third of its cost.
func (l *loader) audit(ac *AuditConfig, storeURL string) (Audit, error) {
	a := Audit{Sign: storeURL != "memory:", Keys: audit.Keys{}}
	if ac == nil {
		return a, nil
	}
	if ac.Sign != nil {
		a.Sign = *ac.Sign
	}
	if ac.CheckpointEvery < 0 {
		return a, l.errf("audit.checkpoint_every", "%d: use a positive number of events (default 100)", ac.CheckpointEvery)
	}
	a.CheckpointEvery = ac.CheckpointEvery
	if ac.SigningKeyEnv != "" {
		v, ok := l.env(ac.SigningKeyEnv)
		if !ok || strings.TrimSpace(v) == "" {
			return a, l.errf("audit.signing_key_env", "environment variable %s is not set; export an Ed25519 key (openssl genpkey -algorithm ed25519) or remove signing_key_env to let Cairn generate one and keep it in the store", ac.SigningKeyEnv)
		}
		priv, err := audit.ParsePrivateKey(v)
		if err != nil {
			return a, l.errf("audit.signing_key_env", "%s: %v", ac.SigningKeyEnv, err)
		}
		if a.Key, err = audit.NewKey(ac.KeyID, priv); err != nil {
			return a, l.errf("audit.key_id", "%v", err)
		}
		if err := a.Keys.Add(a.Key.ID(), a.Key.Public()); err != nil {
			return a, l.errf("audit.key_id", "%v", err)
		}
	} else if ac.KeyID != "" {
		return a, l.errf("audit.key_id", "names the key of signing_key_env, which is not set: the store's own key is named by its fingerprint")
	}
	ids := make([]string, 0, len(ac.PublicKeys))
	for id := range ac.PublicKeys {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		pub, err := audit.ParsePublicKey(ac.PublicKeys[id])
		if err != nil {
			return a, l.errf("audit.public_keys."+id, "%v", err)
		}
		if err := a.Keys.Add(id, pub); err != nil {
			return a, l.errf("audit.public_keys."+id, "%v", err)
		}
	}
	return a, nil
}

// retention reads the retention section.
func (l *loader) retention(rc *RetentionConfig, cfg *Config) error {
	if rc == nil {
		return nil
	}
	for _, k := range []struct {
		status cairn.Status
		v      string
	}{{cairn.StatusCompleted, rc.Completed}, {cairn.StatusFailed, rc.Failed}, {cairn.StatusCancelled, rc.Cancelled}} {
		if k.v == "" {
			continue
		}
		d, err := ParseAge(k.v)
		if err != nil || d <= 0 {
			return l.errf("retention."+string(k.status), "%q is not a positive duration like 720h or 30d", k.v)
		}
		if cfg.Retention == nil {
			cfg.Retention = map[cairn.Status]time.Duration{}
		}
		cfg.Retention[k.status] = d
	}
	if rc.Tombstones != "" {
		d, err := ParseAge(rc.Tombstones)
		if err != nil || d <= 0 {
			return l.errf("retention.tombstones", "%q is not a positive duration like 8760h or 365d", rc.Tombstones)
		}
		cfg.TombstoneRetention = d
	}
	var err error
	cfg.RetentionSweep, err = l.duration("retention.sweep", rc.Sweep, time.Minute)
	return err
}

// ParseAge parses an age as the config file writes one: a Go duration
// (720h), or a whole number of days (30d).
func ParseAge(v string) (time.Duration, error) {
	if n, ok := strings.CutSuffix(v, "d"); ok {
		d, err := strconv.Atoi(n)
		if err != nil || d <= 0 || d > 100*365 {
			return 0, fmt.Errorf("%q is not a number of days", v)
		}
		return time.Duration(d) * 24 * time.Hour, nil
	}
	return time.ParseDuration(v)
}

// minTokenLength keeps guessable tokens out.
const minTokenLength = 16

// duration parses an optional positive duration.
func (l *loader) duration(key, v string, def time.Duration) (time.Duration, error) {
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, l.errf(key, "%q is not a positive duration like 15s or 1m", v)
	}
	return d, nil
}

// Token is a bearer token of the auth section, its secret read from the
// environment (the server's server.Token).
type Token struct {
	// Name identifies the holder (default: the role).
	Name string
	// Secret is the token itself.
	Secret string
	// Role is user, approver or admin.
	Role string
	// Subject (default: Name) and Groups describe the person.
	Subject string
	Groups  []string
	// Tenant is the holder's tenant; AllTenants (tenant "*") makes them
	// global.
	Tenant     string
	AllTenants bool
}

// AllTenants is the tenant value that makes a token (or a webhook) global.
const AllTenants = webhook.AllTenants

// tenantName checks a configured tenant: a name of letters, digits, '.',
// '_' and '-' (at most 64), or AllTenants.
func (l *loader) tenantName(key, t string) error {
	if t == "" || t == AllTenants || session.ValidTenant(t) {
		return nil
	}
	return l.errf(key, "%q is not a tenant name: use letters, digits, '.', '_' and '-' (at most 64), or \"*\" for every tenant", t)
}

// OIDC is auth.oidc checked: an OpenID Provider whose bearer JWTs the
// server accepts (see server.OIDC).
type OIDC struct {
	Issuer, Audience, ClientID, ClientSecret string
	NameClaim, GroupsClaim, TenantClaim      string
	Roles                                    map[string][]string
	ClockSkew                                time.Duration
}

func (l *loader) oidc(c OIDCConfig) (*OIDC, error) {
	u, err := url.Parse(c.Issuer)
	if c.Issuer == "" || err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, l.errf("auth.oidc.issuer", "%q is not the issuer URL of an OpenID Provider (https://idp.example.org)", c.Issuer)
	}
	if c.ClientID == "" && c.Audience == "" {
		return nil, l.errf("auth.oidc.client_id", "is required (or audience): the tokens' aud must name this server")
	}
	for role := range c.Roles {
		if role != "admin" && role != "approver" {
			return nil, l.errf("auth.oidc.roles", "%q is not admin or approver (everyone else is a user)%s", role, suggest.Hint(role, []string{"admin", "approver"}))
		}
	}
	out := &OIDC{Issuer: c.Issuer, Audience: c.Audience, ClientID: c.ClientID, NameClaim: c.Claims.Name, GroupsClaim: c.Claims.Groups, TenantClaim: c.Claims.Tenant, Roles: c.Roles}
	if c.ClientSecretEnv != "" {
		secret, ok := l.env(c.ClientSecretEnv)
		if !ok || secret == "" {
			return nil, l.errf("auth.oidc.client_secret_env", "environment variable %s is not set", c.ClientSecretEnv)
		}
		out.ClientSecret = secret
	}
	if c.ClockSkew != "" {
		d, err := time.ParseDuration(c.ClockSkew)
		if err != nil || d < 0 || d > 5*time.Minute {
			return nil, l.errf("auth.oidc.clock_skew", "%q is not a duration from 0 to 5m (default 30s)", c.ClockSkew)
		}
		out.ClockSkew = d
	}
	return out, nil
}

func (l *loader) tokens(a *AuthConfig) ([]Token, error) {
	if len(a.Tokens) == 0 {
		return nil, l.errf("auth.tokens", "list at least one token or configure oidc, or remove auth (the server then listens on loopback only)")
	}
	var out []Token
	names, secrets := map[string]bool{}, map[string]bool{}
	for i, t := range a.Tokens {
		switch t.Role {
		case "user", "approver", "admin":
		default:
			return nil, l.errf("auth.tokens", "tokens[%d].role: %q is not one of user, approver, admin%s", i, t.Role, suggest.Hint(t.Role, []string{"user", "approver", "admin"}))
		}
		if t.TokenEnv == "" {
			return nil, l.errf("auth.tokens", "tokens[%d].token_env: name the environment variable that holds the token", i)
		}
		secret, ok := l.env(t.TokenEnv)
		if !ok || secret == "" {
			return nil, l.errf("auth.tokens", "tokens[%d].token_env: environment variable %s is not set", i, t.TokenEnv)
		}
		if len(secret) < minTokenLength {
			return nil, l.errf("auth.tokens", "tokens[%d]: the token in %s is shorter than %d characters; use a random one (openssl rand -hex 32)", i, t.TokenEnv, minTokenLength)
		}
		name := t.Name
		if name == "" {
			name = t.Role
		}
		if names[name] || secrets[secret] {
			return nil, l.errf("auth.tokens", "tokens[%d]: the name %q or its token is used twice", i, name)
		}
		names[name], secrets[secret] = true, true
		for j, g := range t.Groups {
			if strings.TrimSpace(g) == "" {
				return nil, l.errf("auth.tokens", "tokens[%d].groups[%d] is empty", i, j)
			}
		}
		if err := l.tenantName(fmt.Sprintf("auth.tokens[%d].tenant", i), t.Tenant); err != nil {
			return nil, err
		}
		tok := Token{Name: name, Secret: secret, Role: t.Role, Subject: cmp.Or(t.Subject, name), Groups: t.Groups, Tenant: t.Tenant}
		if t.Tenant == AllTenants {
			tok.Tenant, tok.AllTenants = "", true
		}
		out = append(out, tok)
	}
	return out, nil
}

// store normalizes the store URL (storeurl.Normalize), its ${VAR}
// expanded from the environment.
func (l *loader) store(s string) (string, error) {
	s, err := l.expand("store", s)
	if err != nil {
		return "", err
	}
	url, err := storeurl.Normalize(s, l.dir)
	if err != nil {
		return "", l.errf("store", "%v", err)
	}
	return url, nil
}

// tokenLedger checks token_ledger. With store: memory and keys from
// secret_env, tokens outlive the process, so the record of spent ones must
// too: a used token must not become valid again after a restart.
func (l *loader) tokenLedger(f *File, cfg *Config) (string, error) {
	p := f.TokenLedger
	switch {
	case p != "" && cfg.Store != "memory:":
		return "", l.errf("token_ledger", "only used with store: memory; the %s store records spent continuation tokens itself: remove token_ledger", storeurl.Kind(cfg.Store))
	case p == "" && cfg.Store == "memory:" && len(cfg.ContinuationKeys) > 0:
		return "", l.errf("token_ledger", "store: memory with secret_env: continuation tokens outlive this process, so the record of spent ones must too; add token_ledger: ./cairn-tokens.db (a SQLite file) or use a sqlite or postgres store")
	case p == "":
		return "", nil
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(l.dir, p)
	}
	return p, nil
}
