package config

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/suggest"
	"github.com/cairnhq/cairn/mcp/mcptools"
)

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// expand replaces ${VAR} in v; a variable that is not set is an error.
func (l *loader) expand(key, v string) (string, error) {
	var missing string
	out := envRef.ReplaceAllStringFunc(v, func(ref string) string {
		name := envRef.FindStringSubmatch(ref)[1]
		val, ok := l.env(name)
		if !ok && missing == "" {
			missing = name
		}
		return val
	})
	if missing != "" {
		return "", l.errf(key, "environment variable %s is not set (it is used as ${%s})", missing, missing)
	}
	return out, nil
}

// mcpServers reads the file's MCP servers (their specs: nothing is
// started here) and the overrides under tools: (server.tool keys).
func (l *loader) mcpServers(f *File) error {
	l.mcpTools = map[string]ToolConfig{}
	for name, tc := range f.Tools {
		if strings.Contains(name, ".") {
			l.mcpTools[name] = tc
		}
	}
	for _, ref := range l.previewTools {
		if server, _, _ := strings.Cut(ref.v, "."); f.MCPServers[server].Command == nil && f.MCPServers[server].URL == "" {
			names := sortedKeys(f.MCPServers)
			return l.errf(ref.path, "no MCP server %q; configured: %s%s", server, strings.Join(names, ", "), suggest.Hint(server, names))
		}
	}
	for _, name := range sortedKeys(l.mcpTools) {
		server, _, _ := strings.Cut(name, ".")
		if len(f.MCPServers) == 0 {
			return l.errf("tools."+name, "%q names an MCP tool (server.tool), but no mcp_servers are configured", name)
		}
		if _, ok := f.MCPServers[server]; !ok {
			return l.errf("tools."+name, "no MCP server %q; configured: %s%s", server, strings.Join(sortedKeys(f.MCPServers), ", "), suggest.Hint(server, sortedKeys(f.MCPServers)))
		}
	}
	for _, name := range sortedKeys(f.MCPServers) {
		sc, p := f.MCPServers[name], "mcp_servers."+name
		if !toolName.MatchString(name) || strings.Contains(name, "__") {
			return l.errf(p, "server names are 1–64 letters, digits, _ or - (no __)")
		}
		s := mcptools.Server{Name: name, Command: sc.Command, URL: sc.URL, Dir: l.dir, Env: map[string]string{}, Headers: map[string]string{}}
		if (len(sc.Command) > 0) == (sc.URL != "") {
			return l.errf(p, "give either command (a stdio server) or url (streamable HTTP)")
		}
		for k, v := range sc.Env {
			var err error
			if s.Env[k], err = l.expand(p+".env."+k, v); err != nil {
				return err
			}
		}
		for k, v := range sc.Headers {
			var err error
			if s.Headers[k], err = l.expand(p+".headers."+k, v); err != nil {
				return err
			}
		}
		l.servers = append(l.servers, s)
	}
	return nil
}

// connectMCP starts the MCP servers and checks that the overrides under
// tools: name tools they list.
func (l *loader) connectMCP(ctx context.Context) (*mcptools.Hub, error) {
	hub, err := mcptools.Connect(ctx, l.servers, nil)
	if err != nil {
		return nil, &Error{File: l.path, Line: l.line("mcp_servers"), Path: "mcp_servers", Msg: err.Error()}
	}
	for _, ref := range l.previewTools {
		server, tool, _ := strings.Cut(ref.v, ".")
		if names := hub.ToolNames(server); !slices.Contains(names, tool) {
			hub.Close()
			return nil, l.errf(ref.path, "MCP server %s has no tool %q; its tools: %s%s", server, tool, strings.Join(names, ", "), suggest.Hint(tool, names))
		}
	}
	for _, name := range sortedKeys(l.mcpTools) {
		server, tool, _ := strings.Cut(name, ".")
		if names := hub.ToolNames(server); !slices.Contains(names, tool) {
			hub.Close()
			return nil, l.errf("tools."+name, "MCP server %s has no tool %q; its tools: %s%s", server, tool, strings.Join(names, ", "), suggest.Hint(tool, names))
		}
	}
	return hub, nil
}

