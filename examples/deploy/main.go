// Command deploy is a deploy assistant whose risky tools wait for your
// approval in the terminal. It talks to any OpenAI-compatible endpoint:
//
//	OPENAI_API_KEY=sk-… go run ./examples/deploy
//	OPENAI_BASE_URL=http://127.0.0.1:11434/v1 CAIRN_MODEL=llama3.1 go run ./examples/deploy   # Ollama
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/model/openai"
)

type deployArgs struct {
	Environment string `json:"environment" jsonschema:"where to deploy" enum:"staging,production"`
	Version     string `json:"version" jsonschema:"the build to deploy, e.g. 1042"`
}

func main() {
	m, err := modelFromEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	status := cairn.NewTool(&cairn.Tool{Name: "build_status", Description: "Report the latest build and its tests."}, func(ctx context.Context, _ struct{}) (string, error) { return "build 1042: all 318 tests passed", nil })
	deploy := cairn.NewTool(&cairn.Tool{Name: "deploy", Description: "Deploy a build to an environment.", Approval: cairn.ApprovalIf(func(a deployArgs) bool { return a.Environment == "production" }), Confirmation: "Deploy build {{.version}} to {{.environment}}?"}, func(ctx context.Context, a deployArgs) (string, error) {
		return fmt.Sprintf("build %s is live on %s (idempotency key %s)", a.Version, a.Environment, cairn.IdempotencyKey(ctx)), nil
	})
	runner, err := cairn.NewRunner([]*cairn.Agent{{
		Name: "ops", Model: m, Tools: []*cairn.Tool{status, deploy},
		Instructions: "You are a careful deploy assistant. Check the build before deploying.",
	}}, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	chat(context.Background(), runner, "ops")
}

// chat is a minimal terminal loop: your messages, the agent's answers, and
// a prompt for every approval.
func chat(ctx context.Context, r *cairn.Runner, agent string) {
	in := bufio.NewScanner(os.Stdin)
	ask := func(prompt string) (string, bool) {
		fmt.Print(prompt)
		if !in.Scan() {
			return "", false
		}
		return strings.TrimSpace(in.Text()), true
	}
	var s *cairn.Session
	for {
		text, ok := ask("you> ")
		if !ok {
			return
		}
		var err error
		if s == nil {
			s, err = r.Start(ctx, agent, text, nil)
		} else {
			s, err = r.Send(ctx, s.ID, text, 0, nil)
		}
		for err == nil && s.Status == cairn.StatusPaused {
			var ds []cairn.Decision
			for _, it := range s.Interrupts {
				args, _ := json.Marshal(it.Arguments)
				answer, _ := ask(fmt.Sprintf("approve? %s %s [y/N/reason] ", it.Message, args))
				if answer == "y" || answer == "yes" {
					ds = append(ds, cairn.Decision{InterruptID: it.ID, Action: cairn.ActionApprove})
				} else {
					ds = append(ds, cairn.Decision{InterruptID: it.ID, Action: cairn.ActionReject, Reason: answer})
				}
			}
			s, err = r.Resume(ctx, s.ID, s.Seq, ds, nil)
		}
		if err != nil {
			fmt.Println("error:", err)
			continue
		}
		fmt.Println("ops>", s.Output)
	}
}

func modelFromEnv() (*openai.Model, error) {
	key, base := os.Getenv("OPENAI_API_KEY"), os.Getenv("OPENAI_BASE_URL")
	if key == "" && base == "" {
		return nil, fmt.Errorf("set OPENAI_API_KEY (OpenAI) or OPENAI_BASE_URL (an OpenAI-compatible server such as Ollama)")
	}
	name := os.Getenv("CAIRN_MODEL")
	if name == "" {
		name = "gpt-4o-mini"
	}
	return openai.New(name, &openai.Options{BaseURL: base, APIKey: key}), nil
}
