package cairn_test

import (
	"context"
	"fmt"
	"log"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testkit/fakeanthropic"
	"github.com/cairnhq/cairn/internal/testkit/fakegemini"
	"github.com/cairnhq/cairn/internal/testkit/fakeopenai"
	"github.com/cairnhq/cairn/internal/testkit/fakeresponses"
	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/model/anthropic"
	"github.com/cairnhq/cairn/model/gemini"
	"github.com/cairnhq/cairn/model/openai"
	"github.com/cairnhq/cairn/model/scripted"
)

// OpenAI's Chat Completions through the official SDK. The key comes from
// OPENAI_API_KEY when Options.APIKey is empty. (Not run: it needs a key.)
func Example_openAI() {
	m := openai.New("gpt-4o-mini", &openai.Options{Stream: true})
	runner, err := cairn.NewRunner([]*cairn.Agent{{Name: "main", Instructions: "Be brief.", Model: m}}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer runner.Close()
	s, err := runner.Start(context.Background(), "main", "Hello!", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(s.Output)
}

// Any OpenAI-compatible server (Ollama, vLLM, llama.cpp, LM Studio): set
// BaseURL; local servers need no key. Here a fake server on 127.0.0.1,
// speaking the Chat Completions wire format, plays Ollama's part.
func Example_openAICompatible() {
	local := fakeopenai.New(func(r fakeopenai.Request) fakeopenai.Reply {
		return fakeopenai.Reply{Content: "Hello from " + r.Model + "."}
	})
	defer local.Close()

	m := openai.New("llama3.1", &openai.Options{BaseURL: local.URL + "/v1"}) // Ollama: http://localhost:11434/v1
	runner, err := cairn.NewRunner([]*cairn.Agent{{Name: "main", Model: m}}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer runner.Close()
	s, err := runner.Start(context.Background(), "main", "Hello!", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(s.Output)
	// Output:
	// Hello from llama3.1.
}

// Anthropic's Messages API through the official SDK (ANTHROPIC_API_KEY when
// APIKey is empty). Here a fake server on 127.0.0.1 speaks its wire format,
// asks for a tool, then answers with the result.
func Example_anthropic() {
	api := fakeanthropic.New(func(r fakeanthropic.Request) fakeanthropic.Reply {
		if last := r.LastBlock(); last.Type == "tool_result" {
			return fakeanthropic.Reply{Text: "The time is " + last.ContentText() + "."}
		}
		return fakeanthropic.Reply{ToolCalls: []fakeanthropic.Call{{ID: "toolu_1", Name: "clock", Input: `{}`}}}
	})
	defer api.Close()

	clock := cairn.NewTool(&cairn.Tool{Name: "clock", Description: "Tell the time."},
		func(ctx context.Context, a struct{}) (string, error) { return "noon", nil })
	m := anthropic.New("claude-sonnet-4-5", &anthropic.Options{BaseURL: api.URL, APIKey: "sk-ant-example"})
	runner, err := cairn.NewRunner([]*cairn.Agent{{Name: "main", Model: m, Tools: []*cairn.Tool{clock}}}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer runner.Close()
	s, err := runner.Start(context.Background(), "main", "What time is it?", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(s.Output)
	// Output:
	// The time is noon.
}

// Extended thinking across an approval: the reply's signed thinking is kept
// with it and sent back with the tool's result, as the API requires, even
// when the approval comes much later to another process. The fake server
// here refuses a follow-up without it, as Anthropic's does.
func Example_anthropicThinking() {
	api := fakeanthropic.New(func(r fakeanthropic.Request) fakeanthropic.Reply {
		if last := r.LastBlock(); last.Type == "tool_result" {
			return fakeanthropic.Reply{Thinking: "Report it.", Text: "Done: " + last.ContentText() + "."}
		}
		return fakeanthropic.Reply{Thinking: "Deploying needs approval.", ToolCalls: []fakeanthropic.Call{{ID: "toolu_1", Name: "deploy", Input: `{}`}}}
	})
	defer api.Close()

	deploy := cairn.NewTool(&cairn.Tool{Name: "deploy", Description: "Deploy.", Approval: cairn.Always()},
		func(ctx context.Context, a struct{}) (string, error) { return "deployed", nil })
	m := anthropic.New("claude-sonnet-4-5", &anthropic.Options{BaseURL: api.URL, APIKey: "sk-ant-example",
		MaxTokens: 8000, Thinking: &anthropic.Thinking{BudgetTokens: 2048}})
	runner, err := cairn.NewRunner([]*cairn.Agent{{Name: "ops", Model: m, Tools: []*cairn.Tool{deploy}}}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer runner.Close()
	ctx := context.Background()
	s, err := runner.Start(ctx, "ops", "Ship it", nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(s.Status)
	s, err = runner.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove}}, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(s.Status, s.Output)
	// Output:
	// paused
	// completed Done: deployed.
}

// A reasoning model through the OpenAI Responses API. With store false (the
// default) OpenAI keeps nothing: each reply's reasoning comes back encrypted,
// is kept with the reply, and goes back with the calls it led to. The fake
// server here refuses a follow-up without it, as OpenAI's does.
func Example_openAIResponses() {
	api := fakeresponses.New(func(r fakeresponses.Request) fakeresponses.Reply {
		if last := r.Last(); last.Type == "function_call_output" {
			return fakeresponses.Reply{Text: "It is " + last.OutputText() + "."}
		}
		return fakeresponses.Reply{Reasoning: "Check the clock.", ToolCalls: []fakeresponses.Call{{CallID: "call_1", Name: "clock", Arguments: `{}`}}}
	})
	defer api.Close()

	clock := cairn.NewTool(&cairn.Tool{Name: "clock", Description: "Tell the time.", Approval: cairn.Always()},
		func(ctx context.Context, a struct{}) (string, error) { return "noon", nil })
	m := openai.NewResponses("o4-mini", &openai.ResponsesOptions{Options: openai.Options{BaseURL: api.BaseURL(), APIKey: "sk-example"},
		ReasoningEffort: "medium"})
	runner, err := cairn.NewRunner([]*cairn.Agent{{Name: "main", Model: m, Tools: []*cairn.Tool{clock}}}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer runner.Close()
	ctx := context.Background()
	s, err := runner.Start(ctx, "main", "What time is it?", nil)
	if err != nil {
		log.Fatal(err)
	}
	s, err = runner.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove}}, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(s.Output)
	// Output:
	// It is noon.
}

// Gemini through google.golang.org/genai (GEMINI_API_KEY when APIKey is
// empty). The first call of a reply carries a thought signature, which is
// kept with the reply and sent back with the function responses; the fake
// server here refuses them without it, as Google's does.
func Example_gemini() {
	api := fakegemini.New(func(r fakegemini.Request) fakegemini.Reply {
		if res := r.Responses(); len(res) > 0 {
			return fakegemini.Reply{Text: fmt.Sprintf("It is %v.", res[0].Response["output"])}
		}
		return fakegemini.Reply{Thought: "Check the clock.", ToolCalls: []fakegemini.Call{{Name: "clock"}}}
	})
	defer api.Close()

	clock := cairn.NewTool(&cairn.Tool{Name: "clock", Description: "Tell the time.", Approval: cairn.Always()},
		func(ctx context.Context, a struct{}) (string, error) { return "noon", nil })
	m := gemini.New("gemini-2.5-flash", &gemini.Options{BaseURL: api.URL, APIKey: "example", Thinking: &gemini.Thinking{BudgetTokens: 1024}})
	runner, err := cairn.NewRunner([]*cairn.Agent{{Name: "main", Model: m, Tools: []*cairn.Tool{clock}}}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer runner.Close()
	ctx := context.Background()
	s, err := runner.Start(ctx, "main", "What time is it?", nil)
	if err != nil {
		log.Fatal(err)
	}
	s, err = runner.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove}}, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(s.Output)
	// Output:
	// It is noon.
}

// A scripted model replies from a script: for tests and demos. Replies are
// played again at every user message; Scripts, per agent, go on across them.
// model.Func turns any function into a model.
func Example_scripted() {
	echo := model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		last := req.Messages[len(req.Messages)-1]
		return &model.Response{Message: model.Message{Content: "you said: " + last.Content}}, nil
	})
	greeter := &scripted.Model{Scripts: map[string][]scripted.Reply{
		"greeter": {{Text: "Hi! What is your name?"}, {Text: "Nice to meet you, {{.Input}}."}},
	}}
	runner, err := cairn.NewRunner([]*cairn.Agent{{Name: "greeter", Model: greeter}, {Name: "echo", Model: echo}}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer runner.Close()
	ctx := context.Background()
	s, err := runner.Start(ctx, "greeter", "hello", nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(s.Output)
	s, err = runner.Send(ctx, s.ID, "Ana", s.Seq, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(s.Output)
	e, err := runner.Start(ctx, "echo", "ping", nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(e.Output)
	// Output:
	// Hi! What is your name?
	// Nice to meet you, Ana.
	// you said: ping
}
