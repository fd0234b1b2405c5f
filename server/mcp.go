package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/mcp/mcpserver"
	"github.com/cairnhq/cairn/session"
)

// mcpHandler serves the agents as MCP tools over streamable HTTP at /mcp,
// with the API's tokens: a token's name owns the sessions it starts, and
// only approvers and admins decide (see docs/mcp.md).
func (s *Server) mcpHandler() http.Handler {
	opts := &mcpserver.Options{Logger: s.log, Caller: s.mcpCaller, Inbox: s.inboxLink()}
	return s.mcpAuth(mcpserver.New(s.runner, opts))
}

// gatewayHandler serves the MCP approval gateway at /mcp/gateway, with the
// API's tokens as /mcp has them.
func (s *Server) gatewayHandler(opts mcpserver.GatewayOptions) http.Handler {
	opts.Caller, opts.Inbox = s.mcpCaller, s.inboxLink()
	if opts.Logger == nil {
		opts.Logger = s.log
	}
	srv, err := mcpserver.NewGateway(s.runner, &opts)
	if err != nil {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			writeError(w, http.StatusInternalServerError, "internal", err.Error())
		})
	}
	return s.mcpAuth(srv)
}

// inboxLink makes the page's link to a session, or is nil without a base URL.
func (s *Server) inboxLink() func(string) string {
	if s.baseURL == "" {
		return nil
	}
	return func(id string) string { return strings.TrimSuffix(s.baseURL, "/") + "/#/sessions/" + id }
}

// mcpAuth serves srv over streamable HTTP, its callers authenticated by
// the API's tokens.
func (s *Server) mcpAuth(srv *sdk.Server) http.Handler {
	h := http.Handler(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	if s.authOn() {
		// authenticate already refused unknown tokens; this hands the
		// caller to the MCP server as the SDK's TokenInfo.
		h = auth.RequireBearerToken(func(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
			p, err := s.principalOf(ctx, token)
			if err != nil {
				return nil, fmt.Errorf("%w: %v", auth.ErrInvalidToken, err)
			}
			return &auth.TokenInfo{UserID: p.name, Scopes: []string{p.role}, Expiration: time.Now().Add(24 * time.Hour),
				Extra: map[string]any{actorExtra: p.actor}}, nil
		}, nil)(h)
	}
	return h
}

// actorExtra is the key of the caller's session.Actor in an MCP request's
// TokenInfo.Extra.
const actorExtra = "cairn.actor"

// mcpCaller is who calls a tool over /mcp.
func (s *Server) mcpCaller(extra *sdk.RequestExtra) mcpserver.Caller {
	p := principal{role: RoleAdmin, actor: session.Actor{Role: RoleAdmin}} // no tokens configured: loopback only
	if s.authOn() {
		p = principal{}
		if extra != nil && extra.TokenInfo != nil && len(extra.TokenInfo.Scopes) == 1 {
			actor, _ := extra.TokenInfo.Extra[actorExtra].(session.Actor)
			p = principal{name: extra.TokenInfo.UserID, role: extra.TokenInfo.Scopes[0], actor: actor}
		}
	}
	return mcpserver.Caller{Name: p.name, Role: p.role, Actor: p.actor, MayDecide: p.atLeast(RoleApprover),
		MaySee: func(sess *cairn.Session) bool { return canSee(p, sess) }}
}
