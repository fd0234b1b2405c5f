package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// FakeSlack is a local stand-in for the parts of Slack the bridge uses: the
// Web API's chat.postMessage and chat.update (as slack-go calls them), a
// channel page to look at, and clicks sent to the app's interactivity URL
// signed the way Slack signs them. It is for the demo and the test: point
// the bridge at real Slack by leaving -fake-slack out.
type FakeSlack struct {
	// Token is the bot token the API accepts.
	Token string
	// SigningSecret signs the clicks it sends.
	SigningSecret string
	// InteractionsURL receives the clicks (the bridge's /slack/interactions).
	InteractionsURL string

	mu       sync.Mutex
	messages []*FakeMessage
}

// FakeMessage is a message in the fake channel.
type FakeMessage struct {
	Channel, TS, Text string
	// Sections are the texts of its section blocks, in order.
	Sections []string
	Buttons  []FakeButton
	Updates  int
}

// FakeButton is a button of a message's actions block.
type FakeButton struct {
	BlockID, ActionID, Value, Label string
}

// NewFakeSlack returns a fake Slack accepting token.
func NewFakeSlack(token, signingSecret string) *FakeSlack {
	return &FakeSlack{Token: token, SigningSecret: signingSecret}
}

// Handler serves the API under /api/ and the channel page at /.
func (f *FakeSlack) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/chat.postMessage", func(w http.ResponseWriter, r *http.Request) { f.chat(w, r, false) })
	mux.HandleFunc("POST /api/chat.update", func(w http.ResponseWriter, r *http.Request) { f.chat(w, r, true) })
	mux.HandleFunc("GET /{$}", f.page)
	mux.HandleFunc("POST /click", func(w http.ResponseWriter, r *http.Request) {
		if err := f.Click(r.Context(), r.FormValue("ts"), r.FormValue("action"), "U0DEMO", "demo-user"); err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		time.Sleep(500 * time.Millisecond) // let the bridge update the message before the page reloads
		http.Redirect(w, r, "/", http.StatusSeeOther)
	})
	return mux
}

// chat answers chat.postMessage and chat.update as Slack does: HTTP 200
// with {"ok": false, "error": …} for a refused call.
func (f *FakeSlack) chat(w http.ResponseWriter, r *http.Request, update bool) {
	w.Header().Set("Content-Type", "application/json")
	if err := r.ParseForm(); err != nil {
		json.NewEncoder(w).Encode(map[string]any{"ok": false, "error": "invalid_form_data"})
		return
	}
	token := r.PostForm.Get("token")
	if bearer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		token = bearer
	}
	if token != f.Token {
		json.NewEncoder(w).Encode(map[string]any{"ok": false, "error": "invalid_auth"})
		return
	}
	sections, buttons, err := parseBlocks(r.PostForm.Get("blocks"))
	if err != nil {
		json.NewEncoder(w).Encode(map[string]any{"ok": false, "error": "invalid_blocks"})
		return
	}
	channel, text := r.PostForm.Get("channel"), r.PostForm.Get("text")
	f.mu.Lock()
	var m *FakeMessage
	if update {
		for _, old := range f.messages {
			if old.Channel == channel && old.TS == r.PostForm.Get("ts") {
				m = old
			}
		}
		if m == nil {
			f.mu.Unlock()
			json.NewEncoder(w).Encode(map[string]any{"ok": false, "error": "message_not_found"})
			return
		}
		m.Text, m.Sections, m.Buttons = text, sections, buttons
		m.Updates++
	} else {
		m = &FakeMessage{Channel: channel, TS: fmt.Sprintf("1700000000.%06d", len(f.messages)+1), Text: text, Sections: sections, Buttons: buttons}
		f.messages = append(f.messages, m)
	}
	ts := m.TS
	f.mu.Unlock()
	json.NewEncoder(w).Encode(map[string]any{"ok": true, "channel": channel, "ts": ts, "text": text})
}

