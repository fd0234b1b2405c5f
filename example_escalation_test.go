package cairn_test

import (
	"context"
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/model/scripted"
)

// An approval that nobody decides reminds, escalates to finance-leads,
// and at its deadline is approved by a rule that holds for small refunds.
// The clock is the example's, so ExpireDue (what the server's sweep calls)
// finds each step due.
func Example_escalation() {
	ctx := context.Background()
	start := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	var clock struct { // the runner's background loops read it too
		sync.Mutex
		t time.Time
	}
	clock.t = start
	now := func() time.Time { clock.Lock(); defer clock.Unlock(); return clock.t }
	refund := cairn.NewTool(&cairn.Tool{
		Name: "refund", Description: "Refund an order.", Approval: cairn.Always(), ApprovalTTL: time.Hour,
		Approvers: &cairn.Approvers{Groups: []string{"finance"}},
		Escalation: &cairn.Escalation{
			Steps: []cairn.EscalationStep{
				{After: 30 * time.Minute, Remind: true},
				{BeforeExpiry: 10 * time.Minute, EscalateTo: []string{"finance-leads"}},
			},
			OnExpiry: &cairn.ExpiryRule{Action: cairn.ExpiryApprove,
				If: cairn.ApprovalIf(func(a refundArgs) bool { return a.Amount < 100 })},
		},
	}, func(ctx context.Context, a refundArgs) (string, error) {
		return fmt.Sprintf("refunded %d EUR", a.Amount), nil
	})
	model := scripted.New(
		scripted.Reply{ToolCalls: []scripted.Call{{Name: "refund", Arguments: `{"amount":40}`}}},
		scripted.Reply{Text: "{{.LastResult}}"},
	)
	runner, err := cairn.NewRunner([]*cairn.Agent{{Name: "billing", Model: model, Tools: []*cairn.Tool{refund}}},
		&cairn.RunnerOptions{Now: now, ExpirySweep: -1})
	if err != nil {
		log.Fatal(err)
	}
	defer runner.Close()

	s, err := runner.Start(ctx, "billing", "Refund order 7 (40 EUR).", nil)
	if err != nil {
		log.Fatal(err)
	}
	for _, step := range s.Interrupts[0].Schedule {
		fmt.Println(step.At.Sub(start), step.Rule)
	}
	for _, after := range []time.Duration{30 * time.Minute, 20 * time.Minute, 10 * time.Minute} {
		clock.Lock()
		clock.t = clock.t.Add(after)
		clock.Unlock()
		if _, err := runner.ExpireDue(ctx); err != nil {
			log.Fatal(err)
		}
	}
	s, err = runner.Session(ctx, s.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(s.Status, s.Output)
	// Output:
	// 30m0s tool refund escalation[0]
	// 50m0s tool refund escalation[1]
	// completed refunded 40 EUR
}
