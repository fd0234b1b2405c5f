package session

// Change is one entry of the cross-session feed (cairn.Runner.Changes).
type Change struct {
	// Session is the session as recorded after the change: its status, its
	// pending interrupts. Nil when Resync is set.
	Session *Session
	// Resync says that changes may have been missed (the store's feed
	// reconnected, or this watcher fell behind): reload what you show.
	Resync bool
}