// parseBlocks reads the section texts and the buttons of a message's
// Block Kit JSON.
func parseBlocks(blocks string) ([]string, []FakeButton, error) {
	if blocks == "" {
		return nil, nil, nil
	}
	var bs []struct {
		Type    string `json:"type"`
		BlockID string `json:"block_id"`
		Text    *struct {
			Text string `json:"text"`
		} `json:"text"`
		Elements []struct {
			Type     string `json:"type"`
			ActionID string `json:"action_id"`
			Value    string `json:"value"`
			Text     struct {
				Text string `json:"text"`
			} `json:"text"`
		} `json:"elements"`
	}
	if err := json.Unmarshal([]byte(blocks), &bs); err != nil {
		return nil, nil, err
	}
	var sections []string
	var out []FakeButton
	for _, b := range bs {
		if b.Type == "section" && b.Text != nil {
			sections = append(sections, b.Text.Text)
		}
		for _, e := range b.Elements {
			if b.Type == "actions" && e.Type == "button" {
				out = append(out, FakeButton{BlockID: b.BlockID, ActionID: e.ActionID, Value: e.Value, Label: e.Text.Text})
			}
		}
	}
	return sections, out, nil
}

// Messages returns a copy of the channel's messages, oldest first.
func (f *FakeSlack) Messages() []FakeMessage {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]FakeMessage, len(f.messages))
	for i, m := range f.messages {
		out[i] = *m
	}
	return out
}

// Click presses the button actionID of message ts as user, sending the
// block_actions payload to InteractionsURL signed with SigningSecret.
func (f *FakeSlack) Click(ctx context.Context, ts, actionID, userID, userName string) error {
	var msg *FakeMessage
	var button *FakeButton
	f.mu.Lock()
	for _, m := range f.messages {
		for i, b := range m.Buttons {
			if m.TS == ts && b.ActionID == actionID {
				msg, button = m, &m.Buttons[i]
			}
		}
	}
	f.mu.Unlock()
	if button == nil {
		return fmt.Errorf("fake slack: message %s has no button %q", ts, actionID)
	}
	return f.Press(ctx, msg.Channel, ts, *button, userID, userName)
}

// Press sends a click on button of message ts in channel, whether or not
// the message still shows it (a replayed or late click).
func (f *FakeSlack) Press(ctx context.Context, channel, ts string, button FakeButton, userID, userName string) error {
	payload, _ := json.Marshal(map[string]any{
		"type":      "block_actions",
		"user":      map[string]string{"id": userID, "name": userName},
		"channel":   map[string]string{"id": channel, "name": channel},
		"container": map[string]any{"type": "message", "message_ts": ts, "channel_id": channel},
		"message":   map[string]string{"ts": ts},
		"actions": []map[string]string{{"type": "button", "action_id": button.ActionID, "block_id": button.BlockID,
			"value": button.Value, "action_ts": strconv.FormatInt(time.Now().Unix(), 10)}},
	})
	body := url.Values{"payload": {string(payload)}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.InteractionsURL, strings.NewReader(body))
	if err != nil {
		return err
	}
	stamp := strconv.FormatInt(time.Now().Unix(), 10)
	mac := hmac.New(sha256.New, []byte(f.SigningSecret))
	fmt.Fprintf(mac, "v0:%s:%s", stamp, body)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Slack-Request-Timestamp", stamp)
	req.Header.Set("X-Slack-Signature", "v0="+hex.EncodeToString(mac.Sum(nil)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("fake slack: the app answered the click with %s", resp.Status)
	}
	return nil
}

var channelPage = template.Must(template.New("channel").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>#approvals (fake Slack)</title>
<style>body{font:15px/1.5 system-ui,sans-serif;max-width:44rem;margin:2rem auto}
.msg{border-bottom:1px solid #ddd;padding:.75rem 0;white-space:pre-wrap}button{margin-right:.5rem}</style></head><body>
<h1>#approvals <small>(a local fake of Slack)</small></h1>
{{range .}}<div class="msg">{{.Text}}{{$ts := .TS}}{{with .Buttons}}<form method="post" action="/click"><input type="hidden" name="ts" value="{{$ts}}">
{{range .}}<button name="action" value="{{.ActionID}}">{{.Label}}</button>{{end}}</form>{{end}}</div>
{{else}}<p>No messages yet. Start a session that needs an approval.</p>{{end}}
<script>setTimeout(() => location.reload(), 3000)</script>
</body></html>`))

func (f *FakeSlack) page(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	channelPage.Execute(w, f.Messages())
}
