// Package webhook delivers Cairn's webhooks: signed JSON POSTs following
// the Standard Webhooks specification (https://www.standardwebhooks.com),
// sent at least once from a store's outbox (store.Outbox) by whichever
// process claims each message, retried with exponential backoff.
//
// The runner writes the messages (cairn.RunnerOptions.Webhooks) in the same
// commit as the events they announce, so a crash can delay a delivery but
// never lose one; a receiver deduplicates by the webhook-id header, which
// stays the same across retries.
package webhook

import (
	"strings"
	"time"

	"github.com/cairnhq/cairn/session"
)

// EventType is the "type" of a payload, and what an endpoint subscribes to.
type EventType string

// Event types.
const (
	// InterruptCreated: a session paused on an interrupt no earlier pause
	// listed (an approval, a question, an interactive agent's message).
	// Approvals carry approve and reject action links, questions a reject link.
	InterruptCreated EventType = "interrupt.created"
	// InterruptDecided: a person (or a remembered decision) decided an interrupt.
	InterruptDecided EventType = "interrupt.decided"
	// InterruptExpired: an approval passed its deadline and counts as
	// rejected, or a wait on a system passed its deadline (Data.Wait says
	// what happens next).
	InterruptExpired EventType = "interrupt.expired"
	// InterruptCompleted: a call that waited on a system or on the caller
	// was completed or failed (by its callback URL, a decision or
	// Runner.Complete).
	InterruptCompleted EventType = "interrupt.completed"
	// InterruptReminder: a step of a pending interrupt's schedule reminds
	// the people who may decide it (Data.Interrupt, Data.Escalation), with
	// fresh action links.
	InterruptReminder EventType = "interrupt.reminder"
	// InterruptEscalated: a step of a pending interrupt's schedule added
	// approver groups, or handed the decision to them: the receivers of
	// those groups get action links.
	InterruptEscalated EventType = "interrupt.escalated"
	// SessionCompleted: a turn ended with the root agent's answer.
	SessionCompleted EventType = "session.completed"
	// SessionFailed: a turn failed.
	SessionFailed EventType = "session.failed"
)

// EventTypes lists every event type, in the order of the constants.
func EventTypes() []EventType {
	return []EventType{InterruptCreated, InterruptDecided, InterruptExpired, InterruptCompleted, InterruptReminder, InterruptEscalated, SessionCompleted, SessionFailed}
}

// EventTypeNames lists the event types, for messages that name them.
func EventTypeNames() string {
	names := make([]string, 0, len(EventTypes()))
	for _, t := range EventTypes() {
		names = append(names, string(t))
	}
	return strings.Join(names, ", ")
}

// Payload is the body of a delivery, in the envelope Standard Webhooks
// recommends.
type Payload struct {
	Type      EventType `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	Data      Data      `json:"data"`
}

// Data is what a payload is about. Fields not listed for a type are absent.
type Data struct {
	SessionID string `json:"session_id"`
	// Agent is the session's root agent.
	Agent string `json:"agent"`
	// Tenant is the session's tenant (absent: the default tenant).
	Tenant string `json:"tenant,omitempty"`
	// Seq is the session's seq after the commit that made the event: the
	// seq a decision names (interrupt.created). Receivers order a session's
	// payloads by it; deliveries may arrive out of order.
	Seq int64 `json:"seq"`
	// Interrupt is the interrupt created (interrupt.created), or as a step
	// of its schedule left it (interrupt.reminder, interrupt.escalated).
	Interrupt *session.Interrupt `json:"interrupt,omitempty"`
	// Escalation is the step that fired (interrupt.reminder,
	// interrupt.escalated): its rule, and the groups it escalated to.
	Escalation *session.EscalationFired `json:"escalation,omitempty"`
	// Actions are the signed one-time links that decide it without a token
	// (interrupt.created, approvals and questions).
	Actions *Actions `json:"actions,omitempty"`
	// Decision is the decision event's data (interrupt.decided,
	// interrupt.completed, and interrupt.expired for an approval):
	// interrupt_id, kind, tool, action, reason, output, actor…
	Decision *session.DecisionMade `json:"decision,omitempty"`
	// Wait is the wait_expired event's data (interrupt.expired for a wait
	// on a system): interrupt_id, tool, outcome, attempt.
	Wait *session.WaitExpired `json:"wait,omitempty"`
	// Output is the root agent's answer (session.completed).
	Output string `json:"output,omitempty"`
	// Error is why the turn failed (session.failed).
	Error *session.Failure `json:"error,omitempty"`
}

// Actions are absolute action links: a GET shows a confirmation page, the
// POST it submits decides. Each works once and expires with its interrupt.
type Actions struct {
	Approve string `json:"approve,omitempty"`
	Reject  string `json:"reject,omitempty"`
	// SpeaksFor are the approver groups the links decide for (the
	// receiver's configured groups).
	SpeaksFor []string `json:"speaks_for,omitempty"`
	// IssuedTo names the person the links were issued to (a receiver
	// configured for one person): they decide as that person.
	IssuedTo string `json:"issued_to,omitempty"`
}
