// Package snippets holds the Go code that README.md and docs/*.md show,
// inside functions that compile: snippets_test.go fails when a snippet in
// the docs is not, line for line, in this file, so a snippet that drifts
// from the API fails CI. Nothing here runs; the surroundings only declare
// what a snippet takes as given.
package snippets

//lint:file-ignore SA4006 the snippets show calls, not the handling of every error

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"os"
	"time"

	sdkmcp "github.com/modelcontextprotocol/go-sdk/mcp"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/mcp/mcpserver"
	"github.com/cairnhq/cairn/mcp/mcptools"
	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/model/anthropic"
	"github.com/cairnhq/cairn/model/openai"
	"github.com/cairnhq/cairn/model/scripted"
	"github.com/cairnhq/cairn/server"
	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/store/postgres"
	"github.com/cairnhq/cairn/store/sqlite"
	"github.com/cairnhq/cairn/webhook"
)

// README is README.md's library example.
func README(ctx context.Context) error {
	deleteFile := cairn.NewTool(&cairn.Tool{
		Name:         "delete_file",
		Description:  "Delete a file.",
		Approval:     cairn.Always(),
		Confirmation: "Delete file '{{.filename}}'? This cannot be undone.",
	}, func(ctx context.Context, a struct {
		Filename string `json:"filename"`
	}) (string, error) {
		return "deleted " + a.Filename, os.Remove(a.Filename)
	})

	st, err := sqlite.Open(ctx, "cairn.db")
	runner, err := cairn.NewRunner(
		[]*cairn.Agent{{Name: "files", Model: openai.New("gpt-4o-mini", nil), Tools: []*cairn.Tool{deleteFile}}},
		&cairn.RunnerOptions{Store: st}) // nil options: in memory
	s, err := runner.Start(ctx, "files", "Delete test.txt", nil) // s.Status == "paused"
	s, err = runner.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{
		InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove}}, nil) // runs once
	return err
}

// myModel stands for a model of your own.
func myModel(ctx context.Context, req *model.Request) (*model.Response, error) { return nil, nil }

// Models is docs/library.md, 1. A model.
func Models() []model.Model {
	models := []model.Model{
		openai.New("gpt-4o-mini", nil), // OpenAI; key from OPENAI_API_KEY
		openai.New("llama3.1", &openai.Options{ // any OpenAI-compatible server:
			BaseURL: "http://localhost:11434/v1"}), // Ollama, vLLM, llama.cpp, LM Studio
		anthropic.New("claude-sonnet-4-5", nil),      // Anthropic; key from ANTHROPIC_API_KEY
		scripted.New(scripted.Reply{Text: "Hello!"}), // a script: tests and demos
		model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
			return myModel(ctx, req) // your own
		}),
	}
	return models
}

// ScriptedCall is docs/library.md's scripted tool call.
func ScriptedCall() model.Model {
	m := scripted.New(
		scripted.Reply{ToolCalls: []scripted.Call{{Name: "deploy", Arguments: `{"env":"prod"}`}}}, // the model calls deploy
		scripted.Reply{Text: "Done: {{.LastResult}}"})                                             // then answers with its result
	return m
}

// Stores is docs/library.md, 2. A store.
func Stores(ctx context.Context, agents []*cairn.Agent) error {
	inMemory, err := cairn.NewRunner(agents, nil)                           // in memory
	st, err := sqlite.Open(ctx, "cairn.db")                                 // one process, durable
	pg, err := postgres.Open(ctx, "postgres://user:pass@host:5432/cairn")   // many processes
	runner, err := cairn.NewRunner(agents, &cairn.RunnerOptions{Store: st}) // or Store: pg
	_, _, _ = inMemory, pg, runner
	return err
}

// payments stands for a payment service.
var payments interface {
	Refund(ctx context.Context, orderID string, amount float64, idempotencyKey string) (string, error)
}

// Approvals is docs/library.md, 3. A typed tool and 4. Approvals.
func Approvals(ctx context.Context, m model.Model, st *sqlite.Store, askPerson func(cairn.Interrupt) cairn.Decision) error {
	type refundArgs struct {
		OrderID string  `json:"order_id" jsonschema:"the order to refund"`
		Amount  float64 `json:"amount"`
		Reason  string  `json:"reason,omitempty" enum:"damaged,late,other"`
	}
	refund := cairn.NewTool(&cairn.Tool{
		Name:         "refund",
		Description:  "Refund an order.",
		Approval:     cairn.ApprovalIf(func(a refundArgs) bool { return a.Amount > 100 }),
		Confirmation: "Refund {{.amount}} on order {{.order_id}}?",
		Timeout:      30 * time.Second,
	}, func(ctx context.Context, a refundArgs) (string, error) {
		// Pass the key on so that a retried call cannot pay twice.
		return payments.Refund(ctx, a.OrderID, a.Amount, cairn.IdempotencyKey(ctx))
	})

	runner, err := cairn.NewRunner([]*cairn.Agent{{Name: "support", Instructions: "…", Model: m,
		Tools: []*cairn.Tool{refund}, MaxIterations: 10}}, &cairn.RunnerOptions{Store: st})
	if err != nil {
		return err // an agent or tool that does not check out, said how
	}
	defer runner.Close()

	s, err := runner.Start(ctx, "support", "Refund order 42, it arrived broken", nil)
	for s.Status == cairn.StatusPaused {
		var ds []cairn.Decision
		for _, in := range s.Interrupts {
			ds = append(ds, askPerson(in)) // approve, approve with Arguments, reject with Reason, answer with Text
		}
		s, err = runner.Resume(ctx, s.ID, s.Seq, ds, &cairn.TurnOptions{Actor: cairn.Actor{Name: "ana", Role: "approver"}})
	}
	fmt.Println(s.Output)
	s, err = runner.Send(ctx, s.ID, "Thanks! Also…", s.Seq, nil) // the next turn
	return err
}

