// Package local is the local driver (driver: local in the config, the
// default): the machinery behind package cairn's Runner, which runs the
// engine (package internal/engine) in this process, performs its effects
// and records its steps in a store, for one process or many sharing the
// store. (It was internal/runtime, a name the standard library has.)
//
// Package cairn holds what a library user reads (agents, tools, policies,
// options, errors) and compiles it into the Agent and Tool forms here; its
// Runner delegates every method to this package's Runner. The files, by
// concept:
//
//   - runner.go: New, the options and their defaults, Close.
//   - tool.go, toolset.go: agents and tools as the runner takes them, and
//     the compiled set a step sees (replaced whole when a toolset changes).
//   - agentinfo.go: what GET /v1/agents describes.
//   - sessions.go: the calls that start or resume a turn, and the reads.
//   - page.go: listings a page at a time (sessions, the inbox by kind).
//   - load.go, cache.go: a session's state, from the cache or the store.
//   - drive.go: a turn's loop: apply an input, perform the effects, commit.
//   - commit.go, snapshot.go: one step's events in one store write, with
//     the head and the snapshots it carries.
//   - effects.go, workers.go: model calls and tool calls, the tool workers.
//   - bulk.go: bulk decisions (DecideMany): a list or a selector, each
//     call decided as Resume decides it.
//   - fork.go: forks of a session at a pause (Fork).
//   - preview.go: the dry runs of approvals about to be asked for
//     (previews), and Preview for edited arguments.
//   - ask.go: a tool's questions to the user and their answers.
//   - complete.go: completions of calls that wait (Complete, callback URLs).
//   - approvals.go: approval requests for calls the caller makes (sessions
//     of a direct agent), read as where their approval stands.
//   - lease.go: who owns a running turn, renewals, takeover, shutdown, cancel.
//   - expiry.go: approvals and waits past their deadline.
//   - rules.go: standing rules: read with a model reply, written with the
//     decisions that grant and use them, listed and revoked; decision
//     records and the inbox's suggestions.
//   - analytics.go: approval analytics from the decision records.
//   - definition.go: the definition each session runs under (its agent's,
//     hashed and stored once), and the machines rebuilt for sessions
//     pinned to one the deployment no longer has.
//   - retention.go: purges of finished sessions, and their tombstones.
//   - hub.go, feed.go, follow.go, stream.go: the live fan-out of one
//     session's events and of the changes to every session, and the
//     iterators over them; the turn options.
//   - continuation.go: stateless invocations (Invoke, Continue).
//   - webhooks.go, signer.go: the outbox messages of a commit, signed
//     action links, and the token signer they share with callback URLs.
//   - errors.go: a store's refusals worded as the runner's.
//   - driver.go: Core, what a durable driver (driver/temporal) runs.
//   - metrics.go, tracing.go: OpenTelemetry.
//
// Its tests are beside it: white-box ones in package local, and the
// Runner's behaviour through the public API (package cairn) in package
// local_test, a file per concept (durability_test.go for crashes and
// takeovers, replicas_test.go for several runners on one store,
// wait_test.go for calls that finish later, and so on).
package local
