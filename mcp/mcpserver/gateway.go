package mcpserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/mcp/mcptools"
)

// GatewayOptions configure NewGateway.
type GatewayOptions struct {
	// Agent is the direct agent whose sessions hold the calls that wait
	// for a person; its tools are Servers' (config.GatewayAgent).
	Agent string
	// Hub reaches the upstream MCP servers; Servers name those offered.
	Hub     *mcptools.Hub
	Servers []string
	// Hold is how long a tools/call waits for a person before it answers
	// that the call is still pending (0: DefaultGatewayHold).
	Hold time.Duration
	// AllSessions makes every call a session, also those whose policy
	// asks nobody (by default they pass straight through).
	AllSessions bool
	// ProgressEvery is how often a held call sends progress to a client
	// that asked for it (0: 15s).
	ProgressEvery time.Duration
	// Caller, Inbox and Logger are as in Options.
	Caller func(*sdk.RequestExtra) Caller
	Inbox  func(sessionID string) string
	Logger *slog.Logger
}

// DefaultGatewayHold is GatewayOptions.Hold when 0.
const DefaultGatewayHold = 10 * time.Minute

// IdempotencyMeta is the _meta key of a tools/call that names the call:
// the same key, tool and arguments again within the hold attach to the
// same approval (or get its recorded result) instead of asking again.
const IdempotencyMeta = "io.cairn/idempotency-key"

// ApprovalMeta is the _meta key of a listed tool that says, in words,
// when Cairn asks a person before its calls run.
const ApprovalMeta = "io.cairn/approval"

// gateway serves the upstream servers' tools under Cairn's policies.
type gateway struct {
	server // the elicitation forms and outcomes of the agents' MCP server
	g      GatewayOptions
	srv    *sdk.Server
	mu     sync.Mutex // serialises re-listing
}

// upstream is where a gateway tool's calls go.
type upstream struct{ server, tool string }

// NewGateway serves the tools of the hub's servers to any MCP client
// (docs/gateway.md): tools/list offers them with their annotations and
// Cairn's approval policy in _meta; a call that needs nobody's approval
// passes through to its server; one that does becomes a session of
// opts.Agent paused on one approval interrupt, which the client is also
// asked through elicitation when it can answer and may decide, and the
// call is held open (with progress notifications) until it is decided
// and has run, or for opts.Hold. A client that calls again with the same
// arguments (and the same MCP session or _meta io.cairn/idempotency-key)
// attaches to the same approval, or gets its recorded result.
func NewGateway(r *cairn.Runner, opts *GatewayOptions) (*sdk.Server, error) {
	if opts == nil || opts.Hub == nil || opts.Agent == "" {
		return nil, errors.New("mcpserver: a gateway needs an agent and a hub of MCP servers")
	}
	g := &gateway{g: *opts}
	if g.g.Hold <= 0 {
		g.g.Hold = DefaultGatewayHold
	}
	if g.g.ProgressEvery <= 0 {
		g.g.ProgressEvery = 15 * time.Second
	}
	if g.g.Logger == nil {
		g.g.Logger = slog.Default()
	}
	g.server = server{r: r, opts: Options{Caller: g.g.Caller, Inbox: g.g.Inbox, Logger: g.g.Logger}}
	g.srv = sdk.NewServer(&sdk.Implementation{Name: "cairn-gateway", Version: "1"}, nil)
	g.list()
	g.g.Hub.OnChange(g.list)
	return g.srv, nil
}

// list offers the servers' tools as they are listed now (the SDK tells
// the clients when they changed).
func (g *gateway) list() {
	g.mu.Lock()
	defer g.mu.Unlock()
	rules := map[string]string{}
	for _, a := range g.r.Agents() {
		if a.Name == g.g.Agent {
			for _, t := range a.Tools {
				rules[t.Name] = t.Approval
			}
		}
	}
	for _, server := range g.g.Servers {
		for _, t := range g.g.Hub.Listed(server) {
			name := mcptools.ModelName(server, t.Name)
			offered := &sdk.Tool{Name: name, Title: t.Title, Description: t.Description, InputSchema: t.InputSchema, Annotations: t.Annotations,
				Meta: sdk.Meta{ApprovalMeta: rules[name]}}
			if offered.InputSchema == nil {
				offered.InputSchema = map[string]any{"type": "object"}
			}
			to := upstream{server, t.Name}
			g.srv.AddTool(offered, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				return g.call(ctx, req, name, to), nil
			})
		}
	}
}

