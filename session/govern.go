package session

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Roles, from least to most trusted. An Actor's Role is one of these when
// a person acts; the runner's own decisions (an auto-approval, an expiry, a
// recovery) record other roles under the name "cairn".
const (
	RoleUser     = "user"     // starts sessions, speaks in its own, answers its own questions
	RoleApprover = "approver" // also decides interrupts and reads every session of its tenant
	RoleAdmin    = "admin"    // everything in its tenant
)

// Via is how an actor was authenticated.
type Via string

// How an actor was authenticated.
const (
	// ViaToken: a static bearer token of the configuration.
	ViaToken Via = "token"
	// ViaOIDC: a bearer JWT, or a web sign-in, from the OpenID Provider.
	ViaOIDC Via = "oidc"
	// ViaActionLink: a signed action link, issued to a person.
	ViaActionLink Via = "action_link"
	// ViaCallback: a signed callback URL, handed to a system.
	ViaCallback Via = "callback"
)

// Actor is who acts: recorded in the event of every decision, message and
// cancellation for the audit trail, and what the decision point (Authority)
// checks.
//
// An Actor with no Via is the program that holds the Runner: it is trusted
// with every decision, as the code that could write the store is. Every door
// that people use (the server, action links, MCP) sets Via, and is then
// checked against the interrupt's approvers.
type Actor struct {
	// Name is the display name (a token's name, an ID token's name claim).
	Name string `json:"name,omitempty"`
	// Role is RoleUser, RoleApprover or RoleAdmin for a person.
	Role string `json:"role,omitempty"`
	// Subject and Issuer identify the person: two actors with the same pair
	// are one person, whatever token or door they came through. A static
	// token's subject is its configured subject, or its name; its issuer is
	// empty.
	Subject string `json:"subject,omitempty"`
	Issuer  string `json:"issuer,omitempty"`
	// Groups the person is in (from the token's configuration or the
	// provider's groups claim).
	Groups []string `json:"groups,omitempty"`
	// Tenant the person acts in: they see and decide only the sessions of
	// that tenant ("" is the default tenant), and the sessions they start
	// belong to it.
	Tenant string `json:"tenant,omitempty"`
	// Via is how the person was authenticated; empty for the program.
	Via Via `json:"via,omitempty"`
	// Override marks a decision an admin made outside the interrupt's
	// approvers (where Authority.AdminOverride allows it).
	Override bool `json:"override,omitempty"`
	// AllTenants marks a global actor, explicit in the configuration (a
	// token with tenant "*"): they see and decide the sessions of every
	// tenant. Their own sessions belong to Tenant. (Beside Override, so
	// that an Actor stays 128 bytes: a larger one a closure captures is
	// moved to the heap, an allocation on every decision.)
	AllTenants bool `json:"all_tenants,omitempty"`
}

// IsZero reports whether a is no one (nothing recorded).
func (a Actor) IsZero() bool {
	return a.Name == "" && a.Role == "" && a.Subject == "" && a.Issuer == "" && len(a.Groups) == 0 && a.Tenant == "" && !a.AllTenants && a.Via == "" && !a.Override
}

// InTenant reports whether a may see and decide the sessions of tenant:
// a's own tenant, every tenant for a global actor (AllTenants) and for the
// program (Trusted). Every door answers a session of another tenant as
// one that does not exist.
func (a Actor) InTenant(tenant string) bool {
	// A callback URL is signed for one call of one session: it is the
	// credential, whoever holds it.
	return a.Tenant == tenant || a.EveryTenant() || a.Via == ViaCallback
}

// EveryTenant reports whether a sees every tenant's sessions: a global
// actor (AllTenants) or the program (Trusted). Listings for anyone else
// are of their tenant.
func (a Actor) EveryTenant() bool { return a.AllTenants || a.Trusted() }

// Identity is the person an actor is: the same for every token or door of
// one subject, "" for the program.
func (a Actor) Identity() string {
	sub := a.Subject
	if sub == "" {
		sub = a.Name
	}
	if sub == "" {
		return ""
	}
	return a.Issuer + "\x00" + sub
}

