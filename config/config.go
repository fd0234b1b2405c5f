// Package config loads Cairn's YAML configuration file (docs/config.md):
// models, tools (command tools with approval policies in CEL), agents and the
// store. Every error names the file, the line, the key path and the problem.
// Load reads and checks; it starts no process and dials nothing. With
// mcp_servers, Config.Connect starts them and completes the agents.
package config

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/template"
	"time"

	"cel.dev/cel-go/cel"
	"go.yaml.in/yaml/v3"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/command"
	"github.com/cairnhq/cairn/mcp/mcptools"
	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/model/anthropic"
	"github.com/cairnhq/cairn/model/openai"
	"github.com/cairnhq/cairn/model/scripted"
	"github.com/cairnhq/cairn/store/storeurl"
	"github.com/cairnhq/cairn/webhook"
)

// File is the configuration file as written.
type File struct {
	Store     string `yaml:"store"`
	SecretEnv string `yaml:"secret_env"`
	// TokenLedger is a SQLite file recording spent continuation tokens when
	// the store is memory (other stores keep the ledger themselves).
	TokenLedger string                 `yaml:"token_ledger"`
	Auth        *AuthConfig            `yaml:"auth"`
	Models      map[string]ModelConfig `yaml:"models"`
	Tools       map[string]ToolConfig  `yaml:"tools"`
	Agents      map[string]AgentConfig `yaml:"agents"`
	// MCPServers are MCP servers whose tools agents may use (server.tool,
	// or server.* for all of them); see docs/mcp.md.
	MCPServers map[string]MCPServerConfig `yaml:"mcp_servers"`
	// Lease is how long a process owns a running turn without renewing it
	// (default 15s); other processes sharing the store take over after it.
	Lease string `yaml:"lease"`
	// ShutdownGrace is how long SIGTERM lets running turns finish before
	// they are handed over to another process (default 30s).
	ShutdownGrace string `yaml:"shutdown_grace"`
	// PublicURL is how people reach the server (https://cairn.example.org):
	// action links in webhooks and inbox links are built from it.
	PublicURL string `yaml:"public_url"`
	// AllowedHosts are Host names a server without auth answers to besides
	// loopback names and public_url's host (docs/web.md).
	AllowedHosts []string `yaml:"allowed_hosts"`
	// AllowedOrigins are web origins besides the server's own that may
	// send state-changing requests (docs/web.md).
	AllowedOrigins []string `yaml:"allowed_origins"`
	// Webhooks are told about interrupts and ended turns; see docs/webhooks.md.
	Webhooks []WebhookConfig `yaml:"webhooks"`
	// Driver runs the turns: local (default: the serving process) or
	// temporal (workflows on a Temporal cluster); see docs/temporal.md.
	Driver string `yaml:"driver"`
	// Temporal is the cluster of driver: temporal.
	Temporal *TemporalConfig `yaml:"temporal"`
}

// TemporalConfig is how to reach a Temporal cluster.
type TemporalConfig struct {
	HostPort  string `yaml:"host_port"`  // default 127.0.0.1:7233
	Namespace string `yaml:"namespace"`  // default "default"
	TaskQueue string `yaml:"task_queue"` // default "cairn"
	// TLS: client certificate and key files, the CA that signed the
	// server's certificate, and the name to check it against (all optional).
	TLS *TemporalTLSConfig `yaml:"tls"`
	// APIKeyEnv names the variable holding a Temporal Cloud API key.
	APIKeyEnv string `yaml:"api_key_env"`
	// Heartbeat is how soon a worker that died mid-call is noticed
	// (default 10s): its tool calls then become in-doubt approvals.
	Heartbeat string `yaml:"heartbeat"`
	// MaxHistory is how many history events a session's workflow run may
	// reach before it continues as new from a snapshot, once it waits for
	// a person (default 10000).
	MaxHistory int `yaml:"max_history"`
}

// TemporalTLSConfig is the TLS of the connection to Temporal.
type TemporalTLSConfig struct {
	CertFile   string `yaml:"cert_file"`
	KeyFile    string `yaml:"key_file"`
	CAFile     string `yaml:"ca_file"`
	ServerName string `yaml:"server_name"`
}

// WebhookConfig is one webhook endpoint.
type WebhookConfig struct {
	// Name identifies it in the outbox and the audit trail (default: url).
	Name string `yaml:"name"`
	URL  string `yaml:"url"`
	// SecretEnv names the environment variable holding the signing secret
	// (whsec_ followed by base64).
	SecretEnv string `yaml:"secret_env"`
	// Events it hears (default: all).
	Events []string `yaml:"events"`
	// Timeout bounds one delivery attempt (default 10s).
	Timeout string `yaml:"timeout"`
}

