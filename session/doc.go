// Package session is the vocabulary of a Cairn session, shared by the
// deterministic engine, the stores, the runner and the HTTP server: what a
// session is (Session, Status), what it records (Event and its types), what
// it waits for (Interrupt), how a person answers (Decision, Actor) and who
// may (Authority, the one decision point every door's decisions pass).
//
// Each concept is defined here once. Package cairn re-exports the names a
// program needs (cairn.Session is session.Session), so most code imports
// only cairn; the engine and the stores import this package, which imports
// nothing of Cairn's but package model.
package session
