package cairn_test

import (
	"context"
	"fmt"
	"log"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/model/scripted"
	"github.com/cairnhq/cairn/store"
)

// A session paused under one deployment resumes under the definition it
// started with when another deployment (here: new instructions) on the
// same store decides it; Agent.OnNewVersion: VersionLatest would resume it
// under the new one.
func ExampleAgent_OnNewVersion() {
	ctx := context.Background()
	st := store.NewMemory() // the store both deployments share
	deploy := cairn.NewTool(&cairn.Tool{Name: "deploy", Description: "Deploy.", Approval: cairn.Always()},
		func(ctx context.Context, a struct {
			Env string `json:"env"`
		}) (string, error) {
			return "deployed to " + a.Env, nil
		})
	script := scripted.New(scripted.Reply{ToolCalls: []scripted.Call{{Name: "deploy", Arguments: `{"env":"{{.Input}}"}`}}}, scripted.Reply{Text: "{{.LastResult}}"})
	deployment := func(instructions string) *cairn.Runner {
		// The model says which instructions it was given.
		m := model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
			resp, err := script.Generate(ctx, req)
			if err == nil && len(resp.Message.ToolCalls) == 0 {
				resp.Message.Content += " (" + req.System + ")"
			}
			return resp, err
		})
		r, err := cairn.NewRunner([]*cairn.Agent{{Name: "ops", Instructions: instructions, Model: m, Tools: []*cairn.Tool{deploy}}}, &cairn.RunnerOptions{Store: st})
		if err != nil {
			log.Fatal(err)
		}
		return r
	}

	v1 := deployment("version 1")
	s, _ := v1.Start(ctx, "ops", "staging", nil)
	v1.Close()

	v2 := deployment("version 2")
	defer v2.Close()
	s, _ = v2.Session(ctx, s.ID)
	fmt.Println(s.Status, "current:", s.Definition.Current)
	s, err := v2.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove}}, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(s.Output)
	fresh, _ := v2.Start(ctx, "ops", "prod", nil)
	fmt.Println(fresh.Status, "current:", fresh.Definition.Current)
	// Output:
	// paused current: false
	// deployed to staging (version 1)
	// paused current: true
}