// call is one tools/call: straight through, or held for a person.
func (g *gateway) call(ctx context.Context, req *sdk.CallToolRequest, name string, to upstream) *sdk.CallToolResult {
	args := json.RawMessage(req.Params.Arguments)
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage(`{}`)
	}
	if !g.g.AllSessions {
		asks, err := g.r.NeedsApproval(g.g.Agent, name, args)
		if err == nil && !asks {
			res, err := g.g.Hub.Call(ctx, to.server, to.tool, args)
			if err != nil {
				return errorResult(err.Error())
			}
			return res
		}
	}
	c := g.caller(req)
	if req.Params.RequestState != "" {
		return g.answered(ctx, req, c)
	}
	sess, err := g.attach(ctx, req, c, name, args)
	if err != nil {
		return errorResult(err.Error())
	}
	return g.hold(ctx, req, c, sess)
}

// answered takes a multi round-trip client's answer to the approval it
// was asked (SEP-2322: the call again, with the answer and the state it
// was given), then holds the call as before. The first decision wins: an
// answer to a call decided meanwhile changes nothing.
func (g *gateway) answered(ctx context.Context, req *sdk.CallToolRequest, c Caller) *sdk.CallToolResult {
	var st roundState
	if err := json.Unmarshal([]byte(req.Params.RequestState), &st); err != nil || st.Session == "" {
		return errorResult("requestState is not one the gateway gave")
	}
	sess, err := g.r.Session(ctx, st.Session)
	if err == nil && (sess.Agent != g.g.Agent || (c.MaySee != nil && !c.MaySee(sess))) {
		err = notFound(st.Session)
	}
	if err != nil {
		return errorResult(err.Error())
	}
	if in := g.askable(req, c, sess); in != nil && sess.Seq == st.Seq {
		if res, _ := req.Params.InputResponses[in.ID].(*sdk.ElicitResult); res != nil && res.Action != "cancel" {
			next, err := g.r.Resume(context.WithoutCancel(ctx), sess.ID, sess.Seq, []cairn.Decision{decision(*in, res)}, &cairn.TurnOptions{Actor: c.actor()})
			if err == nil {
				sess = next
			} else {
				g.g.Logger.Info("the gateway client's decision was not taken", "session", sess.ID, "err", err)
			}
		}
	}
	return g.holdAnswered(ctx, req, c, sess)
}

// attach finds the session a repeated call names, or starts one. Its id
// is derived from who calls, the call's key (its _meta idempotency key,
// else its MCP session), the tool and the arguments, so every replica
// finds the same one; a session that ended longer than the hold ago is
// passed over for the next id of the chain (the call is made anew).
func (g *gateway) attach(ctx context.Context, req *sdk.CallToolRequest, c Caller, name string, args json.RawMessage) (*cairn.Session, error) {
	key := ""
	if k, ok := req.Params.GetMeta()[IdempotencyMeta].(string); ok {
		key = k
	} else if req.Session != nil {
		key = "mcp-session:" + req.Session.ID()
	}
	start := func(id string) (*cairn.Session, error) {
		call := &cairn.CallRequest{ID: "call", Tool: name, Arguments: args}
		opts := &cairn.StartOptions{ID: id, Owner: c.Name, Actor: c.actor(), Call: call, Metadata: map[string]any{"via": "mcp gateway"}}
		if p := req.Session.InitializeParams(); p != nil && p.ClientInfo != nil {
			opts.Metadata["mcp_client"] = p.ClientInfo.Name
		}
		// The session goes on if the client goes away: its pause waits for anyone.
		return g.r.Start(context.WithoutCancel(ctx), g.g.Agent, "MCP client call of "+name, opts)
	}
	if key == "" || key == "mcp-session:" {
		return start("")
	}
	base := gatewayID(c.actor().Tenant, c.Name, key, name, args)
	for n := 0; n < 100; n++ {
		id := base
		if n > 0 {
			id += "_" + strconv.Itoa(n)
		}
		sess, err := g.r.Session(ctx, id)
		if errors.Is(err, cairn.ErrNotFound) {
			sess, err = start(id)
			if errors.Is(err, cairn.ErrConflict) { // another replica started it first
				sess, err = g.r.Session(ctx, id)
			}
		}
		if err != nil {
			return nil, err
		}
		finished := sess.Status == cairn.StatusCompleted || sess.Status == cairn.StatusFailed || sess.Status == cairn.StatusCancelled
		if !finished || time.Since(sess.UpdatedAt) <= g.g.Hold {
			return sess, nil
		}
	}
	return start("")
}

