package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/slack-go/slack"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testkit/check"
	"github.com/cairnhq/cairn/internal/testkit/testwait"
	"github.com/cairnhq/cairn/model/scripted"
	"github.com/cairnhq/cairn/server"
	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/store/sqlite"
	"github.com/cairnhq/cairn/webhook"
)

const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

type deployArgs struct {
	Environment string `json:"environment"`
}

// TestBridgeApprovesFromSlack runs Cairn (SQLite, the HTTP server), the
// bridge and a fake Slack: a pause becomes a message with buttons, a click
// approves through the action link, the tool runs once, the message says
// who approved; a second click finds it decided.
func TestBridgeApprovesFromSlack(t *testing.T) {
	ctx := context.Background()
	var runs atomic.Int32
	deploy := cairn.NewTool(&cairn.Tool{Name: "deploy", Description: "Deploy.", Approval: cairn.Always(), Confirmation: "Deploy to {{.environment}}?",
		Preview: func(ctx context.Context, args json.RawMessage) (cairn.Preview, error) {
			return cairn.TextPreview(cairn.PreviewDiff, "--- live\n+++ planned\n-replicas: 1\n+replicas: 3\n"), nil
		}},
		func(ctx context.Context, a deployArgs) (string, error) {
			runs.Add(1)
			return "deployed to " + a.Environment, nil
		})
	model := scripted.New(
		scripted.Reply{ToolCalls: []scripted.Call{{Name: "deploy", Arguments: `{"environment":"production"}`}}},
		scripted.Reply{Text: "{{.LastResult}}"})

	// Cairn's address must be known before its runner: action links are built from it.
	cairnSrv := httptest.NewUnstartedServer(nil)
	cairnURL := "http://" + cairnSrv.Listener.Addr().String()
	bridgeSrv := httptest.NewUnstartedServer(nil)
	fs := NewFakeSlack("xoxb-test", "signing-secret")
	fs.InteractionsURL = "http://" + bridgeSrv.Listener.Addr().String() + "/slack/interactions"
	slackSrv := httptest.NewServer(fs.Handler())
	defer slackSrv.Close()

	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "cairn.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	runner, err := cairn.NewRunner([]*cairn.Agent{{Name: "ops", Model: model, Tools: []*cairn.Tool{deploy}}}, &cairn.RunnerOptions{
		Store: st, PublicURL: cairnURL,
		Webhooks: []webhook.Subscription{{Name: "slack", URL: "http://" + bridgeSrv.Listener.Addr().String() + "/cairn/webhook", Secret: secret}}})
	if err != nil {
		t.Fatal(err)
	}
	defer runner.Close()
	cairnSrv.Config.Handler = server.New(runner, nil)
	cairnSrv.Start()
	defer cairnSrv.Close()

	verifier, _ := standardwebhooks.NewWebhook(secret)
	b := &Bridge{Cairn: verifier, CairnURL: cairnURL, Slack: slack.New("xoxb-test", slack.OptionAPIURL(slackSrv.URL+"/api/")),
		Channel: "C_APPROVALS", SigningSecret: "signing-secret", Log: slog.Default(), seen: map[string]bool{}, messages: map[string]string{}}
	bridgeSrv.Config.Handler = b.Handler()
	bridgeSrv.Start()
	defer bridgeSrv.Close()

	sess, err := runner.Start(ctx, "ops", "ship it", nil)
	if err != nil || sess.Status != cairn.StatusPaused {
		t.Fatalf("start: %v %+v", err, sess)
	}
	msg := waitMessage(t, fs, func(m FakeMessage) bool { return len(m.Buttons) == 2 })
	if !strings.Contains(msg.Text, "Deploy to production?") || msg.Buttons[0].Label != "Approve" || msg.Buttons[1].Label != "Reject" ||
		!strings.HasPrefix(msg.Buttons[0].Value, cairnURL+"/v1/actions/") {
		t.Fatalf("the approval message: %+v", msg)
	}
	if !slices.ContainsFunc(msg.Sections, func(s string) bool {
		return strings.Contains(s, "*Preview (diff):*") && strings.Contains(s, "+replicas: 3")
	}) {
		t.Fatalf("the message has no preview of the call: %q", msg.Sections)
	}

	approve := msg.Buttons[0]
	if err := fs.Click(ctx, msg.TS, "approve", "U042", "ana"); err != nil {
		t.Fatal(err)
	}
	b.Wait()
	sess = check.NoErr(t)(runner.Session(ctx, sess.ID))
	if sess.Status != cairn.StatusCompleted || sess.Output != "deployed to production" || runs.Load() != 1 {
		t.Fatalf("after the click: %s %q, %d runs", sess.Status, sess.Output, runs.Load())
	}
	msg = waitMessage(t, fs, func(m FakeMessage) bool { return m.TS == msg.TS && m.Updates > 0 })
	if msg.Text != "Approved by <@U042>; the session is completed." || len(msg.Buttons) != 0 {
		t.Fatalf("the message after the click: %+v", msg)
	}
	waitMessage(t, fs, func(m FakeMessage) bool { return m.Text == "Session "+sess.ID+" completed: deployed to production" })

	// The old message's button, clicked again (a second person, a replay):
	// Cairn answers 409 and nothing runs.
	if err := fs.Press(ctx, msg.Channel, msg.TS, approve, "U043", "bo"); err != nil {
		t.Fatal(err)
	}
	b.Wait()
	waitMessage(t, fs, func(m FakeMessage) bool { return strings.HasPrefix(m.Text, "Already decided") })
	if runs.Load() != 1 {
		t.Fatalf("the tool ran %d times", runs.Load())
	}

	// Requests not signed by Cairn or Slack are refused.
	for _, path := range []string{"/cairn/webhook", "/slack/interactions"} {
		resp, err := http.Post("http://"+bridgeSrv.Listener.Addr().String()+path, "application/json", strings.NewReader(`{}`))
		if err != nil || resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("unsigned POST %s: %v %v", path, err, resp)
		}
		resp.Body.Close()
	}
}

