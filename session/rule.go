package session

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// RuleScope is where a standing rule applies.
type RuleScope string

// Where a standing rule applies.
const (
	// ScopeSession: the calls of the tool by the agent in the session the
	// rule was granted in.
	ScopeSession RuleScope = "session"
	// ScopeAgent: the calls of the tool by the agent in every session of
	// the grantor's tenant.
	ScopeAgent RuleScope = "agent"
	// ScopeTenant: the calls of the tool by any agent in every session of
	// the grantor's tenant.
	ScopeTenant RuleScope = "tenant"
)

// Valid reports whether s is a scope.
func (s RuleScope) Valid() bool {
	return s == ScopeSession || s == ScopeAgent || s == ScopeTenant
}

// DefaultRuleDuration is how long a standing rule lasts when its grant
// names no duration (and the tool allows that long).
const DefaultRuleDuration = 30 * 24 * time.Hour

// RuleDurationUnbounded is the Grant.Duration of a rule that never
// expires: refused unless the tool's configuration allows it.
const RuleDurationUnbounded = "unbounded"

// MaxRuleCondition is the longest condition (Rule.If) a grant may carry.
const MaxRuleCondition = 1024

// RuleGrant, on a decision (Decision.Rule), turns it into a standing rule:
// the call is decided, and later calls of the same tool that the condition
// matches are decided the same way, without asking, until the rule expires
// or is revoked.
type RuleGrant struct {
	// Scope is where the rule applies; empty: ScopeAgent.
	Scope RuleScope `json:"scope,omitempty"`
	// If is a CEL expression over args (the call's arguments) that a call
	// must satisfy; empty: every call of the tool.
	If string `json:"if,omitempty"`
	// Duration is how long the rule lasts: a Go duration ("72h") or a
	// number of days ("30d"); empty: DefaultRuleDuration, or the tool's
	// maximum if shorter. RuleDurationUnbounded never expires.
	Duration string `json:"duration,omitempty"`
}