// gatewayID is the base session id of a keyed call.
func gatewayID(tenant, owner, key, tool string, args json.RawMessage) string {
	var v any
	_ = json.Unmarshal(args, &v)
	canonical, _ := json.Marshal(v) // maps sorted: the same arguments, the same id
	h := sha256.New()
	for _, part := range []string{tenant, owner, key, tool, string(canonical)} {
		fmt.Fprintf(h, "%d:%s", len(part), part)
	}
	return "gw_" + hex.EncodeToString(h.Sum(nil)[:16])
}

// hold waits, up to the hold, for the session to end, sending progress
// when the client asked for it and asking the client by elicitation
// while the call waits for a decision it may make.
func (g *gateway) hold(ctx context.Context, req *sdk.CallToolRequest, c Caller, sess *cairn.Session) *sdk.CallToolResult {
	return g.holding(ctx, req, c, sess, true)
}

// holdAnswered holds a call whose client answered already: it is not
// asked the same again.
func (g *gateway) holdAnswered(ctx context.Context, req *sdk.CallToolRequest, c Caller, sess *cairn.Session) *sdk.CallToolResult {
	return g.holding(ctx, req, c, sess, false)
}

func (g *gateway) holding(ctx context.Context, req *sdk.CallToolRequest, c Caller, sess *cairn.Session, ask bool) *sdk.CallToolResult {
	ctx, cancel := context.WithTimeout(ctx, g.g.Hold)
	defer cancel()
	changed := make(chan struct{}, 1)
	go func() {
		for _, err := range g.r.Follow(ctx, sess.ID, sess.Seq) {
			if err != nil {
				return
			}
			select {
			case changed <- struct{}{}:
			default:
			}
		}
	}()
	tick := time.NewTicker(g.g.ProgressEvery)
	defer tick.Stop()
	var asked string // the interrupt the client is being asked about
	var asking context.CancelFunc
	defer func() {
		if asking != nil {
			asking()
		}
	}()
	progress := 0
	for {
		if ended(sess) {
			return g.result(ctx, sess)
		}
		if in := g.askable(req, c, sess); in != nil && in.ID != asked && (ask || in.ID != firstAsked(req)) {
			if multiRoundTrip(req) {
				// Asked in the result; the answer comes with the call again.
				state, _ := json.Marshal(roundState{Session: sess.ID, Seq: sess.Seq})
				return &sdk.CallToolResult{InputRequests: sdk.InputRequestMap{in.ID: g.elicitation(sess, *in, "")}, RequestState: string(state)}
			}
			if asking != nil {
				asking() // a question about a pause that moved on
			}
			asked = in.ID
			actx, stop := context.WithCancel(ctx)
			asking = stop
			go g.elicitDecision(actx, req, c, sess, *in)
		}
		select {
		case <-changed:
		case <-tick.C:
			if tok := req.Params.GetProgressToken(); tok != nil {
				progress++
				_ = req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: tok, Progress: float64(progress),
					Message: "waiting for a person to approve " + req.Params.Name})
			}
			continue
		case <-ctx.Done():
			// The hold ended (or the client went away: nobody reads this).
			return g.pending(sess)
		}
		s, err := g.r.Session(context.WithoutCancel(ctx), sess.ID)
		if err != nil {
			return errorResult(err.Error())
		}
		sess = s
	}
}