// mcpRef resolves an agent's server.tool reference, or server.* (every
// tool of the server, as a toolset that follows its list_changed).
func (l *loader) mcpRef(key string, i int, ref string, f *File) ([]*cairn.Tool, cairn.Toolset, error) {
	server, tool, _ := strings.Cut(ref, ".")
	if _, ok := f.MCPServers[server]; !ok || l.hub == nil {
		names := sortedKeys(f.MCPServers)
		return nil, nil, l.errf(key, "tools[%d]: %q: no MCP server %q; configured: %s%s", i, ref, server, strings.Join(names, ", "), suggest.Hint(server, names))
	}
	if tool == "*" {
		specs := map[string]*cairn.Tool{}
		for name := range l.mcpTools {
			if s, t, _ := strings.Cut(name, "."); s == server {
				spec, err := l.mcpOverride(name)
				if err != nil {
					return nil, nil, err
				}
				specs[t] = spec
			}
		}
		return nil, l.hub.Toolset(server, func(tool string) *cairn.Tool { return specs[tool] }), nil
	}
	spec, err := l.mcpOverride(ref)
	if err != nil {
		return nil, nil, err
	}
	t := l.hub.Tool(server, tool, spec)
	if t == nil {
		all := l.hub.ToolNames(server)
		return nil, nil, l.errf(key, "tools[%d]: MCP server %s has no tool %q; its tools: %s%s", i, server, tool, strings.Join(all, ", "), suggest.Hint(tool, all))
	}
	return []*cairn.Tool{t}, nil, nil
}

// mcpOverride reads tools: server.tool, the overrides of an MCP tool: the
// keys of a command tool that are not the tool's own (its description,
// schema and command come from the server).
func (l *loader) mcpOverride(name string) (*cairn.Tool, error) {
	tc, ok := l.mcpTools[name]
	if !ok {
		return nil, nil
	}
	p := "tools." + name
	switch {
	case tc.Description != "" || tc.Parameters != nil || len(tc.Command) > 0 || tc.Builtin != "":
		return nil, l.errf(p, "an MCP tool takes only approval, approvers, approval_rules, confirmation, timeout, approval_ttl, escalation, on_expiry, preview and idempotent here; its description, parameters and command come from the server")
	}
	spec := &cairn.Tool{Confirmation: tc.Confirmation, Idempotent: tc.Idempotent}
	if tc.Approvers != nil {
		// A tool its annotations never ask about refuses approvers when the
		// runner compiles it: set approval too.
		a, err := l.approversOf(p+".approvers", *tc.Approvers)
		if err != nil {
			return nil, err
		}
		spec.Approvers = a
	}
	for i, rc := range tc.ApprovalRules {
		rp := fmt.Sprintf("%s.approval_rules[%d]", p, i)
		switch {
		case strings.TrimSpace(rc.If) == "":
			return nil, l.errf(rp+".if", "is required: a CEL condition over args, such as 'args.path.startsWith(\"/etc/\")'")
		case len(rc.Escalation) > 0 || rc.OnExpiry != nil:
			return nil, l.errf(rp, "an MCP tool's approval rule takes if and approvers (groups, count, not_requester); give the tool's escalation and on_expiry on the tool")
		}
		cond, err := celPolicy("args", rc.If)
		if err != nil {
			return nil, l.errf(rp+".if", "not a valid CEL condition over args: %v", err)
		}
		a, err := l.approversOf(rp, rc.ApproversConfig)
		if err != nil {
			return nil, err
		}
		spec.ApprovalRules = append(spec.ApprovalRules, cairn.ApprovalRule{If: cond, Approvers: *a})
	}
	if tc.Approval != "" {
		pol, err := approvalPolicy(tc.Approval)
		if err != nil {
			return nil, l.errf(p+".approval", "%v", err)
		}
		spec.Approval = pol
	}
	for key, v := range map[string]string{"timeout": tc.Timeout, "approval_ttl": tc.ApprovalTTL} {
		if v == "" {
			continue
		}
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return nil, l.errf(p+"."+key, "%q is not a positive duration like 30s or 15m", v)
		}
		if key == "timeout" {
			spec.Timeout = d
		} else {
			spec.ApprovalTTL = d
		}
	}
	// Its preview may be another tool of the same server (a dry run).
	if err := l.preview(p, name, tc.Preview, spec); err != nil {
		return nil, err
	}
	var err error
	// Whether its calls ask depends on the server's annotations too:
	// NewRunner refuses an escalation of a tool that never asks.
	if spec.Escalation, err = l.escalation(p, tc.Escalation, tc.OnExpiry, spec, true, nil); err != nil {
		return nil, err
	}
	return spec, nil
}