// Nesting is docs/library.md, 5. Nesting.
func Nesting() {
	cairn.AgentTool("analyst", &cairn.Tool{Name: "run_analysis", Description: "Runs the analysis.",
		Approval: cairn.Always()}) // child runs to completion
	cairn.InteractiveAgentTool("research", &cairn.Tool{Name: "use_research"}) // child takes over the chat
	cairn.Handoff("billing", nil)                                             // transfer_to_billing
	cairn.Handoff("billing", &cairn.Tool{Approval: cairn.Always()})           // …once a person confirms
}

// Streaming is docs/library.md, 6. Streaming.
func Streaming(ctx context.Context, runner *cairn.Runner) error {
	for ev, err := range cairn.Stream(func(observe func(cairn.Event)) (*cairn.Session, error) {
		return runner.Start(ctx, "main", "Deploy the build", &cairn.StartOptions{Observe: observe})
	}) {
		if err != nil {
			return err // the turn's error, last
		}
		fmt.Println(ev.Type) // every recorded event, and model_delta text deltas (Seq 0) from streaming models
	}
	return nil
}

// Payloads is docs/library.md, decoding an event's payload.
func Payloads(ev cairn.Event) error {
	p, err := session.DecodeEvent(ev)
	if err != nil {
		return err // a type this version does not know, or data that does not fit it
	}
	switch d := p.(type) {
	case *session.DecisionMade:
		fmt.Println(d.Action, d.Tool, "by", d.Actor.Name)
	case *session.ToolResult:
		fmt.Println(d.Tool, "→", d.Content)
	}
	return nil
}

// Serving is docs/library.md, 10. Serving it over HTTP.
func Serving(runner *cairn.Runner, s string) {
	srv := server.New(runner, &server.Options{Tokens: []server.Token{{Name: "ana", Secret: s, Role: server.RoleApprover}}})
	log.Fatal(http.ListenAndServe("127.0.0.1:8080", srv))
}

// MCP is docs/library.md, 11. MCP both ways.
func MCP(ctx context.Context, runner *cairn.Runner, m model.Model) error {
	hub, err := mcptools.Connect(ctx, []mcptools.Server{{Name: "fs", Command: []string{"mcp-server-filesystem", "./sandbox"}}}, nil)
	if err != nil {
		return err
	}
	defer hub.Close()
	agent := &cairn.Agent{Name: "main", Model: m, Toolsets: []cairn.Toolset{hub.Toolset("fs", nil)}}
	hub.Follow(ctx, runner) // a cancelled session's held question hears "cancel"

	srv := mcpserver.New(runner, nil)            // the agents as MCP tools
	err = srv.Run(ctx, &sdkmcp.StdioTransport{}) // or sdkmcp.NewStreamableHTTPHandler
	_ = agent
	return err
}

// Webhooks is docs/library.md, 12. Webhooks and action links.
func Webhooks(ctx context.Context, agents []*cairn.Agent, st *sqlite.Store, secret, token string) error {
	runner, err := cairn.NewRunner(agents, &cairn.RunnerOptions{
		Store:     st,                          // needs store.Outbox and store.Secrets (this module's stores have both)
		PublicURL: "https://cairn.example.org", // action links are built from it
		Webhooks:  []webhook.Subscription{{Name: "slack", URL: "https://bridge.example.org/cairn/webhook", Secret: secret}},
	})
	// Someone clicked the link's button; the HTTP server does this at /v1/actions/{token}:
	sess, err := runner.FollowActionLink(ctx, token, "", nil) // once; then ErrConflict (ErrExpired, ErrInvalidLink)
	_ = sess
	return err
}

// NestingDoc is docs/nesting.md's example.
func NestingDoc(m model.Model, deployTo func(context.Context, string) (string, error)) {
	main := &cairn.Agent{Name: "main", Model: m, Tools: []*cairn.Tool{
		cairn.AgentTool("analyst", &cairn.Tool{Name: "run_analysis_pipeline",
			Description: "Runs the analysis pipeline.", Approval: cairn.Always()}),
		cairn.InteractiveAgentTool("research", &cairn.Tool{Name: "use_research",
			Description: "Talk to the research skill."}),
		cairn.Handoff("billing", nil),
		cairn.AskUser("ask_user"),
	}}

	deploy := cairn.NewTool(&cairn.Tool{Name: "deploy", Description: "Deploy."}, func(ctx context.Context, a struct{}) (string, error) {
		env, err := cairn.Ask(ctx, "Which environment?")
		if err != nil {
			return "", err // pauses; the tool is called again with the answer
		}
		return deployTo(ctx, env)
	})
	_, _ = main, deploy
}

