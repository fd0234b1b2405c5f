package local

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/webhook"
)

// webhooks is a runner's webhook configuration and its deliverer.
type webhooks struct {
	endpoints []webhook.Subscription
	publicURL string
	deliverer *webhook.Deliverer
	links     *linkSigner
	now       func() time.Time // the deliverer's clock
}

// setupWebhooks checks the webhook options and prepares their delivery.
func (r *Runner) setupWebhooks(opts *Options) error {
	if len(opts.Webhooks) == 0 {
		return nil
	}
	outbox, ok := r.store.(store.Outbox)
	if !ok {
		return fmt.Errorf("cairn: webhooks need a store with an outbox; %T does not implement store.Outbox", r.store)
	}
	secrets, ok := r.store.(store.Secrets)
	if !ok {
		return fmt.Errorf("cairn: webhook action links need a signing key kept in the store; %T does not implement store.Secrets", r.store)
	}
	u, err := url.Parse(opts.PublicURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("cairn: webhooks need PublicURL, the absolute http(s) URL people reach the server at (action links are built from it); got %q", opts.PublicURL)
	}
	h := &webhooks{publicURL: strings.TrimRight(opts.PublicURL, "/"), links: newLinkSigner(secrets)}
	endpoints := map[string]webhook.Endpoint{}
	for i, w := range opts.Webhooks {
		w.Name = cmp.Or(w.Name, w.URL)
		if len(w.Name) > 200 {
			return fmt.Errorf("cairn: webhooks[%d]: the name %q… is longer than 200 bytes (it goes into every action link); give the endpoint a shorter Name", i, w.Name[:40])
		}
		if _, dup := endpoints[w.Name]; dup {
			return fmt.Errorf("cairn: webhooks[%d]: the name %q is used twice", i, w.Name)
		}
		for _, ev := range w.Events {
			if !slices.Contains(webhook.EventTypes(), ev) {
				return fmt.Errorf("cairn: webhooks[%d] (%s): unknown event %q; the events are %s", i, w.Name, ev, webhook.EventTypeNames())
			}
		}
		endpoints[w.Name] = webhook.Endpoint{URL: w.URL, Secret: w.Secret, Timeout: w.Timeout}
		h.endpoints = append(h.endpoints, w)
	}
	var dopts webhook.Options
	if opts.WebhookDelivery != nil {
		dopts = *opts.WebhookDelivery
	}
	dopts.Owner = r.node
	dopts.Logger = cmp.Or(dopts.Logger, r.log)
	// Deliveries keep wall-clock time whatever RunnerOptions.Now says:
	// receivers check the signed timestamp against theirs.
	if dopts.Now == nil {
		dopts.Now = time.Now
	}
	h.now = dopts.Now
	if h.deliverer, err = webhook.New(outbox, endpoints, &dopts); err != nil {
		return fmt.Errorf("cairn: %w", err)
	}
	r.hooks = h
	return nil
}

// webhookMessages are the outbox messages announcing a commit's events.
func (r *Runner) webhookMessages(ctx context.Context, sessionID, nonce, agent, tenant string, seq int64, step engine.Step) ([]store.Message, error) {
	var out []store.Message
	for i, ev := range step.Events {
		if i < step.Copied {
			continue // a fork's copy: announced when it happened
		}
		notes, err := notes(step, i)
		if err != nil {
			return nil, err
		}
		for _, n := range notes {
			for _, w := range r.hooks.endpoints {
				if !w.Wants(n.typ) || !w.Hears(tenant) {
					continue
				}
				data := n.data
				data.SessionID, data.Agent, data.Tenant, data.Seq = sessionID, agent, tenant, seq
				// Links go only to a receiver that decides the interrupt (the
				// one decision point, with the receiver's groups).
				if n.linked != nil && r.engineOpts.Authority.Decides(linkActor(w), "", n.linked) {
					if data.Actions, err = r.hooks.actions(ctx, sessionID, nonce, n.linked, w.Name); err != nil {
						return nil, err
					}
					data.Actions.SpeaksFor = w.Groups
					if w.Person != nil {
						data.Actions.SpeaksFor, data.Actions.IssuedTo = w.Person.Groups, w.Person.Name
					}
				}
				body, err := json.Marshal(webhook.Payload{Type: n.typ, Timestamp: ev.Time, Data: data})
				if err != nil {
					return nil, err
				}
				out = append(out, store.Message{ID: messageID(sessionID, nonce, ev.Seq, n.typ, n.about, w.Name), Topic: w.Name, Body: body, CreatedAt: r.hooks.now()})
			}
		}
	}
	return out, nil
}

