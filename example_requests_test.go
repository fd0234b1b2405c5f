package cairn_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"time"

	"github.com/cairnhq/cairn"
)

// Approval requests from the caller's own code: no model, no tool
// declared up front. The request is a session of the approvals agent,
// paused on one approval interrupt (so the inbox, webhooks, governance
// and audit apply); the caller waits for the decision, runs its function
// with the approved (here edited) arguments, and records what it did.
func Example_requestApproval() {
	runner, err := cairn.NewRunner([]*cairn.Agent{cairn.ApprovalsAgent(nil, nil)}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer runner.Close()
	ctx := context.Background()

	req := cairn.ApprovalRequest{Tool: "refund", Arguments: json.RawMessage(`{"order":"A-17","amount":120}`),
		Message: "Refund 120 EUR on order A-17?", IdempotencyKey: "refund-A-17"}
	a, created, err := runner.RequestApproval(ctx, req, &cairn.StartOptions{Owner: "billing-bot"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(a.Status, created, a.Interrupt.Message)

	// The caller restarts and asks again with the same key: the same request.
	again, created, _ := runner.RequestApproval(ctx, req, &cairn.StartOptions{Owner: "billing-bot"})
	fmt.Println(again.ID == a.ID, created)

	// A person approves with a smaller amount (from any door: here, the library).
	s, _ := runner.Session(ctx, a.SessionID)
	_, err = runner.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: a.Interrupt.ID, Action: cairn.ActionApprove,
		Arguments: json.RawMessage(`{"order":"A-17","amount":100}`)}}, &cairn.TurnOptions{Actor: cairn.Actor{Name: "ana"}})
	if err != nil {
		log.Fatal(err)
	}
	a, _ = runner.AwaitCallApproval(ctx, a.ID, time.Second)
	fmt.Println(a.Status, a.Actor.Name, string(a.Arguments), a.Edited)

	// The function runs with those arguments; its result is recorded once.
	a, err = runner.RecordCallResult(ctx, a.ID, cairn.Completion{Output: json.RawMessage(`{"refunded":100}`)}, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(a.Result.Output))
	_, err = runner.RecordCallResult(ctx, a.ID, cairn.Completion{Output: json.RawMessage(`{"refunded":100}`)}, nil)
	fmt.Println(cairn.ErrorCode(err))
	// Output:
	// pending true Refund 120 EUR on order A-17?
	// true false
	// approved ana {"order":"A-17","amount":100} true
	// {"refunded":100}
	// conflict
}