// VerifyWebhook is docs/webhooks.md's signature check.
func VerifyWebhook(w http.ResponseWriter, r *http.Request, body []byte) error {
	wh, err := standardwebhooks.NewWebhook(os.Getenv("CAIRN_WEBHOOK_SECRET"))
	if err != nil {
		return err // not a whsec_… secret
	}
	if err := wh.Verify(body, r.Header); err != nil {
		http.Error(w, "not signed by Cairn", http.StatusUnauthorized)
		return nil
	}
	return nil
}

// Structured is docs/library.md's structured answer.
func Structured(ctx context.Context, m model.Model) error {
	type Triage struct {
		Priority string `json:"priority" enum:"low,high"`
		Summary  string `json:"summary"`
	}

	schema, err := cairn.SchemaFor[Triage]()
	if err != nil {
		return err
	}
	runner, err := cairn.NewRunner([]*cairn.Agent{{Name: "triage", Model: m, OutputSchema: schema}}, nil)
	if err != nil {
		return err
	}
	s, err := runner.Start(ctx, "triage", "The database is down", nil)
	if err != nil {
		return err
	}
	t, err := cairn.OutputAs[Triage](s) // s.OutputJSON holds the JSON
	fmt.Println(t.Priority, err)
	return nil
}

// pipelines is what docs/waits.md's tool starts its work with.
type pipelines struct{}

// ciRun is a started pipeline.
type ciRun struct{ ID string }

// Start starts a pipeline that POSTs its result to callback.
func (pipelines) Start(ctx context.Context, ref, callback string) (ciRun, error) { return ciRun{}, nil }

// Waits is docs/waits.md's tool that finishes later.
func Waits(ci pipelines) *cairn.Tool {
	pipeline := cairn.NewTool(&cairn.Tool{Name: "run_pipeline", Description: "Run CI on a ref.",
		Wait:         &cairn.Wait{Timeout: 30 * time.Minute, OnTimeout: cairn.OnTimeoutAsk},
		ResultSchema: json.RawMessage(`{"type":"object","properties":{"status":{"enum":["passed","failed"]}},"required":["status"]}`)},
		func(ctx context.Context, a struct {
			Ref string `json:"ref"`
		}) (string, error) {
			url, err := cairn.CallbackURL(ctx)
			if err != nil {
				return "", err
			}
			run, err := ci.Start(ctx, a.Ref, url) // the pipeline POSTs its result to url
			if err != nil {
				return "", err
			}
			return "", cairn.Pending(run.ID, "pipeline "+run.ID+" started")
		})
	return pipeline
}

// refundArgs are a refund's arguments.
type refundArgs struct {
	Amount int `json:"amount"`
}

// Escalation is docs/escalation.md's refund.
func Escalation(refundHandler func(context.Context, refundArgs) (string, error)) *cairn.Tool {
	refund := cairn.NewTool(&cairn.Tool{
		Name: "refund", Approval: cairn.Always(), ApprovalTTL: 2 * time.Hour,
		Approvers: &cairn.Approvers{Groups: []string{"finance"}},
		Escalation: &cairn.Escalation{
			Steps: []cairn.EscalationStep{
				{After: 30 * time.Minute, Remind: true},
				{BeforeExpiry: 10 * time.Minute, EscalateTo: []string{"finance-leads"}},
			},
			OnExpiry: &cairn.ExpiryRule{Action: cairn.ExpiryApprove,
				If: cairn.ApprovalIf(func(a refundArgs) bool { return a.Amount < 100 })},
		},
	}, refundHandler)
	return refund
}

// unifiedDiff and writeFile stand for the program's own diff and handler.
func unifiedDiff(path, old, new string) string { return "" }

func writeFile(ctx context.Context, a struct{ Path, Content string }) (string, error) { return "", nil }

// Previews is docs/previews.md's tool with a preview.
func Previews() *cairn.Tool {
	writeConfig := cairn.NewTool(&cairn.Tool{
		Name:     "write_config",
		Approval: cairn.Always(),
		Preview: func(ctx context.Context, args json.RawMessage) (cairn.Preview, error) {
			var a struct{ Path, Content string }
			if err := json.Unmarshal(args, &a); err != nil {
				return cairn.Preview{}, err
			}
			old, _ := os.ReadFile(a.Path)
			return cairn.TextPreview(cairn.PreviewDiff, unifiedDiff(a.Path, string(old), a.Content)), nil
		},
		PreviewTimeout: 5 * time.Second,
	}, writeFile)
	return writeConfig
}
