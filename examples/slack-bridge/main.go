// Command slack-bridge is an example: a Slack approval bridge for Cairn.
// It receives Cairn's webhooks (docs/webhooks.md), posts each approval to a
// Slack channel with Approve and Reject buttons, and decides through the
// interrupt's signed action link when someone clicks, so the bridge itself
// holds no Cairn token. With -fake-slack it also runs a local fake of
// Slack's API and a channel page to click in; see README.md.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"

	"github.com/slack-go/slack"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "slack-bridge:", err)
		os.Exit(1)
	}
}

func run() error {
	addr := flag.String("addr", "127.0.0.1:8090", "address of the bridge (webhook at /cairn/webhook, Slack interactivity at /slack/interactions)")
	fake := flag.String("fake-slack", "", "run a local fake of Slack on this address (e.g. 127.0.0.1:8091) instead of talking to slack.com")
	flag.Parse()
	env := func(name, def string) string { return cmp.Or(os.Getenv(name), def) }
	secret, cairnURL := os.Getenv("CAIRN_WEBHOOK_SECRET"), strings.TrimRight(env("CAIRN_PUBLIC_URL", "http://127.0.0.1:8080"), "/")
	if secret == "" {
		return errors.New("set CAIRN_WEBHOOK_SECRET to the secret of the webhook in Cairn's config (whsec_…)")
	}
	verifier, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		return fmt.Errorf("CAIRN_WEBHOOK_SECRET: %w", err)
	}
	token, signing, apiURL := os.Getenv("SLACK_BOT_TOKEN"), os.Getenv("SLACK_SIGNING_SECRET"), "https://slack.com/api/"
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	if *fake != "" {
		token, signing = cmp.Or(token, "xoxb-fake"), cmp.Or(signing, "fake-signing-secret")
		fs := NewFakeSlack(token, signing)
		fs.InteractionsURL = "http://" + ln.Addr().String() + "/slack/interactions"
		fln, err := net.Listen("tcp", *fake)
		if err != nil {
			return err
		}
		go func() {
			if err := http.Serve(fln, fs.Handler()); err != nil {
				log.Error("the fake Slack stopped", "err", err)
			}
		}()
		apiURL = "http://" + fln.Addr().String() + "/api/"
		fmt.Fprintf(os.Stderr, "FAKE Slack (not slack.com): open http://%s/ to see #approvals and click\n", fln.Addr())
	}
	if token == "" || signing == "" {
		return errors.New("set SLACK_BOT_TOKEN and SLACK_SIGNING_SECRET (or run with -fake-slack 127.0.0.1:8091)")
	}
	b := &Bridge{Cairn: verifier, CairnURL: cairnURL, Slack: slack.New(token, slack.OptionAPIURL(apiURL)),
		Channel: env("SLACK_CHANNEL", "#approvals"), SigningSecret: signing, Log: log,
		seen: map[string]bool{}, messages: map[string]string{}}
	fmt.Fprintf(os.Stderr, "bridge on http://%s: webhook url http://%s/cairn/webhook; following action links under %s\n", ln.Addr(), ln.Addr(), cairnURL)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	srv := &http.Server{Handler: b.Handler()}
	go func() { <-ctx.Done(); _ = srv.Shutdown(context.Background()) }() // Serve below reports the end
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	b.Wait()
	return nil
}