func waitMessage(t *testing.T, fs *FakeSlack, ok func(FakeMessage) bool) FakeMessage {
	t.Helper()
	var found FakeMessage
	testwait.For(t, 10*time.Second, "the message in the fake channel", func() bool {
		for _, m := range fs.Messages() {
			if ok(m) {
				found = m
				return true
			}
		}
		return false
	})
	return found
}

// A right-to-left override in what the model wrote shows as a marker in
// the Slack message, and long arguments are cut to fit a section.
func TestBridgeShowsHiddenCharactersAndCutsLongArguments(t *testing.T) {
	long := strings.Repeat("x", 10_000)
	d := webhook.Data{Agent: "ops", Interrupt: &cairn.Interrupt{ID: "int_1", Tool: "send_file", Message: "Send \u202egpj.exe?",
		Arguments: []byte("{\"name\":\"\u202egpj.exe\",\"note\":\"" + long + "\"}")}, Actions: &webhook.Actions{Approve: "http://x/a"}}
	blocks := approvalBlocks(d)
	head := blocks[0].(*slack.SectionBlock).Text.Text
	args := blocks[1].(*slack.SectionBlock).Text.Text
	if head != "*Send ⟨U+202E⟩gpj.exe?* (agent ops, tool `send_file`)" {
		t.Fatalf("summary = %q", head)
	}
	if strings.ContainsRune(args, '\u202e') || !strings.Contains(args, `"name":"⟨U+202E⟩gpj.exe"`) {
		t.Fatalf("arguments keep the override: %.80q", args)
	}
	if n := utf8.RuneCountInString(args); n > 3000 || !strings.Contains(args, "more characters: the approve link's page shows them whole") {
		t.Fatalf("arguments block: %d characters, ends %q", n, args[len(args)-80:])
	}
}

// A reminder or an escalation for the channel's people posts the call
// again, saying why, with the fresh links as buttons; one with no links
// for them posts nothing.
func TestBridgePostsRemindersAndEscalations(t *testing.T) {
	ctx := context.Background()
	fs := NewFakeSlack("xoxb-test", "signing-secret")
	slackSrv := httptest.NewServer(fs.Handler())
	defer slackSrv.Close()
	b := &Bridge{Slack: slack.New("xoxb-test", slack.OptionAPIURL(slackSrv.URL+"/api/")), Channel: "C_APPROVALS",
		Log: slog.Default(), seen: map[string]bool{}, messages: map[string]string{}}
	in := &cairn.Interrupt{ID: "int_1", Tool: "refund", Message: "Refund 40 EUR?", Arguments: []byte(`{"amount":40}`)}
	links := &webhook.Actions{Approve: "http://cairn/a", Reject: "http://cairn/r"}
	for _, p := range []webhook.Payload{
		{Type: webhook.InterruptReminder, Data: webhook.Data{Agent: "ops", Interrupt: in, Actions: links, Escalation: &session.EscalationFired{Remind: true, Rule: "tools.refund.escalation[0]"}}},
		{Type: webhook.InterruptEscalated, Data: webhook.Data{Agent: "ops", Interrupt: in, Actions: links, Escalation: &session.EscalationFired{EscalateTo: []string{"finance-leads"}, Rule: "tools.refund.escalation[1]"}}},
		{Type: webhook.InterruptEscalated, Data: webhook.Data{Agent: "ops", Interrupt: in, Escalation: &session.EscalationFired{EscalateTo: []string{"cfo"}}}}, // not this channel's to decide
	} {
		if err := b.announce(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	msgs := fs.Messages()
	if len(msgs) != 2 || !strings.HasPrefix(msgs[0].Text, "Reminder: still waiting for a decision.") || len(msgs[0].Buttons) != 2 ||
		!strings.HasPrefix(msgs[1].Text, "Escalated to finance-leads: still waiting for a decision.") || msgs[1].Buttons[0].Value != "http://cairn/a" {
		t.Fatalf("messages %+v", msgs)
	}
}
