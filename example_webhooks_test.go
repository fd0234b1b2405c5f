package cairn_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/model/scripted"
	"github.com/cairnhq/cairn/webhook"
)

// Webhooks announce a pause with one-time action links; following the
// approve link decides once (an email button, a chat button), and the
// second time it is a conflict.
func Example_webhooks() {
	ctx := context.Background()
	created := make(chan webhook.Payload, 1)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A real receiver verifies the Standard Webhooks signature first.
		var p webhook.Payload
		if err := json.NewDecoder(r.Body).Decode(&p); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if p.Type == webhook.InterruptCreated {
			created <- p
		}
	}))
	defer receiver.Close()

	deleteFile := cairn.NewTool(&cairn.Tool{Name: "delete_file", Description: "Delete a file.", Approval: cairn.Always()},
		func(ctx context.Context, a fileArgs) (string, error) { return "Deleted " + a.Filename, nil })
	model := scripted.New(
		scripted.Reply{ToolCalls: []scripted.Call{{Name: "delete_file", Arguments: `{"filename":"test.txt"}`}}},
		scripted.Reply{Text: "Done: {{.LastResult}}"},
	)
	runner, err := cairn.NewRunner([]*cairn.Agent{{Name: "files", Model: model, Tools: []*cairn.Tool{deleteFile}}}, &cairn.RunnerOptions{
		PublicURL: "https://cairn.example.org",
		Webhooks:  []webhook.Subscription{{Name: "ops-mail", URL: receiver.URL, Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer runner.Close()

	if _, err := runner.Start(ctx, "files", "Delete test.txt", nil); err != nil {
		panic(err)
	}
	p := <-created
	fmt.Println(p.Data.Interrupt.Tool, string(p.Data.Interrupt.Arguments))
	// The HTTP server answers these links at /v1/actions/; here the runner follows one.
	_, token, _ := strings.Cut(p.Data.Actions.Approve, cairn.ActionLinkPath)
	s, _ := runner.FollowActionLink(ctx, token, "", nil)
	fmt.Println(s.Status, s.Output)
	_, err = runner.FollowActionLink(ctx, token, "", nil)
	fmt.Println(cairn.ErrorCode(err))
	// Output:
	// delete_file {"filename":"test.txt"}
	// completed Done: Deleted test.txt
	// conflict
}