// MCPServerConfig is one MCP server: a command speaking MCP on stdio, or
// the URL of a streamable HTTP endpoint. ${VAR} in env and headers values
// is replaced by the environment variable.
type MCPServerConfig struct {
	Command []string          `yaml:"command"`
	Env     map[string]string `yaml:"env"`
	URL     string            `yaml:"url"`
	Headers map[string]string `yaml:"headers"`
}

// AuthConfig lists the bearer tokens the server accepts.
type AuthConfig struct {
	Tokens []TokenConfig `yaml:"tokens"`
}

// TokenConfig is one bearer token, read from an environment variable.
type TokenConfig struct {
	Name     string `yaml:"name"`
	TokenEnv string `yaml:"token_env"`
	Role     string `yaml:"role"`
}

// ModelConfig is one entry of models.
type ModelConfig struct {
	Provider  string `yaml:"provider"`
	Model     string `yaml:"model"`
	BaseURL   string `yaml:"base_url"`
	APIKeyEnv string `yaml:"api_key_env"`
	// Stream selects the streaming API (text deltas reach event subscribers).
	Stream bool `yaml:"stream"`
	// MaxRetries bounds retries of 429, 5xx and connection errors (nil: 3).
	MaxRetries *int `yaml:"max_retries"`
	// MaxTokens bounds each response (anthropic; default 4096).
	MaxTokens int64 `yaml:"max_tokens"`
	// Timeout bounds a whole call, retries included (default 10m).
	Timeout string `yaml:"timeout"`
	// IdleTimeout ends an attempt silent for so long (default 60s).
	IdleTimeout string `yaml:"idle_timeout"`
	// MaxReplyBytes bounds a reply: 8MiB (default), 512KiB, 1000000.
	MaxReplyBytes string `yaml:"max_reply_bytes"`
	// Script is the scripted provider's replies, played again at every
	// user message.
	Script []ScriptReply `yaml:"script"`
	// Scripts are the scripted provider's per-agent scripts, which go on
	// across the user's messages (a text reply ends a turn).
	Scripts map[string][]ScriptReply `yaml:"scripts"`
}

// ScriptReply is one reply of a scripted model.
type ScriptReply struct {
	Text      string       `yaml:"text"`
	ToolCalls []ScriptCall `yaml:"tool_calls"`
}

// ScriptCall is one tool call of a scripted reply.
type ScriptCall struct {
	ID        string `yaml:"id"`
	Name      string `yaml:"name"`
	Arguments any    `yaml:"arguments"`
}

// ToolConfig is one entry of tools.
type ToolConfig struct {
	Description  string         `yaml:"description"`
	Parameters   map[string]any `yaml:"parameters"`
	Command      []string       `yaml:"command"`
	Timeout      string         `yaml:"timeout"`
	Approval     string         `yaml:"approval"`
	Confirmation string         `yaml:"confirmation"`
	ApprovalTTL  string         `yaml:"approval_ttl"`
	Idempotent   bool           `yaml:"idempotent"`
	Builtin      string         `yaml:"builtin"`
}

// AgentConfig is one entry of agents.
type AgentConfig struct {
	Model         string           `yaml:"model"`
	Instructions  string           `yaml:"instructions"`
	Tools         []string         `yaml:"tools"`
	Subagents     []SubagentConfig `yaml:"subagents"`
	Handoffs      []HandoffConfig  `yaml:"handoffs"`
	MaxIterations int              `yaml:"max_iterations"`
}

// HandoffConfig lets an agent hand the conversation over to another agent:
// its name alone (handoffs: [billing]) or {agent, approval, confirmation}
// to have a person confirm the transfer.
type HandoffConfig struct {
	Agent        string `yaml:"agent"`
	Approval     string `yaml:"approval"`
	Confirmation string `yaml:"confirmation"`
}

// UnmarshalYAML accepts the agent's name as a plain string.
func (h *HandoffConfig) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		return n.Decode(&h.Agent)
	}
	if n.Kind == yaml.MappingNode {
		known := yamlFields(reflect.TypeFor[HandoffConfig]())
		for i := 0; i < len(n.Content); i += 2 {
			if _, ok := known[n.Content[i].Value]; !ok {
				return fmt.Errorf("line %d: unknown field %q", n.Content[i].Line, n.Content[i].Value) // explained by explain
			}
		}
	}
	type plain HandoffConfig
	return n.Decode((*plain)(h))
}

// SubagentConfig offers another agent to an agent as a tool.
type SubagentConfig struct {
	Agent        string `yaml:"agent"`
	Tool         string `yaml:"tool"`
	Description  string `yaml:"description"`
	Mode         string `yaml:"mode"` // tool (default) | interactive
	Approval     string `yaml:"approval"`
	Confirmation string `yaml:"confirmation"`
}