// note is one webhook event an event makes, before it is addressed.
type note struct {
	typ    webhook.EventType
	about  string // the interrupt, if any: one event may create several
	data   webhook.Data
	linked *session.Interrupt // gets action links
}

// notes are the webhook events that the step's i-th event makes, read
// from its payload (decoded only for a step that came without payloads).
func notes(step engine.Step, i int) ([]note, error) {
	ev := step.Events[i]
	// A filter of event types: only the events a webhook announces.
	//exhaustive:ignore
	switch ev.Type {
	case session.EventTurnPaused, session.EventDecision, session.EventWaitExpired, session.EventTurnCompleted, session.EventTurnFailed,
		session.EventInterruptReminded, session.EventInterruptEscalated, session.EventSessionForked:
	default:
		return nil, nil
	}
	payload, err := engine.Payload(step.Events, step.Payloads, i)
	if err != nil {
		return nil, err
	}
	switch p := payload.(type) {
	case *engine.TurnPaused:
		return created(p.Interrupts, func(id string) bool { return slices.Contains(p.Created, id) }), nil
	case *engine.DecisionMade:
		typ := webhook.InterruptDecided
		switch {
		case isExpiry(p.Actor):
			typ = webhook.InterruptExpired
		case p.Action == session.ActionComplete || p.Action == session.ActionFail:
			typ = webhook.InterruptCompleted
		}
		return []note{{typ: typ, about: p.InterruptID, data: webhook.Data{Decision: p}}}, nil
	case *engine.WaitExpired:
		return []note{{typ: webhook.InterruptExpired, about: p.InterruptID, data: webhook.Data{Wait: p}}}, nil
	case *session.EscalationFired:
		typ := webhook.InterruptReminder
		if len(p.EscalateTo) > 0 {
			typ = webhook.InterruptEscalated
		}
		fired := *p
		fired.Interrupt = nil // it is Data.Interrupt
		n := note{typ: typ, about: p.InterruptID, data: webhook.Data{Interrupt: p.Interrupt, Escalation: &fired}}
		if in := p.Interrupt; in != nil && slices.Contains(in.Actions(), session.ActionReject) {
			n.linked = in // fresh links, for whoever may decide it now
		}
		return []note{n}, nil
	case *engine.SessionForked:
		// A fork waits for what its copy waited for: new interrupts of a
		// new session, with links of their own.
		return created(p.Interrupts, func(string) bool { return true }), nil
	case *engine.TurnCompleted:
		return []note{{typ: webhook.SessionCompleted, data: webhook.Data{Output: p.Output}}}, nil
	case *engine.TurnFailed:
		return []note{{typ: webhook.SessionFailed, data: webhook.Data{Error: &p.Error}}}, nil
	}
	return nil, fmt.Errorf("event %d (%s): unexpected payload %T", ev.Seq, ev.Type, payload)
}

// created announces the interrupts of ins that are new: interrupt.created
// each, with action links when they take a rejection (approve and reject).
func created(ins []session.Interrupt, isNew func(id string) bool) []note {
	var out []note
	for _, in := range ins {
		if !isNew(in.ID) {
			continue
		}
		n := note{typ: webhook.InterruptCreated, about: in.ID, data: webhook.Data{Interrupt: &in}}
		if slices.Contains(in.Actions(), session.ActionReject) { // links approve and reject
			n.linked = &in
		}
		out = append(out, n)
	}
	return out
}

// expiryActor is who the engine records as deciding an expired approval.
var expiryActor = session.Actor{Name: "cairn", Role: "expiry"}

// isExpiry reports whether a decision's actor is the runner deciding at a
// deadline (expiryActor), not a person.
func isExpiry(a session.Actor) bool {
	return a.Name == expiryActor.Name && a.Role == expiryActor.Role && a.Via == ""
}

