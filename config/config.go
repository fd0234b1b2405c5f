// Package config loads Cairn's YAML configuration file (docs/config.md):
// models, tools (command tools with approval policies in CEL), agents and the
// store. Every error names the file, the line, the key path and the problem.
// Load reads and checks; it starts no process and dials nothing. With
// mcp_servers, Config.Connect starts them and completes the agents.
package config

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/a2a/a2aagent"
	"github.com/cairnhq/cairn/audit"
	"github.com/cairnhq/cairn/mcp/mcptools"
	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/webhook"
)

// Audit is the audit section, read: who signs checkpoints and which
// public keys verifications trust.
type Audit struct {
	// Sign is audit.sign: by default true, but for a memory store.
	Sign bool
	// Key is the key of signing_key_env; nil: the store's own
	// (audit.StoreKey), which the runtime gets from the store.
	Key *audit.Key
	// Keys are the public keys `cairn audit verify` trusts: Key's and
	// public_keys (the store's own is added by whoever opens the store,
	// when Key is nil).
	Keys audit.Keys
	// CheckpointEvery is checkpoint_every (0: the default).
	CheckpointEvery int
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
	// AdminOverride is auth.admin_override (cairn.RunnerOptions.AdminOverride).
	AdminOverride bool
	// Suggestions is the suggestions section (cairn.RunnerOptions.Suggestions).
	Suggestions cairn.SuggestionPolicy
	// OIDC is auth.oidc, checked (nil without it).
	OIDC *OIDC
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
	// Retention and RetentionSweep are the retention section (see
	// cairn.RunnerOptions.Retention); nil keeps every session.
	Retention      map[cairn.Status]time.Duration
	RetentionSweep time.Duration
	// TombstoneRetention is retention.tombstones (0: the default).
	TombstoneRetention time.Duration
	// Audit is the audit section, keys read.
	Audit Audit
	// Gateway is the gateway section (nil without one); its agent,
	// GatewayAgent, is among Agents once Connect started the servers.
	Gateway *Gateway
	// A2A are the agents served over A2A (a2a.agents), checked.
	A2A []string
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
	Webhooks []webhook.Subscription
	// Temporal is set with driver: temporal (defaults filled in, relative
	// TLS paths made absolute, the API key read); nil with the local driver.
	Temporal *Temporal
	// commands and endpoints are what Preflight checks: the argv of command
	// tools and MCP servers, and the models' base URLs, by key path.
	commands  []keyed[[]string]
	endpoints []keyed[string]
	// warnings are the loader's (see Preflight).
	warnings []string
}

// Gateway is the gateway section, read.
type Gateway struct {
	// Servers are the MCP servers whose tools it offers.
	Servers []string
	// Hold is how long a call is held open for a person (DefaultHold).
	Hold time.Duration
	// AllSessions: every call is a session, not only those that ask.
	AllSessions bool
}

// GatewayAgent is the name of the gateway's direct agent: each call it
// holds for a person is a session of it.
const GatewayAgent = "gateway"

// DefaultHold is gateway.hold when unset.
const DefaultHold = 10 * time.Minute

// keyed is a value of the file with its key path, for messages.
type keyed[T any] struct {
	path string
	v    T
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
		return nil, &Error{File: path, Msg: "not valid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ") + tabHint(data, err)}
	}
	var f File
	l := &loader{path: path, dir: filepath.Dir(path), root: &root, env: env}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		var errs []*Error
		l.explain(&root, reflect.TypeOf(f), "", &errs)
		switch len(errs) {
		case 0:
		case 1:
			errs[0].Msg += " (see docs/config.md)"
			return nil, errs[0]
		default:
			errs[len(errs)-1].Msg += " (see docs/config.md)"
			return nil, Errors(errs)
		}
		return nil, &Error{File: path, Msg: strings.TrimPrefix(err.Error(), "yaml: ") + " (see docs/config.md for the keys)"}
	}
	return l.load(&f)
}

// tabHint names the tab when the line a YAML error points at is indented
// with one (the parser says only that a character "cannot start any
// token"): YAML indents with spaces only.
func tabHint(data []byte, err error) string {
	var line int
	if _, scanErr := fmt.Sscanf(strings.TrimPrefix(err.Error(), "yaml: "), "line %d:", &line); scanErr != nil || line < 1 {
		return ""
	}
	lines := strings.Split(string(data), "\n")
	if line > len(lines) {
		return ""
	}
	text := lines[line-1]
	indent := text[:len(text)-len(strings.TrimLeft(text, " \t"))]
	if !strings.Contains(indent, "\t") {
		return ""
	}
	return fmt.Sprintf("; line %d is indented with a tab: YAML indents with spaces only, so replace the tab with spaces", line)
}

