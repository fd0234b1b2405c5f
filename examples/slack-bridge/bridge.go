package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/slack-go/slack"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/webhook"
)

// Bridge turns Cairn's webhooks into Slack messages with Approve and Reject
// buttons, and a click into a POST of the interrupt's action link.
//
//	Cairn --webhook--> POST /cairn/webhook --chat.postMessage--> Slack
//	Slack --click----> POST /slack/interactions --POST action link--> Cairn
//	                                            --chat.update------> Slack
type Bridge struct {
	// Cairn verifies Cairn's deliveries (the webhook's secret).
	Cairn *standardwebhooks.Webhook
	// CairnURL is Cairn's public_url: the bridge follows only links under it.
	CairnURL string
	// Slack posts and updates messages (a bot token).
	Slack *slack.Client
	// Channel is where approvals are posted.
	Channel string
	// SigningSecret verifies Slack's interaction requests.
	SigningSecret string
	// Client follows action links; nil means http.DefaultClient.
	Client *http.Client
	Log    *slog.Logger

	mu       sync.Mutex
	seen     map[string]bool   // webhook ids handled (Cairn delivers at least once)
	messages map[string]string // interrupt id → Slack message ts
	wg       sync.WaitGroup    // decisions in flight
}

// Handler serves the webhook and the Slack interactivity endpoint.
func (b *Bridge) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /cairn/webhook", b.cairnWebhook)
	mux.HandleFunc("POST /slack/interactions", b.slackInteraction)
	return mux
}

// Wait waits for the decisions that clicks started.
func (b *Bridge) Wait() { b.wg.Wait() }

