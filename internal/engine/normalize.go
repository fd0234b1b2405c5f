package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/cairnhq/cairn/model"
)

// normalizeReply makes a model's assistant message fit to record: a model
// reply is untrusted input. Every tool call gets an id unique within the
// message (OpenAI-compatible servers send empty and repeated ids) and
// canonical argument text (see canonicalArgs). The recorded model_response
// then holds exactly what the engine acts on, so replaying the log rebuilds
// the live state. The caller's message is not modified.
func normalizeReply(msg model.Message) model.Message {
	msg.Role = model.RoleAssistant
	if len(msg.ToolCalls) == 0 {
		msg.ToolCalls = nil
		return msg
	}
	calls := make([]model.ToolCall, len(msg.ToolCalls))
	copy(calls, msg.ToolCalls)
	original := make(map[string]bool, len(calls))
	for _, c := range calls {
		original[c.ID] = true
	}
	taken := make(map[string]bool, len(calls))
	for i := range calls {
		c := &calls[i]
		if c.ID == "" || taken[c.ID] {
			c.ID = freshCallID(i, original, taken)
		}
		taken[c.ID] = true
		c.Arguments = canonicalArgs(c.Arguments)
	}
	msg.ToolCalls = calls
	return msg
}

// freshCallID returns a deterministic id for the i-th call that no call of
// the message has or had.
func freshCallID(i int, original, taken map[string]bool) string {
	base := "call_" + strconv.Itoa(i+1)
	id := base
	for k := 2; original[id] || taken[id]; k++ {
		id = base + "_" + strconv.Itoa(k)
	}
	return id
}

// canonicalArgs is the argument text the engine acts on: empty or blank
// text (some models send "" for a call without arguments) is "{}", valid
// JSON is compacted, and anything else is kept as sent, to become an error
// result the model sees.
func canonicalArgs(s string) string {
	// Text without a byte json.Compact could drop is its own compact form
	// (or invalid, and kept): most models send compact arguments, and
	// every call's arguments come here twice (normalizeReply, then the
	// projection).
	if s != "" && !strings.ContainsAny(s, " \t\r\n") {
		first, _ := utf8.DecodeRuneInString(s)
		last, _ := utf8.DecodeLastRuneInString(s)
		if !unicode.IsSpace(first) && !unicode.IsSpace(last) { // what TrimSpace would cut
			return s
		}
	}
	t := strings.TrimSpace(s)
	if t == "" {
		return "{}"
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(t)); err != nil {
		return s
	}
	return buf.String()
}

// duplicateCallID returns a call id that appears twice in calls, or "".
func duplicateCallID(calls []model.ToolCall) (string, bool) {
	seen := make(map[string]bool, len(calls))
	for _, c := range calls {
		if seen[c.ID] {
			return c.ID, true
		}
		seen[c.ID] = true
	}
	return "", false
}

// guarded runs a user callback (a validator, an approval predicate, a
// confirmation template) and turns a panic into an error, so a broken
// callback fails closed instead of taking the process down.
func guarded[T any](what string, fn func() (T, error)) (v T, err error) {
	defer func() {
		if p := recover(); p != nil {
			var zero T
			v, err = zero, fmt.Errorf("%s panicked: %v", what, p)
		}
	}()
	return fn()
}