type loader struct {
	path string
	dir  string
	root *yaml.Node
	env  Env
	// agents are the file's agents, for checking references to them.
	agents map[string]AgentConfig
	// remotes are the file's remote agents (a2a:), checked.
	remotes map[string]*a2aagent.Options
	// hub holds the file's MCP servers, and mcpTools their tools' overrides.
	hub      *mcptools.Hub
	mcpTools map[string]ToolConfig
	servers  []mcptools.Server
	// previewTools are the MCP tools previews call (server.tool, by the
	// key path naming them), checked once the servers run.
	previewTools []keyed[string]
	// warnings are what the file says that will not work as written
	// although it loads (Config.Preflight reports them).
	warnings []string
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
	if len(f.Agents) == 0 && f.Approvals == nil && f.Gateway == nil {
		return nil, l.errf("agents", "no agents are defined; add at least one under agents: (or an approvals: or gateway: section, to approve only your own code's or MCP clients' calls)")
	}
	if _, ok := f.Agents[GatewayAgent]; ok {
		return nil, l.errf("agents."+GatewayAgent, "the name %q is Cairn's own: it holds the MCP gateway's calls (configure it under gateway:); choose another name", GatewayAgent)
	}
	if _, ok := f.Agents[cairn.ApprovalsAgentName]; ok {
		return nil, l.errf("agents."+cairn.ApprovalsAgentName, "the name %q is Cairn's own: it takes the approval requests of POST /v1/approvals (configure it under approvals:); choose another name", cairn.ApprovalsAgentName)
	}
	l.agents = f.Agents
	models := map[string]model.Model{}
	for _, name := range sortedKeys(f.Models) {
		m, err := l.model("models."+name, f.Models[name])
		if err != nil {
			return nil, err
		}
		models[name] = m
		if u := f.Models[name].BaseURL; u != "" {
			cfg.endpoints = append(cfg.endpoints, keyed[string]{"models." + name + ".base_url", u})
		}
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
		if argv := f.Tools[name].Command; len(argv) > 0 {
			cfg.commands = append(cfg.commands, keyed[[]string]{"tools." + name + ".command", argv})
		}
		if pc := f.Tools[name].Preview; pc != nil && len(pc.Command) > 0 {
			cfg.commands = append(cfg.commands, keyed[[]string]{"tools." + name + ".preview.command", pc.Command})
		}
		if t.Wait != nil && cfg.PublicURL == "" {
			return nil, l.errf("tools."+name+".wait", "the command is given a callback URL built from public_url, which is not set: add public_url: https://cairn.example.org (the address the system doing the work reaches this server at)")
		}
		tools[name] = t
	}
	if err := l.mcpServers(f); err != nil {
		return nil, err
	}
	if l.remotes, err = l.remoteAgents(f); err != nil {
		return nil, err
	}
	var slots [][]toolSlot
	for _, name := range sortedKeys(f.Agents) {
		if l.remotes[name] != nil {
			continue // reached over A2A: a tool of the agents that call it
		}
		agent, s, err := l.agent(name, f, models, tools)
		if err != nil {
			return nil, err
		}
		cfg.Agents, slots = append(cfg.Agents, agent), append(slots, s)
	}
	approvals, err := l.approvals(f.Approvals)
	if err != nil {
		return nil, err
	}
	cfg.Agents, slots = append(cfg.Agents, approvals), append(slots, nil)
	if f.Gateway != nil {
		gw, agent, s, err := l.gateway(f)
		if err != nil {
			return nil, err
		}
		cfg.Gateway = gw
		cfg.Agents, slots = append(cfg.Agents, agent), append(slots, s)
	}
	if cfg.A2A, err = l.a2a(f); err != nil {
		return nil, err
	}
	cfg.warnings = l.warnings
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

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// a2a checks the a2a section: each agent it serves is one of the file's
// agents, named once.
func (l *loader) a2a(f *File) ([]string, error) {
	if f.A2A == nil {
		return nil, nil
	}
	if len(f.A2A.Agents) == 0 {
		return nil, l.errf("a2a.agents", "list the agents to serve over A2A, like [%s]", strings.Join(sortedKeys(f.Agents), ", "))
	}
	seen := map[string]bool{}
	for i, name := range f.A2A.Agents {
		p := fmt.Sprintf("a2a.agents[%d]", i)
		if _, ok := f.Agents[name]; !ok {
			return nil, l.errf(p, "no agent %q: serve one of the agents defined under agents: (%s)", name, strings.Join(sortedKeys(f.Agents), ", "))
		}
		if f.Agents[name].A2A != nil {
			return nil, l.errf(p, "agent %q is a remote agent (its a2a: key): its own server serves it", name)
		}
		if seen[name] {
			return nil, l.errf(p, "agent %q is listed twice", name)
		}
		seen[name] = true
	}
	return f.A2A.Agents, nil
}

// remoteAgents reads the agents that have an a2a key: a URL, headers with
// ${VAR} expanded, and nothing of a local agent's.
func (l *loader) remoteAgents(f *File) (map[string]*a2aagent.Options, error) {
	out := map[string]*a2aagent.Options{}
	for _, name := range sortedKeys(f.Agents) {
		a, p := f.Agents[name], "agents."+name
		if a.A2A == nil {
			continue
		}
		if a.Model != "" || a.Instructions != "" || len(a.Tools) > 0 || len(a.Subagents) > 0 || len(a.Handoffs) > 0 || a.OutputSchema != nil || a.Review != "" {
			return nil, l.errf(p, "a remote agent (a2a:) has its model, instructions and tools on its own server: give it a2a and description only")
		}
		u, err := url.Parse(a.A2A.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, l.errf(p+".a2a.url", "%q is not an http(s) URL of an A2A agent (its card is at URL/.well-known/agent-card.json)", a.A2A.URL)
		}
		headers := map[string]string{}
		for _, k := range sortedKeys(a.A2A.Headers) {
			v, err := l.expand(p+".a2a.headers."+k, a.A2A.Headers[k])
			if err != nil {
				return nil, err
			}
			headers[k] = v
		}
		out[name] = &a2aagent.Options{Name: name, URL: a.A2A.URL, Headers: headers, Description: a.Description}
	}
	return out, nil
}