// messageID is a delivery's id: the same for every retry, distinct for
// every event, interrupt and endpoint, and (with the session's nonce)
// never an id a receiver saw for a purged session of the same id.
func messageID(sessionID, nonce string, seq int64, typ webhook.EventType, about, endpoint string) string {
	if nonce != "" {
		sessionID += "\x00" + nonce
	}
	h := sha256.Sum256([]byte(sessionID + "\x00" + strconv.FormatInt(seq, 10) + "\x00" + string(typ) + "\x00" + about + "\x00" + endpoint))
	return "msg_" + hex.EncodeToString(h[:16])
}

// actions are in's action links for endpoint: approve and reject for an
// approval, reject for a question (an answer needs its text).
func (h *webhooks) actions(ctx context.Context, sessionID, nonce string, in *session.Interrupt, endpoint string) (*webhook.Actions, error) {
	link := func(action session.Action) (string, error) {
		tok, err := h.links.sign(ctx, webhook.ActionLink{SessionID: sessionID, Nonce: nonce, InterruptID: in.ID, Action: action, Endpoint: endpoint, ExpiresAt: in.ExpiresAt})
		return h.publicURL + webhook.ActionLinkPath + tok, err
	}
	var a webhook.Actions
	var err error
	if slices.Contains(in.Actions(), session.ActionApprove) {
		if a.Approve, err = link(session.ActionApprove); err != nil {
			return nil, err
		}
	}
	if slices.Contains(in.Actions(), session.ActionReject) {
		if a.Reject, err = link(session.ActionReject); err != nil {
			return nil, err
		}
	}
	return &a, nil
}

// linkActor is who an action link of endpoint w decides as.
func linkActor(w webhook.Subscription) session.Actor {
	if w.Person != nil {
		// Issued to one person: the link decides as them.
		a := *w.Person
		a.Via, a.Override = session.ViaActionLink, false
		return a
	}
	a := session.Actor{Name: w.Name, Role: "action-link", Subject: "action_link:" + w.Name, Groups: w.Groups, Tenant: w.Tenant, Via: session.ViaActionLink}
	if w.Tenant == webhook.AllTenants {
		a.Tenant, a.AllTenants = "", true
	}
	return a
}

// ReadActionLink is cairn.Runner.ReadActionLink (documented there).
func (r *Runner) ReadActionLink(ctx context.Context, token string) (*webhook.ActionLink, error) {
	link, _, err := r.readActionLink(ctx, token)
	return link, err
}

// readActionLink checks an action link and returns it with the session it
// was issued for, read once.
func (r *Runner) readActionLink(ctx context.Context, token string) (*webhook.ActionLink, *session.Session, error) {
	if r.hooks == nil {
		return nil, nil, fmt.Errorf("%w: this server sends no webhooks, so it signed no action link", session.ErrInvalidLink)
	}
	link, err := r.hooks.links.verify(ctx, token)
	if err != nil {
		return nil, nil, err
	}
	if link.ExpiresAt != nil && !r.now().Before(*link.ExpiresAt) {
		return nil, nil, &session.Error{Code: session.CodeExpired, Interrupt: link.InterruptID,
			Message: fmt.Sprintf("this link expired at %s, with the approval it decides", link.ExpiresAt.UTC().Format(time.RFC3339))}
	}
	sess, err := r.issuedFor(ctx, link.SessionID, link.Nonce, "link")
	if err != nil {
		return nil, nil, err
	}
	return link, sess, nil
}

// issuedFor returns the session a link or callback URL (what) was issued
// for: the one stored under id if its nonce is nonce. One purged since
// is gone (ErrGone, 410), whether its id is free or used by a later
// session; an id never purged (or whose tombstone retention let go) is
// not found.
func (r *Runner) issuedFor(ctx context.Context, id, nonce, what string) (*session.Session, error) {
	sess, err := r.Session(ctx, id)
	if err == nil {
		if sess.Nonce == nonce {
			return sess, nil
		}
		return nil, &session.Error{Code: session.CodeGone, Message: fmt.Sprintf(
			"session %s was purged, and its id is used by a later session: this %s was issued for the earlier one and acts no more", id, what)}
	}
	if session.CodeOf(err) != session.CodeNotFound {
		return nil, err
	}
	if p, ok := r.store.(store.Purger); ok {
		if t, terr := p.Tombstone(ctx, id); terr == nil {
			return nil, &session.Error{Code: session.CodeGone, Message: fmt.Sprintf(
				"session %s was purged at %s: this %s acts no more", id, t.PurgedAt.UTC().Format(time.RFC3339), what)}
		}
	}
	return nil, err
}

