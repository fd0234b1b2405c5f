package cairn_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/model/scripted"
)

// A tool whose work finishes later: it starts a CI pipeline, hands the
// pipeline its callback URL and returns Pending. The session waits on that
// system (an interrupt of kind external); the pipeline's POST to the URL
// (here, Runner.Callback with the URL's token) completes the call once,
// and a second completion is refused.
func Example_callback() {
	var callbackURL string
	pipeline := cairn.NewTool(&cairn.Tool{Name: "run_pipeline", Description: "Run the CI pipeline on a ref."},
		func(ctx context.Context, a struct {
			Ref string `json:"ref"`
		}) (string, error) {
			url, err := cairn.CallbackURL(ctx)
			if err != nil {
				return "", err
			}
			callbackURL = url // a real tool gives it to the pipeline it starts
			return "", cairn.Pending("run-42", "pipeline 42 started on "+a.Ref)
		})
	m := scripted.New(
		scripted.Reply{ToolCalls: []scripted.Call{{Name: "run_pipeline", Arguments: `{"ref":"main"}`}}},
		scripted.Reply{Text: "CI says: {{.LastResult}}"})
	runner, err := cairn.NewRunner([]*cairn.Agent{{Name: "ci", Model: m, Tools: []*cairn.Tool{pipeline}}},
		&cairn.RunnerOptions{PublicURL: "https://cairn.example.org"})
	if err != nil {
		log.Fatal(err)
	}
	defer runner.Close()
	ctx := context.Background()
	s, err := runner.Start(ctx, "ci", "Ship main.", nil)
	if err != nil {
		log.Fatal(err)
	}
	in := s.Interrupts[0]
	fmt.Println(s.Status, in.Kind, in.Handle, in.Message)

	// Later, the pipeline POSTs {"output": …} to the URL.
	token := strings.TrimPrefix(callbackURL, "https://cairn.example.org"+cairn.CallbackPath)
	s, err = runner.Callback(ctx, token, cairn.Completion{Output: json.RawMessage(`"build 42 passed"`)})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(s.Status, s.Output)
	_, err = runner.Callback(ctx, token, cairn.Completion{Error: "too late"})
	fmt.Println(cairn.ErrorCode(err))
	// Output:
	// paused external run-42 pipeline 42 started on main
	// completed CI says: build 42 passed
	// already_decided
}

// A tool the caller runs (a browser reading the user's location): it has
// no implementation here. The call waits under an interrupt of kind client
// until the caller completes it with a result that matches the tool's
// result schema.
func Example_clientTool() {
	locate := cairn.ClientTool(&cairn.Tool{Name: "get_location", Description: "The user's city, from the browser.",
		ResultSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)})
	m := model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		if l := req.Messages[len(req.Messages)-1]; l.Role == model.RoleTool {
			return &model.Response{Message: model.Message{Content: "Weather for " + l.Content + ": sunny."}}, nil
		}
		return &model.Response{Message: model.Message{ToolCalls: []model.ToolCall{{ID: "c1", Name: "get_location", Arguments: `{}`}}}}, nil
	})
	runner, err := cairn.NewRunner([]*cairn.Agent{{Name: "weather", Model: m, Tools: []*cairn.Tool{locate}}}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer runner.Close()
	ctx := context.Background()
	s, err := runner.Start(ctx, "weather", "What's the weather here?", nil)
	if err != nil {
		log.Fatal(err)
	}
	in := s.Interrupts[0]
	fmt.Println(in.Kind, in.Tool, in.Actions())
	_, err = runner.Complete(ctx, s.ID, in.ID, cairn.Completion{Output: json.RawMessage(`{"town":"Lyon"}`)}, nil)
	fmt.Println(cairn.ErrorCode(err))
	s, err = runner.Complete(ctx, s.ID, in.ID, cairn.Completion{Output: json.RawMessage(`{"city":"Lyon"}`)}, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(s.Output)
	// Output:
	// client get_location [complete fail]
	// invalid_output
	// Weather for {"city":"Lyon"}: sunny.
}

// A wait with a deadline: the pipeline has 30 minutes; when they pass with
// no result, the tool's OnTimeout happens once (here: the model is told).
// The clock is injected so the example runs at once.
func Example_waitDeadline() {
	var now atomic.Int64 // the runner's clock, read by its background work too
	now.Store(time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC).UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()).UTC() }
	pipeline := cairn.NewTool(&cairn.Tool{Name: "run_pipeline", Wait: &cairn.Wait{Timeout: 30 * time.Minute, OnTimeout: cairn.OnTimeoutError}},
		func(ctx context.Context, _ struct{}) (string, error) { return "", cairn.Pending("run-7", "started") })
	m := scripted.New(
		scripted.Reply{ToolCalls: []scripted.Call{{Name: "run_pipeline", Arguments: `{}`}}},
		scripted.Reply{Text: "{{.LastResult}}"})
	runner, err := cairn.NewRunner([]*cairn.Agent{{Name: "ci", Model: m, Tools: []*cairn.Tool{pipeline}}},
		&cairn.RunnerOptions{Now: clock, ExpirySweep: -1})
	if err != nil {
		log.Fatal(err)
	}
	defer runner.Close()
	ctx := context.Background()
	s, err := runner.Start(ctx, "ci", "Ship it.", nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(s.Interrupts[0].ExpiresAt.Format(time.Kitchen))
	now.Add(int64(31 * time.Minute))
	n, err := runner.ExpireDue(ctx) // the sweeper does this every 250ms
	if err != nil {
		log.Fatal(err)
	}
	s, err = runner.Session(ctx, s.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(n, s.Status, s.Output)
	// Output:
	// 9:30AM
	// 1 completed tool run_pipeline did not finish by 2026-11-26T09:30:00Z (30m0s); its result never arrived
}
