package cairn

import (
	"github.com/cairnhq/cairn/continuation"
	"github.com/cairnhq/cairn/driver"
	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/webhook"
)

// What a Runner hands back, and what it works with, defined in the packages
// of each concept and re-exported here so that a program needs only
// package cairn.
type (
	// AgentInfo describes an agent for clients (GET /v1/agents): its tools
	// and when each waits for a person.
	AgentInfo = session.AgentInfo
	// ToolInfo describes one tool of an agent.
	ToolInfo = session.ToolInfo
	// ApprovalRuleInfo is one approval rule of a tool, as GET /v1/agents shows it.
	ApprovalRuleInfo = session.ApprovalRuleInfo
	// ActionLink is what a signed action link does: decide one interrupt
	// with one action (Runner.ReadActionLink).
	ActionLink = webhook.ActionLink
	// Result is the answer of a stateless invocation (Runner.Invoke,
	// Runner.Continue).
	Result = continuation.Result
	// Continuation is the decoded content of a continuation token.
	Continuation = continuation.Continuation
	// Codec signs and verifies continuation tokens.
	Codec = continuation.Codec
	// Driver runs a Runner's turns outside its process
	// (RunnerOptions.Driver; package driver/temporal).
	Driver = driver.Driver
)

// ActionLinkPath is where action links point, under RunnerOptions.PublicURL;
// the token follows.
const ActionLinkPath = webhook.ActionLinkPath

// MaxContinuationBytes bounds the size of a continuation token.
const MaxContinuationBytes = continuation.MaxBytes

// NewCodec returns a continuation codec for keys (at least one, each at
// least 32 bytes): the first signs, every one verifies.
func NewCodec(keys ...[]byte) (*Codec, error) { return continuation.NewCodec(keys...) }