// ValidTenant reports whether t is a tenant name: 1 to 64 letters,
// digits, '.', '_' and '-' ("" is the default tenant, and is valid
// wherever a tenant may be left out).
func ValidTenant(t string) bool {
	if len(t) == 0 || len(t) > 64 {
		return false
	}
	for _, c := range t {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// Trusted reports whether a is the program that holds the Runner (no Via).
func (a Actor) Trusted() bool { return a.Via == "" }

// Who names the actor in messages.
func (a Actor) Who() string {
	switch {
	case a.Name != "":
		return a.Name
	case a.Subject != "":
		return a.Subject
	}
	return "an anonymous caller"
}

// InGroup reports whether a is in one of groups.
func (a Actor) InGroup(groups []string) bool {
	for _, g := range a.Groups {
		if slices.Contains(groups, g) {
			return true
		}
	}
	return false
}

// atLeast reports whether a's role is role or a more trusted one.
func (a Actor) atLeast(role string) bool { return RoleAtLeast(a.Role, role) }

// RoleAtLeast reports whether role is least or a more trusted one (user <
// approver < admin; any other role ranks below user).
func RoleAtLeast(role, least string) bool { return roleRank(role) >= roleRank(least) }

func roleRank(role string) int {
	switch role {
	case RoleUser:
		return 1
	case RoleApprover:
		return 2
	case RoleAdmin:
		return 3
	}
	return 0
}

// Approvers says who may approve a tool's calls: the config's `approvers`
// (per tool or per agent) or the first `approval_rules` entry whose
// condition holds.
type Approvers struct {
	// Groups, when set, are the groups one of which an approver must be in.
	Groups []string `json:"groups,omitempty"`
	// Count is how many distinct people must approve (four-eyes: 2); 0 or
	// 1: one.
	Count int `json:"count,omitempty"`
	// NotRequester forbids the person who started the session, or whose
	// message led to the call, from approving it (separation of duties).
	NotRequester bool `json:"not_requester,omitempty"`
}

// Restricts reports whether p limits who approves beyond the role.
func (p *Approvers) Restricts() bool {
	return p != nil && (len(p.Groups) > 0 || p.Count > 1 || p.NotRequester)
}

// Approval is one person's approval of a call that needs several
// (Interrupt.Approvals).
type Approval struct {
	Actor Actor     `json:"actor"`
	At    time.Time `json:"at"`
}

// Authority is the one decision point: who may decide an interrupt. The
// engine asks it for every decision, whichever door brought it (REST, the
// page, chat, MCP, action links, the library, the Temporal driver); the
// inbox asks it which interrupts a person may decide and which they may
// only see.
type Authority struct {
	// AdminOverride lets an admin decide outside an interrupt's approvers
	// (another group, their own request); such a decision records
	// Actor.Override.
	AdminOverride bool
}

// MaySee says whether a may see (and so ask to decide anything of) the
// session id of tenant: nil, or a *Error with CodeNotFound, exactly as for
// a session that does not exist, so another tenant's ids cannot be probed.
func (p Authority) MaySee(a Actor, id, tenant string) error {
	if a.InTenant(tenant) {
		return nil
	}
	return &Error{Code: CodeNotFound, Err: ErrNotFound, Message: fmt.Sprintf("no session %q", id)}
}

// MayDecide says whether a may take action on in, an interrupt of a session
// owned by owner: nil, or a *Error with CodeForbidden (the role does not
// decide this kind), CodeNotAnApprover (not in the approvers' groups, or
// the requester under separation of duties) or CodeAlreadyApproved (a
// second approval by one person). override reports a decision only an
// admin's override allows.
func (p Authority) MayDecide(a Actor, owner string, in *Interrupt, action Action) (override bool, err error) {
	if a.Trusted() {
		return false, nil
	}
	if a.Via == ViaCallback {
		// A callback URL is signed for the one call it settles.
		if action.Completes() {
			return false, nil
		}
		return false, &Error{Code: CodeForbidden, Interrupt: in.ID, Message: fmt.Sprintf("a callback URL completes or fails its call; it does not %s", action)}
	}
	ask := in.Ask()
	ownersOwn := ask.Decider == DeciderOwner && owner != "" && a.Name == owner
	// An action link is issued to a receiver of approval requests: it
	// decides as an approver (and, like one, only within the approvers).
	if !a.atLeast(RoleApprover) && a.Via != ViaActionLink && !ownersOwn {
		if ask.Decider == DeciderOwner {
			return false, &Error{Code: CodeForbidden, Interrupt: in.ID,
				Message: fmt.Sprintf("only the session's owner, an approver or an admin decides %s %s; %s is not", ask.Label, in.ID, describe(a))}
		}
		return false, &Error{Code: CodeForbidden, Interrupt: in.ID,
			Message: fmt.Sprintf("deciding %s %s needs the approver role; %s has %s", ask.Label, in.ID, a.Who(), roleName(a.Role))}
	}
	rules := in.Approvers
	if in.Kind != KindApproval || !rules.Restricts() {
		return false, nil
	}
	admin := p.AdminOverride && a.Role == RoleAdmin
	if len(rules.Groups) > 0 && !a.InGroup(rules.Groups) {
		if !admin {
			return false, &Error{Code: CodeNotAnApprover, Interrupt: in.ID,
				Message: fmt.Sprintf("%s %s is decided by a member of %s; %s is in %s", ask.Label, in.ID, orWords(rules.Groups), a.Who(), groupsOf(a))}
		}
		override = true
	}
	if action != ActionApprove {
		return override, nil
	}
	me := a.Identity()
	if rules.NotRequester {
		for _, r := range in.RequestedBy {
			if me == "" || r.Identity() != me {
				continue
			}
			if !admin {
				return false, &Error{Code: CodeNotAnApprover, Interrupt: in.ID,
					Message: fmt.Sprintf("%s %s may not be approved by %s, who asked for it (separation of duties): another approver decides it", ask.Label, in.ID, a.Who())}
			}
			override = true
		}
	}
	if in.Required > 1 {
		if me == "" {
			return false, &Error{Code: CodeNotAnApprover, Interrupt: in.ID,
				Message: fmt.Sprintf("%s %s needs %d approvals from distinct people; an anonymous caller cannot give one", ask.Label, in.ID, in.Required)}
		}
		for _, got := range in.Approvals {
			if got.Actor.Identity() == me {
				return false, &Error{Code: CodeAlreadyApproved, Interrupt: in.ID, Err: ErrConflict,
					Message: fmt.Sprintf("%s approved %s %s at %s; it needs %d approvals from distinct people, %d so far", a.Who(), ask.Label, in.ID, got.At.UTC().Format(time.RFC3339), in.Required, len(in.Approvals))}
			}
		}
	}
	return override, nil
}

// Decides reports whether a decides in: may take every action it offers
// (the requester of a call under separation of duties may still reject it,
// and someone who approved a four-eyes call may not approve it again, but
// neither decides it). The inbox shows what a person decides apart from
// what they may only see.
func (p Authority) Decides(a Actor, owner string, in *Interrupt) bool {
	ask := in.Ask()
	if ask.Reply {
		// Answered by the next message, which speaks for the session's
		// owner: theirs, or an admin's (or the program's) to send.
		return a.Trusted() || a.Role == RoleAdmin || owner != "" && a.Name == owner
	}
	for _, c := range ask.Choices {
		if _, err := p.MayDecide(a, owner, in, c.Action); err != nil {
			return false
		}
	}
	return len(ask.Choices) > 0
}

func describe(a Actor) string {
	if a.Role == "" {
		return a.Who()
	}
	return a.Who() + " (" + a.Role + ")"
}

func roleName(role string) string {
	if role == "" {
		return "no role"
	}
	return "the " + role + " role"
}

func groupsOf(a Actor) string {
	if len(a.Groups) == 0 {
		return "no group"
	}
	return strings.Join(a.Groups, ", ")
}

// orWords joins words as "a, b or c".
func orWords(words []string) string {
	switch len(words) {
	case 0:
		return ""
	case 1:
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}