// firstAsked is the interrupt a multi round-trip call answered, if any.
func firstAsked(req *sdk.CallToolRequest) string {
	for id := range req.Params.InputResponses {
		return id
	}
	return ""
}

func ended(s *cairn.Session) bool {
	return s.Status == cairn.StatusCompleted || s.Status == cairn.StatusFailed || s.Status == cairn.StatusCancelled
}

// askable is the approval of the held call the client may be asked to
// decide (it can answer elicitations, and may decide it), if any.
func (g *gateway) askable(req *sdk.CallToolRequest, c Caller, sess *cairn.Session) *cairn.Interrupt {
	if sess.Status != cairn.StatusPaused || !c.MayDecide || !canElicit(req) {
		return nil
	}
	for i := range sess.Interrupts {
		in := &sess.Interrupts[i]
		if in.Kind == cairn.KindApproval && g.r.Decides(c.actor(), sess.Owner, in) {
			return in
		}
	}
	return nil
}

// elicitDecision asks the client to decide in and applies its answer: the
// first decision wins, so an answer to a call decided elsewhere meanwhile
// is refused by the runner, and changes nothing.
func (g *gateway) elicitDecision(ctx context.Context, req *sdk.CallToolRequest, c Caller, sess *cairn.Session, in cairn.Interrupt) {
	res, err := req.Session.Elicit(ctx, g.elicitation(sess, in, ""))
	if err != nil || res.Action == "cancel" || ctx.Err() != nil {
		return
	}
	d := decision(in, res)
	if _, err := g.r.Resume(context.WithoutCancel(ctx), sess.ID, sess.Seq, []cairn.Decision{d}, &cairn.TurnOptions{Actor: c.actor()}); err != nil {
		g.g.Logger.Info("the gateway client's decision was not taken", "session", sess.ID, "err", err)
	}
}

// result is the call's outcome once its session ended: the upstream
// tool's result, or an error result saying why it did not run.
func (g *gateway) result(ctx context.Context, sess *cairn.Session) *sdk.CallToolResult {
	a, err := g.r.CallApproval(context.WithoutCancel(ctx), sess.ID)
	if err != nil {
		return errorResult(err.Error())
	}
	switch {
	case a.Status == cairn.ApprovalRejected:
		return errorResult(fmt.Sprintf("%s was rejected by %s: %s", a.Tool, actorName(a), a.Reason))
	case a.Status == cairn.ApprovalExpired:
		return errorResult(fmt.Sprintf("%s did not run: %s", a.Tool, a.Reason))
	case a.Result != nil && a.Result.Error != "":
		return errorResult(a.Result.Error)
	case a.Result != nil:
		var text string
		_ = json.Unmarshal(a.Result.Output, &text)
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}}
	case sess.Error != nil:
		return errorResult(fmt.Sprintf("%s did not complete: %s", a.Tool, sess.Error.Message))
	}
	return errorResult(fmt.Sprintf("%s did not run (session %s is %s)", a.Tool, sess.ID, sess.Status))
}

// pending answers a call still held when the hold ends: it is not an
// error of the tool; calling again attaches to the same approval.
func (g *gateway) pending(sess *cairn.Session) *sdk.CallToolResult {
	msg := fmt.Sprintf("This call is still waiting for a person's approval (session %s). Call the tool again with the same arguments to keep waiting, or to get its result once it ran; it will not run twice.", sess.ID)
	if sess.Status == cairn.StatusPaused && len(sess.Interrupts) > 0 && sess.Interrupts[0].InDoubt {
		msg = fmt.Sprintf("This call is in doubt (session %s): the process running it stopped before its server answered, so it may or may not have taken effect. A person decides whether it runs again; call again with the same arguments to wait for that.", sess.ID)
	}
	if link := g.inbox(sess.ID); link != "" {
		msg += " Inbox: " + link
	}
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: msg}},
		Meta: sdk.Meta{"io.cairn/session": sess.ID, "io.cairn/status": string(sess.Status)}}
}

func actorName(a *cairn.CallApproval) string {
	if a.Actor == nil || a.Actor.Name == "" {
		return "a person"
	}
	return a.Actor.Name
}
