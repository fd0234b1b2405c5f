package cairn_test

import (
	"context"
	"fmt"
	"log"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/model/scripted"
)

// A decision may grant a standing rule: later calls it matches run without
// a pause, each decision naming the rule, until it is revoked.
func ExampleRunner_RevokeRule() {
	ctx := context.Background()
	deploy := cairn.NewTool(&cairn.Tool{Name: "deploy", Description: "Deploy.", Approval: cairn.Always()},
		func(ctx context.Context, a struct {
			Env string `json:"env"`
		}) (string, error) {
			return "deployed to " + a.Env, nil
		})
	model := scripted.New(scripted.Reply{ToolCalls: []scripted.Call{{Name: "deploy", Arguments: `{"env":"{{.Input}}"}`}}}, scripted.Reply{Text: "{{.LastResult}}"})
	runner, err := cairn.NewRunner([]*cairn.Agent{{Name: "ops", Model: model, Tools: []*cairn.Tool{deploy}}}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer runner.Close()
	ana := &cairn.TurnOptions{Actor: cairn.Actor{Name: "ana", Role: "approver", Via: "token"}}

	s, _ := runner.Start(ctx, "ops", "staging", nil)
	grant := &cairn.RuleGrant{If: `args.env == "staging"`, Duration: "72h"}
	s, err = runner.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove, Rule: grant}}, ana)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(s.Output)

	again, _ := runner.Start(ctx, "ops", "staging", nil) // the rule decides: no pause
	fmt.Println(again.Status, again.Output)
	other, _ := runner.Start(ctx, "ops", "prod", nil) // outside its condition
	fmt.Println(other.Status)

	rules, _ := runner.Rules(ctx, ana.Actor, cairn.RuleQuery{})
	fmt.Println(len(rules), rules[0].Uses, rules[0].GrantedBy.Name)
	if _, err := runner.RevokeRule(ctx, ana.Actor, rules[0].ID); err != nil {
		log.Fatal(err)
	}
	last, _ := runner.Start(ctx, "ops", "staging", nil)
	fmt.Println(last.Status)
	// Output:
	// deployed to staging
	// completed deployed to staging
	// paused
	// 1 1 ana
	// paused
}
