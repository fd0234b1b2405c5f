// Command research shows an interactive sub-agent: the main assistant hands
// the conversation to a research skill, which talks with you until it calls
// complete; its findings go back to the main assistant. It talks to any
// OpenAI-compatible endpoint:
//
//	OPENAI_API_KEY=sk-… go run ./examples/research
//	OPENAI_BASE_URL=http://127.0.0.1:11434/v1 CAIRN_MODEL=llama3.1 go run ./examples/research
package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/model/openai"
)

func main() {
	key, base := os.Getenv("OPENAI_API_KEY"), os.Getenv("OPENAI_BASE_URL")
	if key == "" && base == "" {
		fmt.Fprintln(os.Stderr, "set OPENAI_API_KEY (OpenAI) or OPENAI_BASE_URL (an OpenAI-compatible server such as Ollama)")
		os.Exit(2)
	}
	name := os.Getenv("CAIRN_MODEL")
	if name == "" {
		name = "gpt-4o-mini"
	}
	m := openai.New(name, &openai.Options{BaseURL: base, APIKey: key})
	search := cairn.NewTool(&cairn.Tool{Name: "search_notes", Description: "Search the team's notes."}, func(ctx context.Context, a struct {
		Query string `json:"query"`
	}) (string, error) {
		return fmt.Sprintf("3 notes mention %q: the 2026 roadmap, the incident review, the API guide", a.Query), nil
	})
	runner, err := cairn.NewRunner([]*cairn.Agent{
		{
			Name: "main", Model: m,
			Instructions: "You are an assistant. For anything that needs research, use use_research and wait for its findings.",
			Tools:        []*cairn.Tool{cairn.InteractiveAgentTool("research", &cairn.Tool{Name: "use_research", Description: "Hand the user to the research skill."})},
		},
		{
			Name: "research", Model: m, Tools: []*cairn.Tool{search},
			Instructions: "You are a research skill talking directly with the user. Ask what you need, search, " +
				"and when the user is satisfied call complete with a short summary of the findings.",
		},
	}, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ctx := context.Background()
	in := bufio.NewScanner(os.Stdin)
	var s *cairn.Session
	for {
		who := "main"
		if s != nil {
			who = s.Stack[len(s.Stack)-1].Agent
		}
		fmt.Printf("you (to %s)> ", who)
		if !in.Scan() {
			return
		}
		text := strings.TrimSpace(in.Text())
		if s == nil {
			s, err = runner.Start(ctx, "main", text, nil)
		} else {
			s, err = runner.Send(ctx, s.ID, text, 0, nil)
		}
		if err != nil {
			fmt.Println("error:", err)
			continue
		}
		fmt.Printf("%s> %s\n", s.Stack[len(s.Stack)-1].Agent, s.Output)
	}
}