// FollowActionLink is cairn.Runner.FollowActionLink (documented there).
func (r *Runner) FollowActionLink(ctx context.Context, token, reason string, opts *TurnOptions) (*session.Session, error) {
	link, sess, err := r.readActionLink(ctx, token)
	if err != nil {
		return nil, err
	}
	if !slices.ContainsFunc(sess.Interrupts, func(in session.Interrupt) bool { return in.ID == link.InterruptID }) {
		return nil, &session.Error{Code: session.CodeConflict, Interrupt: link.InterruptID,
			Message: fmt.Sprintf("interrupt %s of session %s no longer waits: this link was used, or it was decided another way", link.InterruptID, link.SessionID)}
	}
	o := TurnOptions{}
	if opts != nil {
		o = *opts
	}
	// A person signed in to follow the link decides as themselves (and is
	// checked so); otherwise the link's receiver does, with its groups.
	if o.Actor.Trusted() || o.Actor.Via == session.ViaActionLink {
		w := webhook.Subscription{Name: link.Endpoint}
		for _, e := range r.hooks.endpoints {
			if e.Name == link.Endpoint {
				w = e
			}
		}
		o.Actor = linkActor(w)
	}
	d := session.Decision{InterruptID: link.InterruptID, Action: link.Action}
	if link.Action == session.ActionReject {
		d.Reason = cmp.Or(reason, "rejected through an action link")
	}
	return r.Resume(ctx, link.SessionID, sess.Seq, []session.Decision{d}, &o)
}

// linkSigner signs action links with a key kept in the store, so every
// runner on it checks the links of the others.
type linkSigner struct{ tokenSigner }

func newLinkSigner(secrets store.Secrets) *linkSigner {
	return &linkSigner{tokenSigner{secrets: secrets, keyName: actionLinkKeyName, prefix: linkPrefix}}
}

// actionLinkKeyName is where the links' key is kept in the store.
const actionLinkKeyName = "action-link-hmac-v1"

// linkPrefix versions the token format: "al1.<payload>.<mac>" (see
// tokenSigner).
const linkPrefix = "al1."

// linkClaims is a link token's payload.
type linkClaims struct {
	Session   string         `json:"s"`
	Nonce     string         `json:"n,omitempty"` // the session's; none in links signed before nonces
	Interrupt string         `json:"i"`
	Action    session.Action `json:"a"`
	Endpoint  string         `json:"w,omitempty"`
	Expires   int64          `json:"e,omitempty"` // unix seconds; 0: none
}

func (l *linkSigner) sign(ctx context.Context, link webhook.ActionLink) (string, error) {
	c := linkClaims{Session: link.SessionID, Nonce: link.Nonce, Interrupt: link.InterruptID, Action: link.Action, Endpoint: link.Endpoint}
	if link.ExpiresAt != nil {
		c.Expires = link.ExpiresAt.Unix()
	}
	return l.seal(ctx, c)
}

func (l *linkSigner) verify(ctx context.Context, token string) (*webhook.ActionLink, error) {
	bad := func(why string) error {
		return &session.Error{Code: session.CodeInvalidLink, Message: "invalid action link: " + why + "; use the link exactly as the webhook sent it"}
	}
	var c linkClaims
	if err := l.open(ctx, token, &c, bad, "not a Cairn action link"); err != nil {
		return nil, err
	}
	if c.Session == "" || c.Interrupt == "" || (c.Action != session.ActionApprove && c.Action != session.ActionReject) {
		return nil, bad("the payload is malformed")
	}
	link := &webhook.ActionLink{SessionID: c.Session, Nonce: c.Nonce, InterruptID: c.Interrupt, Action: c.Action, Endpoint: c.Endpoint}
	if c.Expires != 0 {
		at := time.Unix(c.Expires, 0).UTC()
		link.ExpiresAt = &at
	}
	return link, nil
}
