// Package runtime is the machinery behind package cairn's Runner: the
// in-process driver of the engine (package internal/engine), which performs
// its effects and records its steps in a store, for one process or many
// sharing the store.
//
// Package cairn holds what a library user reads (agents, tools, policies,
// options, errors) and compiles it into the Agent and Tool forms here; its
// Runner delegates every method to this package's Runner. The files, by
// concept:
//
//   - runner.go: New, the options and their defaults, Close.
//   - sessions.go: the calls that start or resume a turn, and the reads.
//   - load.go, cache.go: a session's state, from the cache or the store.
//   - drive.go: a turn's loop: apply an input, perform the effects, commit.
//   - commit.go, snapshot.go: one step's events in one store write, with
//     the head and the snapshots it carries.
//   - effects.go: model calls and tool calls.
//   - lease.go: who owns a running turn, renewals, takeover, shutdown, cancel.
//   - expiry.go: approvals past their TTL.
//   - hub.go, feed.go: the live fan-out of one session's events and of the
//     changes to every session.
//   - continuation.go: stateless invocations (Invoke, Continue).
//   - webhooks.go: the outbox messages of a commit, and signed action links.
//   - driver.go: Core, what a durable driver (driver/temporal) runs.
//   - metrics.go, tracing.go: OpenTelemetry.
package runtime
