package webhook

import (
	"slices"
	"time"

	"github.com/cairnhq/cairn/session"
)

// Subscription is an endpoint told about sessions (in
// cairn.RunnerOptions.Webhooks): interrupts created, decided and expired, turns completed and failed (EventTypes lists them; Payload is
// what each POST carries). Deliveries are Standard Webhooks POSTs, signed
// with Secret, sent at least once from the store's outbox by whichever
// runner on the store claims them, retried with exponential backoff.
// Sessions of stateless invocations (Invoke, Continue) send none.
type Subscription struct {
	// Name identifies the endpoint in the outbox and in the audit trail of
	// decisions made through its action links; empty means URL. Renaming
	// an endpoint gives up its undelivered messages.
	Name string
	// URL receives the POSTs.
	URL string
	// Secret signs them: "whsec_" followed by base64.
	Secret string
	// Events are the event types it hears; empty means all of them.
	Events []EventType
	// Timeout bounds one delivery attempt; 0 means 10 s. A runner that
	// stops mid-delivery leaves the message to another (or to itself,
	// restarted) about 10 s after the timeout.
	Timeout time.Duration
	// Groups are the approver groups the receiver speaks for: its action
	// links decide as a member of them, and it gets links only for the
	// interrupts such a member decides (those with no approver groups, or
	// with one of these). Empty: links only for interrupts that name no
	// approver groups.
	Groups []string
	// Tenant is the tenant whose sessions the receiver hears ("" the
	// default tenant, AllTenants every tenant): a receiver never hears of,
	// nor gets links for, another tenant's sessions.
	Tenant string
	// Person, when set, is the one person the receiver's links are issued
	// to (a personal inbox): a link decides as them (their subject, so a
	// four-eyes approval through it and through their token counts once),
	// with their groups and in their tenant, which replace Groups and
	// Tenant. Its Via is ignored (a link's is ViaActionLink).
	Person *session.Actor
}

// AllTenants is the Subscription.Tenant of a receiver of every tenant.
const AllTenants = "*"

// Hears reports whether s hears of the sessions of tenant.
func (s *Subscription) Hears(tenant string) bool {
	if s.Person != nil {
		return s.Person.Tenant == tenant || s.Person.AllTenants
	}
	return s.Tenant == tenant || s.Tenant == AllTenants
}

// Wants reports whether s hears events of type typ.
func (s *Subscription) Wants(typ EventType) bool {
	return len(s.Events) == 0 || slices.Contains(s.Events, typ)
}
