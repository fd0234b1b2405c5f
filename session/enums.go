package session

// The lists below are every value of each string enum that reaches JSON.
// The OpenAPI document's enums are generated from them (server/openapi.go),
// so the TypeScript and Python clients' types follow; TestEnumListsAreEveryConstant
// fails when a constant is added to this package but not to its list.

// AllStatuses lists the session statuses.
func AllStatuses() []Status {
	return []Status{StatusRunning, StatusPaused, StatusCompleted, StatusFailed, StatusCancelled}
}

// AllActions lists the decision actions.
func AllActions() []Action {
	return []Action{ActionApprove, ActionReject, ActionAnswer, ActionEdit, ActionComplete, ActionFail}
}

// AllApprovalStatuses lists where an approval request may stand.
func AllApprovalStatuses() []ApprovalStatus {
	return []ApprovalStatus{ApprovalPending, ApprovalApproved, ApprovalRejected, ApprovalExpired, ApprovalCancelled}
}

// AllPreviewFormats lists the formats of a preview.
func AllPreviewFormats() []PreviewFormat {
	return []PreviewFormat{PreviewText, PreviewDiff, PreviewJSON}
}

// AllModes lists the frame modes.
func AllModes() []Mode { return []Mode{ModeMain, ModeTool, ModeInteractive} }

// AllCancelScopes lists the cancel scopes.
func AllCancelScopes() []CancelScope { return []CancelScope{CancelTop, CancelAll} }

// AllOnTimeouts lists the outcomes of a missed deadline.
func AllOnTimeouts() []OnTimeout { return []OnTimeout{OnTimeoutError, OnTimeoutRetry, OnTimeoutAsk} }

// AllExpiryActions lists the outcomes at an approval's deadline.
func AllExpiryActions() []ExpiryAction {
	return []ExpiryAction{ExpiryReject, ExpiryApprove, ExpiryFail, ExpiryAsk}
}

// AllDeciders lists who may decide an interrupt.
func AllDeciders() []Decider { return []Decider{DeciderApprover, DeciderOwner} }

// AllVias lists how an actor may be authenticated.
func AllVias() []Via { return []Via{ViaToken, ViaOIDC, ViaActionLink, ViaCallback} }

// AllFields lists the decision fields a choice takes.
func AllFields() []Field {
	return []Field{FieldReason, FieldText, FieldContent, FieldArguments, FieldOutput}
}

// AllEventTypes lists the event types, stored and streamed.
func AllEventTypes() []EventType {
	return []EventType{EventSessionStarted, EventUserMessage, EventModelResponse, EventApprovalRequested,
		EventInputRequested, EventReviewRequested, EventExternalRequested, EventClientRequested, EventWaitExpired,
		EventDecision, EventApprovalAdded, EventInterruptReminded, EventInterruptEscalated, EventToolStarted, EventToolResult, EventFramePushed, EventFramePopped, EventHandoff,
		EventAgentMessage, EventOutputRejected, EventTurnPaused, EventTurnCompleted, EventTurnFailed,
		EventTurnCancelled, EventTurnInterrupted, EventSessionForked, EventDefinitionChanged, EventModelDelta, EventModelDeltasSkipped}
}