// Config is a loaded, checked configuration, ready to run.
type Config struct {
	// Path is the file it came from; Dir is its directory, the working
	// directory of command tools and the base of a relative SQLite path.
	Path, Dir string
	// Store is the store URL: "memory:", "sqlite:/abs/path" or "postgres://…"
	// (with ${VARS} expanded from the environment).
	Store  string
	Agents []*cairn.Agent
	// Tokens are the bearer tokens of the auth section; empty without one.
	Tokens []Token
	// ContinuationKeys come from the variable named by secret_env (keys
	// separated by commas; the first signs). Empty: generate and store one.
	ContinuationKeys [][]byte
	// TokenLedger is the absolute path of the SQLite file recording spent
	// continuation tokens with store: memory; empty otherwise.
	TokenLedger string
	// Scripted lists the models that are scripted (for the demo banner).
	Scripted []string
	// Lease is the turn lease (0: cairn.DefaultLease).
	Lease time.Duration
	// ShutdownGrace is how long a stop lets running turns finish.
	ShutdownGrace time.Duration
	// MCPServers are the file's MCP servers; Connect starts them.
	MCPServers []mcptools.Server
	// MCP holds the connections to the file's MCP servers once Connect
	// started them (nil: none); Close ends them.
	MCP *mcptools.Hub
	// connect is what Connect does; nil when done or nothing to do.
	connect func(ctx context.Context) error
	// PublicURL is public_url, without a trailing slash; empty when unset.
	PublicURL string
	// AllowedHosts and AllowedOrigins are allowed_hosts and allowed_origins
	// (see server.Options).
	AllowedHosts, AllowedOrigins []string
	// Webhooks are the webhooks section, secrets read (see
	// cairn.RunnerOptions.Webhooks); they need PublicURL.
	Webhooks []cairn.Webhook
	// Temporal is set with driver: temporal (defaults filled in, relative
	// TLS paths made absolute, the API key read); nil with the local driver.
	Temporal *Temporal
}

// Temporal is the resolved temporal section.
type Temporal struct {
	HostPort, Namespace, TaskQueue string
	// CertFile, KeyFile, CAFile, ServerName: TLS, when CertFile or CAFile is set.
	CertFile, KeyFile, CAFile, ServerName string
	APIKey                                string
	Heartbeat                             time.Duration
	MaxHistory                            int
}

// Close stops what the config started: the MCP servers.
func (c *Config) Close() error {
	if c.MCP != nil {
		return c.MCP.Close()
	}
	return nil
}

// Error is a configuration error at a key path.
type Error struct {
	File string
	Line int    // 0 when unknown
	Path string // key path, e.g. tools.deploy_code.approval
	Msg  string
}

// Error formats the error as file:line: key.path: problem.
func (e *Error) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc = fmt.Sprintf("%s:%d", e.File, e.Line)
	}
	if e.Path == "" {
		return fmt.Sprintf("%s: %s", loc, e.Msg)
	}
	return fmt.Sprintf("%s: %s: %s", loc, e.Path, e.Msg)
}

// Env looks up environment variables; os.LookupEnv in production.
type Env func(name string) (string, bool)

// Load reads and checks the configuration file at path.
func Load(path string) (*Config, error) {
	return LoadWithEnv(path, os.LookupEnv)
}

// LoadWithEnv is Load with an explicit environment.
func LoadWithEnv(path string, env Env) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return Parse(abs, data, env)
}

// Parse checks configuration text; path is used in errors and to resolve
// relative paths.
func Parse(path string, data []byte, env Env) (*Config, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, &Error{File: path, Msg: "not valid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	var f File
	l := &loader{path: path, dir: filepath.Dir(path), root: &root, env: env}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		if e := l.explain(&root, reflect.TypeOf(f), ""); e != nil {
			e.Msg += " (see docs/config.md)"
			return nil, e
		}
		return nil, &Error{File: path, Msg: strings.TrimPrefix(err.Error(), "yaml: ") + " (see docs/config.md for the keys)"}
	}
	return l.load(&f)
}

type loader struct {
	path string
	dir  string
	root *yaml.Node
	env  Env
	// agents are the file's agents, for checking references to them.
	agents map[string]AgentConfig
	// hub holds the file's MCP servers, and mcpTools their tools' overrides.
	hub      *mcptools.Hub
	mcpTools map[string]ToolConfig
	servers  []mcptools.Server
}