// Rule is a standing rule: a decision a person made once for every
// matching call of a tool, within a scope, until it expires or is revoked.
// A rule decides only calls its grantor may decide (the call's approvers
// are checked against the grantor, as recorded when granted), never a call
// that needs several approvers or forbids its requester, and a rejecting
// rule wins over an approving one.
type Rule struct {
	// ID is "rul_" and a digest of the session and the interrupt whose
	// decision granted it.
	ID     string    `json:"id"`
	Tool   string    `json:"tool"`
	Agent  string    `json:"agent,omitempty"` // empty for ScopeTenant
	Action Action    `json:"action"`          // ActionApprove or ActionReject
	If     string    `json:"if,omitempty"`
	Scope  RuleScope `json:"scope"`
	// Session is the session a ScopeSession rule applies in (and, for the
	// others, the one it was granted in: Interrupt is of it).
	Session   string `json:"session_id"`
	Interrupt string `json:"interrupt_id"`
	Tenant    string `json:"tenant,omitempty"`
	// Reason, on a rejecting rule, is what the model reads.
	Reason    string    `json:"reason,omitempty"`
	GrantedBy Actor     `json:"granted_by"`
	GrantedAt time.Time `json:"granted_at"`
	// ExpiresAt is nil for a rule that never expires.
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	// Uses counts the decisions the rule made.
	Uses      int64      `json:"uses"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
	RevokedBy *Actor     `json:"revoked_by,omitempty"`
}

// LiveAt reports whether r decides calls at t: not revoked, not expired.
func (r *Rule) LiveAt(t time.Time) bool {
	return r.RevokedAt == nil && (r.ExpiresAt == nil || t.Before(*r.ExpiresAt))
}

// Covers reports whether r's scope takes a call of tool by agent in the
// session sessionID of tenant (its condition aside).
func (r *Rule) Covers(tenant, sessionID, agent, tool string) bool {
	if r.Tool != tool || r.Tenant != tenant {
		return false
	}
	switch r.Scope {
	case ScopeSession:
		return r.Session == sessionID && r.Agent == agent
	case ScopeAgent:
		return r.Agent == agent
	case ScopeTenant:
		return true
	}
	return false
}

// ParseRuleDuration reads a grant's duration: a Go duration ("72h",
// "90m") or whole days ("30d"); 0 with ok for RuleDurationUnbounded.
func ParseRuleDuration(s string) (d time.Duration, unbounded bool, err error) {
	s = strings.TrimSpace(s)
	if s == RuleDurationUnbounded {
		return 0, true, nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n <= 0 || n > 100*365 {
			return 0, false, fmt.Errorf("%q is not a whole number of days like 30d", s)
		}
		return time.Duration(n) * 24 * time.Hour, false, nil
	}
	d, err = time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, false, fmt.Errorf("%q is not a positive duration like 72h or 30d", s)
	}
	return d, false, nil
}

// ConditionFor is a standing rule's condition that args (a call's
// arguments, a JSON object) satisfy: each top-level string, number or
// boolean equals its value, in key order ("args.env == \"staging\" &&
// args.replicas == 2"); "" when there is none. The doors pre-fill a
// grant with it.
func ConditionFor(args json.RawMessage) string {
	var m map[string]any
	if json.Unmarshal(args, &m) != nil {
		return ""
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		if !identifier(k) {
			continue
		}
		switch v := m[k].(type) {
		case string, float64, bool:
			b, _ := json.Marshal(v) // a CEL literal: strings are quoted as in JSON
			parts = append(parts, "args."+k+" == "+string(b))
		}
	}
	return strings.Join(parts, " && ")
}

// identifier reports whether k can follow "args." in CEL.
func identifier(k string) bool {
	for i, c := range k {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return k != ""
}

// Suggestion is a standing rule the inbox offers on an approval: calls of
// the same tool by the same agent with the same argument shape (the
// condition ConditionFor makes) were approved, as asked, many times by
// several people and never rejected or edited.
type Suggestion struct {
	// Rule is the grant to send with an approval to take it (its
	// condition is the call's shape), and what it would decide.
	Rule SuggestedRule `json:"rule"`
	// Evidence is what supports it.
	Evidence Evidence `json:"evidence"`
}

// SuggestedRule is a suggestion's rule: a RuleGrant and what it decides.
type SuggestedRule struct {
	Action Action    `json:"action"`
	Tool   string    `json:"tool"`
	Agent  string    `json:"agent"`
	Scope  RuleScope `json:"scope"`
	If     string    `json:"if"`
	// Duration is the grant's (the tool's maximum, at most 30 days).
	Duration string `json:"duration"`
}

// Evidence is the decision history behind a suggestion: Approvals
// approvals of the call's shape by People distinct people, the first of
// them at Since, none rejected or edited.
type Evidence struct {
	Approvals int       `json:"approvals"`
	People    int       `json:"people"`
	Since     time.Time `json:"since"`
}

// Grant is the RuleGrant that takes suggestion s.
func (s *Suggestion) Grant() *RuleGrant {
	return &RuleGrant{Scope: s.Rule.Scope, If: s.Rule.If, Duration: s.Rule.Duration}
}

// FormatRuleDuration writes d as ParseRuleDuration reads it: whole days
// as "30d", else a Go duration.
func FormatRuleDuration(d time.Duration) string {
	if d > 0 && d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	return d.String()
}

// RuleQuery selects the standing rules a listing shows.
type RuleQuery struct {
	// Tool, when set, keeps that tool's rules.
	Tool string
	// All lists revoked and expired rules too; else the live ones.
	All bool
}

// SuggestionPolicy says when the inbox offers a standing rule: the same
// call (tool, agent, argument shape) approved as asked at least
// MinApprovals times by at least MinPeople people, never rejected or
// edited. Zero fields take the defaults (20, 2); Off offers none.
type SuggestionPolicy struct {
	MinApprovals, MinPeople int
	Off                     bool
}

// AnalyticsBy is what the rows of approval analytics are per.
type AnalyticsBy string

// What analytics rows are per.
const (
	ByTool     AnalyticsBy = "tool"
	ByAgent    AnalyticsBy = "agent"
	ByApprover AnalyticsBy = "approver"
)

// Valid reports whether b is one of them.
func (b AnalyticsBy) Valid() bool { return b == ByTool || b == ByAgent || b == ByApprover }

// DefaultReadTime is the time below which an approval counts as fast (a
// rubber-stamp signal) unless the query says otherwise.
const DefaultReadTime = 5 * time.Second

// AnalyticsQuery selects the decisions approval analytics count.
type AnalyticsQuery struct {
	// Since and Until bound the decisions' times: Since ≤ t < Until; zero
	// ones do not bound.
	Since, Until time.Time
	// By is what a row is per; empty: ByTool.
	By AnalyticsBy
	// ReadTime: an approval decided faster than it is a fast approval;
	// zero: DefaultReadTime.
	ReadTime time.Duration
}

// Analytics are figures of the approval process (docs/analytics.md).
type Analytics struct {
	By    AnalyticsBy `json:"by"`
	Since time.Time   `json:"since,omitzero"`
	Until time.Time   `json:"until,omitzero"`
	// ReadTimeMs is the read time FastApprovals counts against.
	ReadTimeMs int64          `json:"read_time_ms"`
	Rows       []AnalyticsRow `json:"rows"`
}

// AnalyticsRow is the figures of one tool, agent or approver (Key).
type AnalyticsRow struct {
	Key string `json:"key"`
	// Pending: approvals waiting now (rows by tool or agent).
	Pending int `json:"pending"`
	// Decisions: decided approvals, by anyone: Approved + Rejected +
	// Expired.
	Decisions int `json:"decisions"`
	Approved  int `json:"approved"`
	Rejected  int `json:"rejected"`
	// Edited: approved with other arguments (counted in Approved too).
	Edited int `json:"edited"`
	// Expired: decided by their deadline (on_expiry), by no one.
	Expired int `json:"expired"`
	// ByRule: decided by a standing rule (counted in Approved or Rejected).
	ByRule int `json:"by_rule"`
	// TimeToDecision: from asked to decided, of the decisions people made.
	TimeToDecision Quantiles `json:"time_to_decision_ms"`
	// FastApprovals: people's approvals faster than the read time.
	FastApprovals int `json:"fast_approvals"`
	// LongestStreak: the longest run of people's approvals as asked, with
	// no rejection or edit between them, in decision order.
	LongestStreak int `json:"longest_streak"`
}

// Quantiles are the median and the 90th percentile, in milliseconds.
type Quantiles struct {
	P50 int64 `json:"p50"`
	P90 int64 `json:"p90"`
}