// cairnWebhook handles one delivery: verified, deduplicated by its id, and
// acknowledged only once Slack has the message (a failure makes Cairn retry).
func (b *Bridge) cairnWebhook(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	if err != nil {
		http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
		return
	}
	if err := b.Cairn.Verify(body, r.Header); err != nil {
		http.Error(w, "signature: "+err.Error(), http.StatusUnauthorized)
		return
	}
	id := r.Header.Get("webhook-id")
	b.mu.Lock()
	dup := b.seen[id]
	b.mu.Unlock()
	if dup {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	var p webhook.Payload
	if err := json.Unmarshal(body, &p); err != nil {
		http.Error(w, "payload: "+err.Error(), http.StatusBadRequest)
		return
	}
	if err := b.announce(r.Context(), p); err != nil {
		b.Log.Error("posting to Slack failed; Cairn will deliver again", "webhook", id, "err", err)
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	b.mu.Lock()
	b.seen[id] = true
	b.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// announce posts (or updates) the Slack message for one event.
func (b *Bridge) announce(ctx context.Context, p webhook.Payload) error {
	d := p.Data
	switch p.Type {
	case webhook.InterruptCreated:
		if d.Interrupt == nil || d.Actions == nil {
			return nil // an interactive agent's message: nothing to click
		}
		_, ts, err := b.Slack.PostMessageContext(ctx, b.Channel,
			slack.MsgOptionText(summary(d), false), slack.MsgOptionBlocks(approvalBlocks(d)...))
		if err != nil {
			return err
		}
		b.mu.Lock()
		b.messages[d.Interrupt.ID] = ts
		b.mu.Unlock()
	case webhook.InterruptDecided, webhook.InterruptExpired:
		dec := d.Decision
		if dec == nil {
			return errors.New("a decision payload without its decision")
		}
		b.mu.Lock()
		ts, ok := b.messages[dec.InterruptID]
		b.mu.Unlock()
		if !ok {
			return nil // posted before this bridge started, or not by it
		}
		text := session.Visible(fmt.Sprintf("%s by %s", verb(dec.Action), cmp.Or(dec.Actor.Name, "someone")))
		if p.Type == webhook.InterruptExpired {
			text = "Expired: nobody decided in time, so it did not run."
		}
		_, _, _, err := b.Slack.UpdateMessageContext(ctx, b.Channel, ts, slack.MsgOptionText(text, false),
			slack.MsgOptionBlocks(slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, text, false, false), nil, nil)))
		return err
	case webhook.InterruptCompleted:
		// A wait on a system or on the caller settled: it had no action
		// links, so this bridge posted nothing for it.
	case webhook.InterruptReminder, webhook.InterruptEscalated:
		// Still undecided: post it again with the fresh links, saying why;
		// the decision then updates this message.
		if d.Interrupt == nil || d.Actions == nil {
			return nil // not for this channel's people to decide
		}
		why := "Reminder: still waiting for a decision."
		if e := d.Escalation; e != nil && len(e.EscalateTo) > 0 {
			why = fmt.Sprintf("Escalated to %s: still waiting for a decision.", strings.Join(e.EscalateTo, ", "))
		}
		blocks := append([]slack.Block{slack.NewSectionBlock(slack.NewTextBlockObject(slack.PlainTextType, session.Visible(why), false, false), nil, nil)}, approvalBlocks(d)...)
		_, ts, err := b.Slack.PostMessageContext(ctx, b.Channel, slack.MsgOptionText(session.Visible(why)+" "+summary(d), false), slack.MsgOptionBlocks(blocks...))
		if err != nil {
			return err
		}
		b.mu.Lock()
		b.messages[d.Interrupt.ID] = ts
		b.mu.Unlock()
	case webhook.SessionCompleted:
		_, _, err := b.Slack.PostMessageContext(ctx, b.Channel, slack.MsgOptionText(session.Visible(fmt.Sprintf("Session %s completed: %s", d.SessionID, d.Output)), false))
		return err
	case webhook.SessionFailed:
		_, _, err := b.Slack.PostMessageContext(ctx, b.Channel, slack.MsgOptionText(session.Visible(fmt.Sprintf("Session %s failed: %s", d.SessionID, d.Error.Message)), false))
		return err
	}
	return nil
}

// summary says what waits. What a model or a tool wrote goes through
// session.Visible: a right-to-left override in a file name shows as
// ⟨U+202E⟩ instead of turning "gpj.exe" into "exe.jpg".
func summary(d webhook.Data) string {
	in := d.Interrupt
	what := cmp.Or(in.Message, in.Question)
	return session.Visible(fmt.Sprintf("*%s* (agent %s, tool `%s`)", what, d.Agent, in.Tool))
}

// argsShown is how much of a call's arguments a message shows (a Slack
// section holds 3,000 characters); the action link's page has the rest.
const argsShown = 2500

// shownArgs are the arguments as the message shows them: visible, and cut
// after argsShown characters with a word on where the rest is.
func shownArgs(raw []byte) string {
	head, rest := session.Fold(session.Visible(string(raw)), argsShown)
	if rest == "" {
		return head
	}
	return head + fmt.Sprintf("… (%d more characters: the approve link's page shows them whole)", utf8.RuneCountInString(rest))
}

// approvalBlocks are the message: what waits, its arguments, and one button
// per action link (the link is the button's value).
func approvalBlocks(d webhook.Data) []slack.Block {
	blocks := []slack.Block{slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, summary(d), false, false), nil, nil)}
	if len(d.Interrupt.Arguments) > 0 {
		blocks = append(blocks, slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, "```"+shownArgs(d.Interrupt.Arguments)+"```", false, false), nil, nil))
	}
	if p := d.Interrupt.Preview; p != nil {
		// The tool's dry run: what approving would do (a diff, a plan).
		text := "*Preview failed:* " + session.Visible(p.Error)
		if p.Error == "" {
			text = fmt.Sprintf("*Preview (%s):*\n```%s```", p.Format, shownArgs([]byte(p.Text())))
		}
		blocks = append(blocks, slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, text, false, false), nil, nil))
	}
	var buttons []slack.BlockElement
	if d.Actions.Approve != "" {
		buttons = append(buttons, slack.NewButtonBlockElement("approve", d.Actions.Approve, slack.NewTextBlockObject(slack.PlainTextType, "Approve", false, false)).WithStyle(slack.StylePrimary))
	}
	if d.Actions.Reject != "" {
		buttons = append(buttons, slack.NewButtonBlockElement("reject", d.Actions.Reject, slack.NewTextBlockObject(slack.PlainTextType, "Reject", false, false)).WithStyle(slack.StyleDanger))
	}
	return append(blocks, slack.NewActionBlock("cairn_"+d.Interrupt.ID, buttons...))
}

