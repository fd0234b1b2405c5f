// Command adkserver is the peer bench/server measures Cairn's HTTP server
// against: ADK-Go's REST server (server/adkrest) with its in-memory session
// service, one LLM agent on ADK's OpenAI model (the Responses API, through
// openai-go) and one tool that asks for confirmation — the same agent
// bench/server configures in Cairn, talking to the same fake model.
//
//	go run ./adkserver -model-url http://127.0.0.1:PORT/v1
//
// It prints "listening on http://ADDR" on stderr once it accepts requests.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model/openaimodel"
	"google.golang.org/adk/v2/server/adkrest"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "adkserver:", err)
		os.Exit(1)
	}
}

type lookupArgs struct {
	Q string `json:"q"`
}

type lookupResult struct {
	Result string `json:"result"`
}

func run() error {
	addr := flag.String("addr", "127.0.0.1:0", "the address to listen on")
	modelURL := flag.String("model-url", "", "the OpenAI-compatible base URL of the model (…/v1)")
	flag.Parse()
	if *modelURL == "" {
		return fmt.Errorf("-model-url is required")
	}
	ctx := context.Background()
	llm, err := openaimodel.NewModel(ctx, "bench-model", &openaimodel.ClientConfig{APIKey: "bench", BaseURL: *modelURL})
	if err != nil {
		return err
	}
	lookup, err := functiontool.New(functiontool.Config{Name: "lookup", Description: "Look up.", RequireConfirmation: true},
		func(ctx agent.Context, a lookupArgs) (lookupResult, error) { return lookupResult{Result: a.Q}, nil })
	if err != nil {
		return err
	}
	main, err := llmagent.New(llmagent.Config{Name: "main", Model: llm, Instruction: "be brief", Tools: []tool.Tool{lookup}})
	if err != nil {
		return err
	}
	srv, err := adkrest.NewServer(adkrest.ServerConfig{
		SessionService: session.InMemoryService(),
		AgentLoader:    agent.NewSingleLoader(main),
	})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "listening on http://%s\n", ln.Addr())
	return http.Serve(ln, srv)
}
