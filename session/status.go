package session

// Status is the lifecycle state of a session.
type Status string

// Session statuses.
const (
	// StatusRunning: a turn is under way (a model or a tool is working).
	StatusRunning Status = "running"
	// StatusPaused: the session waits for the Interrupts in Session.Interrupts.
	StatusPaused Status = "paused"
	// StatusCompleted: the last turn ended with the root agent's answer.
	StatusCompleted Status = "completed"
	// StatusFailed: the last turn failed; Session.Error says why.
	StatusFailed Status = "failed"
	// StatusCancelled: the last turn was cancelled.
	StatusCancelled Status = "cancelled"
)