// slackInteraction handles a click: verified with Slack's signing secret,
// acknowledged at once (Slack wants an answer within 3 s), then decided
// through the action link and the message updated with the outcome.
func (b *Bridge) slackInteraction(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	if err != nil {
		http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
		return
	}
	sv, err := slack.NewSecretsVerifier(r.Header, b.SigningSecret)
	if err == nil {
		if _, err = sv.Write(body); err == nil {
			err = sv.Ensure()
		}
	}
	if err != nil {
		http.Error(w, "slack signature: "+err.Error(), http.StatusUnauthorized)
		return
	}
	form, err := url.ParseQuery(string(body))
	var cb slack.InteractionCallback
	if err == nil {
		err = json.Unmarshal([]byte(form.Get("payload")), &cb)
	}
	if err != nil || len(cb.ActionCallback.BlockActions) == 0 {
		http.Error(w, "not a block action", http.StatusBadRequest)
		return
	}
	action := cb.ActionCallback.BlockActions[0]
	if !strings.HasPrefix(action.Value, b.CairnURL+"/v1/actions/") {
		http.Error(w, "the button does not hold one of Cairn's action links", http.StatusBadRequest)
		return
	}
	// This message now tells the click's outcome; the interrupt.decided
	// webhook that follows must not overwrite it.
	b.mu.Lock()
	delete(b.messages, strings.TrimPrefix(action.BlockID, "cairn_"))
	b.mu.Unlock()
	w.WriteHeader(http.StatusOK)
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		ctx := context.WithoutCancel(r.Context())
		text := b.follow(ctx, action.Value, action.ActionID, cb.User)
		if _, _, _, err := b.Slack.UpdateMessageContext(ctx, cb.Channel.ID, cb.Container.MessageTs, slack.MsgOptionText(text, false),
			slack.MsgOptionBlocks(slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, text, false, false), nil, nil))); err != nil {
			b.Log.Error("updating the Slack message", "err", err)
		}
	}()
}

// follow POSTs an action link and says how it went, for the message.
func (b *Bridge) follow(ctx context.Context, link, action string, user slack.User) string {
	who := "<@" + user.ID + ">"
	form := url.Values{}
	if action == "reject" {
		form.Set("reason", "rejected in Slack by "+cmp.Or(user.Name, user.ID))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, link, strings.NewReader(form.Encode()))
	if err != nil {
		return "Could not decide: " + err.Error()
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	client := b.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return "Could not reach Cairn: " + err.Error()
	}
	defer resp.Body.Close()
	var out struct {
		Status string
		Error  struct{ Code, Message string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil && !errors.Is(err, io.EOF) {
		return "Cairn answered " + resp.Status
	}
	switch resp.StatusCode {
	case http.StatusOK:
		return fmt.Sprintf("%s by %s; the session is %s.", verb(session.Action(action)), who, out.Status)
	case http.StatusConflict:
		return "Already decided: " + out.Error.Message
	case http.StatusGone:
		return "Too late: " + out.Error.Message
	}
	return fmt.Sprintf("Cairn refused it (%d %s): %s", resp.StatusCode, out.Error.Code, out.Error.Message)
}

func verb(action session.Action) string {
	if action == session.ActionApprove {
		return "Approved"
	}
	return "Rejected"
}