func (l *loader) errf(keyPath, format string, args ...any) error {
	return &Error{File: l.path, Line: l.line(keyPath), Path: keyPath, Msg: fmt.Sprintf(format, args...)}
}

// line finds the line of a dotted key path in the YAML tree (0 if absent).
func (l *loader) line(keyPath string) int {
	n := l.root
	if n == nil || len(n.Content) == 0 {
		return 0
	}
	n = n.Content[0]
	line := 0
	for _, key := range strings.Split(keyPath, ".") {
		if n.Kind != yaml.MappingNode {
			return line
		}
		found := false
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				line = n.Content[i].Line
				n = n.Content[i+1]
				found = true
				break
			}
		}
		if !found {
			return line
		}
	}
	return line
}

var toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func (l *loader) load(f *File) (_ *Config, err error) {
	cfg := &Config{Path: l.path, Dir: l.dir}
	if err := l.server(f, cfg); err != nil {
		return nil, err
	}
	if len(f.Agents) == 0 {
		return nil, l.errf("agents", "no agents are defined; add at least one under agents:")
	}
	l.agents = f.Agents
	models := map[string]model.Model{}
	for _, name := range sortedKeys(f.Models) {
		m, err := l.model("models."+name, f.Models[name])
		if err != nil {
			return nil, err
		}
		models[name] = m
		if f.Models[name].Provider == "scripted" {
			cfg.Scripted = append(cfg.Scripted, name)
		}
	}
	tools := map[string]*cairn.Tool{}
	for _, name := range sortedKeys(f.Tools) {
		if strings.Contains(name, ".") {
			continue // an MCP tool's overrides: read with its server
		}
		t, err := l.tool(name, f.Tools[name])
		if err != nil {
			return nil, err
		}
		tools[name] = t
	}
	if err := l.mcpServers(f); err != nil {
		return nil, err
	}
	var slots [][]toolSlot
	for _, name := range sortedKeys(f.Agents) {
		agent, s, err := l.agent(name, f, models, tools)
		if err != nil {
			return nil, err
		}
		cfg.Agents, slots = append(cfg.Agents, agent), append(slots, s)
	}
	if len(l.servers) == 0 {
		for i, a := range cfg.Agents {
			if a.Tools, _, err = l.assemble(a.Name, slots[i], f); err != nil {
				return nil, err
			}
		}
		return cfg, nil
	}
	// The agents' MCP tools come from the servers, which Connect starts.
	cfg.MCPServers = l.servers
	agents := cfg.Agents
	cfg.Agents = nil
	cfg.connect = func(ctx context.Context) error {
		hub, err := l.connectMCP(ctx)
		if err != nil {
			return err
		}
		l.hub = hub
		for i, a := range agents {
			if a.Tools, a.Toolsets, err = l.assemble(a.Name, slots[i], f); err != nil {
				hub.Close()
				return err
			}
		}
		cfg.MCP, cfg.Agents = hub, agents
		return nil
	}
	return cfg, nil
}

// Connect starts the file's MCP servers and completes the agents with
// their tools (Agents is empty until then when the file has mcp_servers;
// without any, Connect does nothing). Close stops the servers. An MCP tool
// an agent or an override names that its server does not list is an error
// at its key path.
func (c *Config) Connect(ctx context.Context) error {
	if c.connect == nil {
		return nil
	}
	connect := c.connect
	c.connect = nil
	return connect(ctx)
}

// toolSlot is one entry of an agent's tools, in the file's order: a tool
// built from the file, or a reference to an MCP server's tool (server.tool
// or server.*), resolved once the server runs.
type toolSlot struct {
	tool *cairn.Tool
	key  string // agents.NAME.tools, for errors
	i    int
	ref  string
}

// assemble resolves an agent's slots into its tools and toolsets, each
// tool once.
func (l *loader) assemble(agent string, slots []toolSlot, f *File) ([]*cairn.Tool, []cairn.Toolset, error) {
	var tools []*cairn.Tool
	var sets []cairn.Toolset
	seen := map[string]bool{}
	add := func(key, name string, t *cairn.Tool) error {
		if seen[t.Name] {
			return l.errf(key, "tool %q is listed twice", name)
		}
		seen[t.Name] = true
		tools = append(tools, t)
		return nil
	}
	for _, s := range slots {
		if s.ref == "" {
			if err := add("agents."+agent+".tools", s.tool.Name, s.tool); err != nil {
				return nil, nil, err
			}
			continue
		}
		ts, set, err := l.mcpRef(s.key, s.i, s.ref, f)
		if err != nil {
			return nil, nil, err
		}
		if set != nil {
			server, _, _ := strings.Cut(s.ref, ".")
			if seen[server+".*"] {
				return nil, nil, l.errf(s.key, "tool %q is listed twice", s.ref)
			}
			seen[server+".*"] = true
			sets = append(sets, set)
			for _, t := range set.Tools() {
				seen[t.Name] = true
			}
			continue
		}
		for _, t := range ts {
			if err := add(s.key, s.ref, t); err != nil {
				return nil, nil, err
			}
		}
	}
	return tools, sets, nil
}

