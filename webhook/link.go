package webhook

import (
	"time"

	"github.com/cairnhq/cairn/session"
)

// ActionLinkPath is where action links point, under cairn.RunnerOptions.PublicURL;
// the token follows. The HTTP server (package server) serves it.
const ActionLinkPath = "/v1/actions/"

// ActionLink is what a signed action link does: decide one interrupt with
// one action. Webhook payloads carry them (Actions) so an email or
// a chat button decides without a token; each works once.
type ActionLink struct {
	SessionID string
	// Nonce is the nonce of the session the link was issued for
	// (session.Session.Nonce): a link of a purged session never decides
	// for a later one given the same id.
	Nonce       string
	InterruptID string
	// Action is session.ActionApprove or session.ActionReject.
	Action session.Action
	// Endpoint is the webhook the link was sent to; the decision's actor
	// names it ({"name": Endpoint, "role": "action-link", "via":
	// "action_link"}, with the endpoint's Groups), unless a signed-in
	// person follows it (then they are the actor).
	Endpoint string
	// ExpiresAt is the interrupt's deadline; nil: the link lasts while the
	// interrupt waits.
	ExpiresAt *time.Time
}
