package server_test

import (
	"context"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/model/scripted"
	"github.com/cairnhq/cairn/server"
	"github.com/cairnhq/cairn/webhook"
)

type sendArgs struct {
	Name string `json:"name"`
	Note string `json:"note"`
}

// The page of an action link shows a right-to-left override as a marker,
// in the confirmation and in the arguments, and folds long arguments
// behind "expand" instead of printing 100,000 characters.
func TestActionPageShowsHiddenCharactersAndFoldsLongArguments(t *testing.T) {
	ctx := context.Background()
	created := make(chan webhook.Payload, 1)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p webhook.Payload
		if err := json.NewDecoder(r.Body).Decode(&p); err != nil {
			t.Fatal(err)
		}
		if p.Type == webhook.InterruptCreated {
			created <- p
		}
	}))
	defer receiver.Close()
	front := httptest.NewUnstartedServer(nil)
	base := "http://" + front.Listener.Addr().String()
	send := cairn.NewTool(&cairn.Tool{Name: "send_file", Description: "Send a file.", Approval: cairn.Always(), Confirmation: "Send {{.name}} to the customer?"},
		func(ctx context.Context, a sendArgs) (string, error) { return "sent", nil })
	args, _ := json.Marshal(sendArgs{Name: "\u202egpj.exe", Note: strings.Repeat("n", 100_000)})
	args = []byte(strings.ReplaceAll(string(args), `\u202e`, "\u202e")) // as a model writes it: the character itself
	model := scripted.New(scripted.Reply{ToolCalls: []scripted.Call{{Name: "send_file", Arguments: string(args)}}}, scripted.Reply{Text: "done"})
	r, err := cairn.NewRunner([]*cairn.Agent{{Name: "files", Model: model, Tools: []*cairn.Tool{send}}}, &cairn.RunnerOptions{
		PublicURL: base, Webhooks: []webhook.Subscription{{Name: "mail", URL: receiver.URL, Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	front.Config.Handler = server.New(r, nil)
	front.Start()
	defer front.Close()
	if _, err := r.Start(ctx, "files", "send it", nil); err != nil {
		t.Fatal(err)
	}
	p := <-created
	resp, err := http.Get(p.Data.Actions.Approve)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	page := html.UnescapeString(string(body))
	if resp.StatusCode != 200 || strings.ContainsRune(page, '\u202e') {
		t.Fatalf("page: %d, keeps the override: %v", resp.StatusCode, strings.ContainsRune(page, '\u202e'))
	}
	for _, want := range []string{"Send ⟨U+202E⟩gpj.exe to the customer?", `"name": "⟨U+202E⟩gpj.exe"`, "<details><summary>expand (98"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	shownBeforeFold, _, _ := strings.Cut(page, "<details>")
	if strings.Count(shownBeforeFold, "n") > 3000 {
		t.Errorf("%d characters of the note shown before the fold", strings.Count(shownBeforeFold, "n"))
	}
}