// server reads the settings of the process: keys, auth, store, lease.
func (l *loader) server(f *File, cfg *Config) error {
	var err error
	if cfg.ContinuationKeys, err = l.keys(f.SecretEnv); err != nil {
		return err
	}
	if f.Auth != nil {
		if cfg.Tokens, err = l.tokens(f.Auth); err != nil {
			return err
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
	if cfg.Webhooks, err = l.webhooks(f); err != nil {
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
		return nil, l.errf("driver", "%q is not local or temporal%s", f.Driver, didYouMean(f.Driver, []string{"local", "temporal"}))
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
func (l *loader) webhooks(f *File) ([]cairn.Webhook, error) {
	if len(f.Webhooks) > 0 && f.PublicURL == "" {
		return nil, l.errf("webhooks", "webhooks need public_url, the address people reach this server at: their action links are built from it (public_url: https://cairn.example.org)")
	}
	var out []cairn.Webhook
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
				return nil, l.errf("webhooks", "%s.events[%d]: %q is not one of %s%s", key, j, ev, strings.Join(webhook.EventTypes(), ", "), didYouMean(ev, webhook.EventTypes()))
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
		out = append(out, cairn.Webhook{Name: name, URL: w.URL, Secret: secret, Events: w.Events, Timeout: timeout})
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

// agent builds one agent: its model, its tools, sub-agents and handoffs.
func (l *loader) agent(name string, f *File, models map[string]model.Model, tools map[string]*cairn.Tool) (*cairn.Agent, []toolSlot, error) {
	a, p := f.Agents[name], "agents."+name
	if a.Model == "" {
		return nil, nil, l.errf(p+".model", "missing; name one of the models: %s", strings.Join(sortedKeys(f.Models), ", "))
	}
	m := models[a.Model]
	if m == nil {
		return nil, nil, l.errf(p+".model", "unknown model %q; defined models: %s%s", a.Model, strings.Join(sortedKeys(f.Models), ", "), didYouMean(a.Model, sortedKeys(f.Models)))
	}
	if a.MaxIterations < 0 {
		return nil, nil, l.errf(p+".max_iterations", "must be positive, got %d", a.MaxIterations)
	}
	agent := &cairn.Agent{Name: name, Instructions: a.Instructions, Model: m, MaxIterations: a.MaxIterations}
	var slots []toolSlot
	seen := map[string]bool{}
	for i, tn := range a.Tools {
		if strings.Contains(tn, ".") {
			server, tool, _ := strings.Cut(tn, ".")
			if _, ok := f.MCPServers[server]; !ok {
				names := sortedKeys(f.MCPServers)
				return nil, nil, l.errf(p+".tools", "tools[%d]: %q: no MCP server %q; configured: %s%s", i, tn, server, strings.Join(names, ", "), didYouMean(server, names))
			}
			if tool != "*" {
				if _, err := l.mcpOverride(tn); err != nil {
					return nil, nil, err
				}
			}
			slots = append(slots, toolSlot{key: p + ".tools", i: i, ref: tn})
			continue
		}
		t := tools[tn]
		if t == nil {
			return nil, nil, l.errf(p+".tools", "tools[%d]: unknown tool %q; defined tools: %s%s", i, tn, strings.Join(sortedKeys(f.Tools), ", "), didYouMean(tn, sortedKeys(f.Tools)))
		}
		if seen[tn] {
			return nil, nil, l.errf(p+".tools", "tool %q is listed twice", tn)
		}
		seen[tn] = true
		slots = append(slots, toolSlot{tool: t})
	}
	for i, sa := range a.Subagents {
		t, err := l.subagent(p, i, sa, seen)
		if err != nil {
			return nil, nil, err
		}
		slots = append(slots, toolSlot{tool: t})
	}
	for i, h := range a.Handoffs {
		t, err := l.handoff(p, name, i, h, seen)
		if err != nil {
			return nil, nil, err
		}
		slots = append(slots, toolSlot{tool: t})
	}
	return agent, slots, nil
}

// subagent builds the tool that offers another agent (subagents[i] of p).
func (l *loader) subagent(p string, i int, sa SubagentConfig, seen map[string]bool) (*cairn.Tool, error) {
	if err := l.otherAgent(p+".subagents", fmt.Sprintf("subagents[%d].agent", i), sa.Agent, ""); err != nil {
		return nil, err
	}
	name := sa.Tool
	if name == "" {
		name = "ask_" + sa.Agent
	}
	if !toolName.MatchString(name) || seen[name] {
		return nil, l.errf(p+".subagents", "subagents[%d].tool: %q is not a free tool name (1–64 letters, digits, _ or -, not used twice)", i, name)
	}
	seen[name] = true
	pol, err := approvalPolicy(sa.Approval)
	if err != nil {
		return nil, l.errf(p+".subagents", "subagents[%d].approval: %v", i, err)
	}
	spec := &cairn.Tool{Name: name, Description: sa.Description, Approval: pol, Confirmation: sa.Confirmation}
	switch sa.Mode {
	case "", "tool":
		return cairn.AgentTool(sa.Agent, spec), nil
	case "interactive":
		return cairn.InteractiveAgentTool(sa.Agent, spec), nil
	}
	return nil, l.errf(p+".subagents", "subagents[%d].mode: %q is not tool or interactive%s", i, sa.Mode, didYouMean(sa.Mode, []string{"tool", "interactive"}))
}

// handoff builds the transfer_to_<agent> tool of handoffs[i] of agent self.
func (l *loader) handoff(p, self string, i int, h HandoffConfig, seen map[string]bool) (*cairn.Tool, error) {
	if err := l.otherAgent(p+".handoffs", fmt.Sprintf("handoffs[%d]", i), h.Agent, self); err != nil {
		return nil, err
	}
	pol, err := approvalPolicy(h.Approval)
	if err != nil {
		return nil, l.errf(p+".handoffs", "handoffs[%d].approval: %v", i, err)
	}
	t := cairn.Handoff(h.Agent, &cairn.Tool{Approval: pol, Confirmation: h.Confirmation})
	if seen[t.Name] {
		return nil, l.errf(p+".handoffs", "handoffs[%d]: %q is listed twice", i, h.Agent)
	}
	seen[t.Name] = true
	return t, nil
}

// otherAgent checks that agent names a defined agent other than self.
func (l *loader) otherAgent(key, what, agent, self string) error {
	names := sortedKeys(l.agents)
	if _, ok := l.agents[agent]; !ok {
		return l.errf(key, "%s: unknown agent %q; defined agents: %s%s", what, agent, strings.Join(names, ", "), didYouMean(agent, names))
	}
	if agent == self {
		return l.errf(key, "%s: %q is the agent itself; name another agent", what, agent)
	}
	return nil
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
}

func (l *loader) tokens(a *AuthConfig) ([]Token, error) {
	if len(a.Tokens) == 0 {
		return nil, l.errf("auth.tokens", "list at least one token, or remove auth (the server then listens on loopback only)")
	}
	var out []Token
	names, secrets := map[string]bool{}, map[string]bool{}
	for i, t := range a.Tokens {
		switch t.Role {
		case "user", "approver", "admin":
		default:
			return nil, l.errf("auth.tokens", "tokens[%d].role: %q is not one of user, approver, admin%s", i, t.Role, didYouMean(t.Role, []string{"user", "approver", "admin"}))
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
		out = append(out, Token{Name: name, Secret: secret, Role: t.Role})
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

// scripted builds a scripted model from script (every turn) and scripts
// (per agent, across turns); the agents named must exist.
func (l *loader) scripted(p string, mc ModelConfig) (model.Model, error) {
	replies, err := l.scriptReplies(p+".script", mc.Script)
	if err != nil {
		return nil, err
	}
	m := scripted.New(replies...)
	m.Stream = mc.Stream
	if m.Bounds, err = l.modelLimits(p, mc); err != nil {
		return nil, err
	}
	for _, agent := range sortedKeys(mc.Scripts) {
		if _, ok := l.agents[agent]; !ok {
			return nil, l.errf(p+".scripts."+agent, "unknown agent %q; defined agents: %s%s", agent, strings.Join(sortedKeys(l.agents), ", "), didYouMean(agent, sortedKeys(l.agents)))
		}
		rs, err := l.scriptReplies(p+".scripts."+agent, mc.Scripts[agent])
		if err != nil {
			return nil, err
		}
		if len(rs) == 0 {
			return nil, l.errf(p+".scripts."+agent, "the script is empty: list the agent's replies ({text: …} or {tool_calls: […]})")
		}
		if m.Scripts == nil {
			m.Scripts = map[string][]scripted.Reply{}
		}
		m.Scripts[agent] = rs
	}
	if len(replies) == 0 && len(m.Scripts) == 0 {
		return nil, l.errf(p+".script", "a scripted model needs a script: a list of replies ({text: …} or {tool_calls: […]}), or scripts: per agent")
	}
	return m, nil
}

func (l *loader) scriptReplies(key string, script []ScriptReply) ([]scripted.Reply, error) {
	var replies []scripted.Reply
	for i, r := range script {
		rep := scripted.Reply{Text: r.Text}
		for j, c := range r.ToolCalls {
			args := "{}"
			switch a := c.Arguments.(type) {
			case nil:
			case string:
				args = a
			default:
				b, err := json.Marshal(a)
				if err != nil {
					return nil, l.errf(key, "[%d].tool_calls[%d].arguments: %v", i, j, err)
				}
				args = string(b)
			}
			if c.Name == "" {
				return nil, l.errf(key, "[%d].tool_calls[%d]: name is missing", i, j)
			}
			rep.ToolCalls = append(rep.ToolCalls, scripted.Call{ID: c.ID, Name: c.Name, Arguments: args})
		}
		replies = append(replies, rep)
	}
	return replies, nil
}

func (l *loader) model(p string, mc ModelConfig) (model.Model, error) {
	switch mc.Provider {
	case "scripted":
		return l.scripted(p, mc)
	case "openai", "anthropic":
		if mc.Model == "" {
			return nil, l.errf(p+".model", "missing; name the model, e.g. gpt-4o-mini, claude-sonnet-4-5 (or llama3.1 on Ollama)")
		}
		keyEnv := mc.APIKeyEnv
		if keyEnv == "" && mc.BaseURL == "" {
			// The providers themselves always need a key.
			keyEnv = map[string]string{"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}[mc.Provider]
		}
		key := ""
		if keyEnv != "" {
			v, ok := l.env(keyEnv)
			if !ok || v == "" {
				return nil, l.errf(p+".api_key_env", "environment variable %s is not set; export %s=… (or, for a local compatible server, set base_url and drop api_key_env)", keyEnv, keyEnv)
			}
			key = v
		}
		if mc.MaxRetries != nil && (*mc.MaxRetries < 0 || *mc.MaxRetries > 10) {
			return nil, l.errf(p+".max_retries", "%d is not between 0 and 10", *mc.MaxRetries)
		}
		limits, err := l.modelLimits(p, mc)
		if err != nil {
			return nil, err
		}
		if mc.Provider == "anthropic" {
			if mc.MaxTokens < 0 {
				return nil, l.errf(p+".max_tokens", "must be positive")
			}
			return anthropic.New(mc.Model, &anthropic.Options{BaseURL: mc.BaseURL, APIKey: key, Stream: mc.Stream, MaxRetries: mc.MaxRetries, MaxTokens: mc.MaxTokens, Limits: limits}), nil
		}
		return openai.New(mc.Model, &openai.Options{BaseURL: mc.BaseURL, APIKey: key, Stream: mc.Stream, MaxRetries: mc.MaxRetries, Limits: limits}), nil
	case "":
		return nil, l.errf(p+".provider", "missing; one of openai, anthropic, scripted")
	}
	return nil, l.errf(p+".provider", "unknown provider %q; one of openai, anthropic, scripted%s", mc.Provider, didYouMean(mc.Provider, []string{"openai", "anthropic", "scripted"}))
}

// modelLimits reads a model's timeout, idle_timeout and max_reply_bytes.
func (l *loader) modelLimits(p string, mc ModelConfig) (model.Limits, error) {
	var lim model.Limits
	var err error
	if lim.Timeout, err = l.duration(p+".timeout", mc.Timeout, 0); err != nil {
		return lim, err
	}
	if lim.IdleTimeout, err = l.duration(p+".idle_timeout", mc.IdleTimeout, 0); err != nil {
		return lim, err
	}
	if mc.MaxReplyBytes != "" {
		if lim.MaxReplyBytes, err = parseBytes(mc.MaxReplyBytes); err != nil {
			return lim, l.errf(p+".max_reply_bytes", "%v", err)
		}
	}
	return lim, nil
}

// parseBytes reads a size: a whole number of bytes, or one with a unit
// B, KiB, MiB, GiB (powers of 1024) or KB, MB, GB (of 1000).
func parseBytes(v string) (int64, error) {
	s := strings.TrimSpace(v)
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	units := map[string]int64{"": 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "KB": 1e3, "MB": 1e6, "GB": 1e9}
	unit, ok := units[strings.TrimSpace(s[i:])]
	n, err := strconv.ParseInt(s[:i], 10, 64)
	if !ok || err != nil || n <= 0 || n > (1<<40)/unit {
		return 0, fmt.Errorf("%q is not a size like 8MiB, 512KiB or 1000000 (bytes; units B, KiB, MiB, GiB, KB, MB, GB)", v)
	}
	return n * unit, nil
}

func (l *loader) tool(name string, tc ToolConfig) (*cairn.Tool, error) {
	p := "tools." + name
	if !toolName.MatchString(name) {
		return nil, l.errf(p, "tool names are 1–64 letters, digits, _ or -")
	}
	if tc.Builtin != "" && len(tc.Command) > 0 {
		return nil, l.errf(p+".command", "a builtin tool has no command")
	}
	switch tc.Builtin {
	case "":
	case "ask_user":
		return cairn.AskUser(name), nil
	case "echo":
	default:
		return nil, l.errf(p+".builtin", "unknown built-in %q; the built-ins are: ask_user, echo", tc.Builtin)
	}
	if len(tc.Command) == 0 && tc.Builtin == "" {
		return nil, l.errf(p+".command", "missing; give the argv to run, e.g. [\"./deploy.sh\"] (arguments JSON on stdin, stdout is the result)")
	}
	t := &cairn.Tool{Name: name, Description: tc.Description, Confirmation: tc.Confirmation, Idempotent: tc.Idempotent}
	params := tc.Parameters
	if params == nil {
		params = map[string]any{"type": "object", "properties": map[string]any{}}
	}
	b, err := json.Marshal(params)
	if err != nil {
		return nil, l.errf(p+".parameters", "%v", err)
	}
	if err := cairn.CheckSchema(b); err != nil {
		return nil, l.errf(p+".parameters", "not a valid JSON Schema: %v", err)
	}
	t.Parameters = b
	if tc.Timeout != "" {
		d, err := time.ParseDuration(tc.Timeout)
		if err != nil || d <= 0 {
			return nil, l.errf(p+".timeout", "%q is not a positive duration like 30s or 2m", tc.Timeout)
		}
		t.Timeout = d
	}
	if tc.ApprovalTTL != "" {
		d, err := time.ParseDuration(tc.ApprovalTTL)
		if err != nil || d <= 0 {
			return nil, l.errf(p+".approval_ttl", "%q is not a positive duration like 15m or 1h", tc.ApprovalTTL)
		}
		t.ApprovalTTL = d
	}
	if tc.Confirmation != "" {
		if _, err := template.New(name).Parse(tc.Confirmation); err != nil {
			return nil, l.errf(p+".confirmation", "not a valid Go template: %v", err)
		}
	}
	if t.Approval, err = approvalPolicy(tc.Approval); err != nil {
		return nil, l.errf(p+".approval", "%v", err)
	}
	if tc.Builtin == "echo" {
		// Answers with its arguments, in process: for demos and load tests
		// that should measure Cairn, not a forked command.
		t.Handler = func(ctx context.Context, args json.RawMessage) (string, error) { return string(args), nil }
	} else {
		t.Handler = command.Tool(name, tc.Command, l.dir)
	}
	return t, nil
}

// approvalPolicy parses never (or empty), always, or a CEL expression,
// described by the key's own text.
func approvalPolicy(s string) (cairn.Policy, error) {
	switch a := strings.TrimSpace(s); a {
	case "", "never":
		return cairn.Never(), nil
	case "always":
		return cairn.Always(), nil
	default:
		pol, err := celPolicy(a)
		if err != nil {
			return cairn.Policy{}, fmt.Errorf("not never, always or a valid CEL expression over args: %w", err)
		}
		return pol, nil
	}
}

// celPolicy compiles a CEL expression over `args` (the decoded arguments) to
// an approval policy. It is compiled once, here.
func celPolicy(expr string) (cairn.Policy, error) {
	env, err := cel.NewEnv(cel.Variable("args", cel.MapType(cel.StringType, cel.DynType)))
	if err != nil {
		return cairn.Policy{}, err
	}
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		return cairn.Policy{}, iss.Err()
	}
	if ast.OutputType() != cel.BoolType {
		return cairn.Policy{}, fmt.Errorf("the expression gives %s, not bool", ast.OutputType())
	}
	prg, err := env.Program(ast)
	if err != nil {
		return cairn.Policy{}, err
	}
	return cairn.PolicyFunc(expr, func(raw json.RawMessage) (bool, error) {
		var args map[string]any
		if err := json.Unmarshal(raw, &args); err != nil {
			return false, err
		}
		out, _, err := prg.Eval(map[string]any{"args": args})
		if err != nil {
			return false, fmt.Errorf("approval expression %q: %w", expr, err)
		}
		b, ok := out.Value().(bool)
		if !ok {
			return false, fmt.Errorf("approval expression %q gave %v, not a bool", expr, out.Value())
		}
		return b, nil
	}), nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
