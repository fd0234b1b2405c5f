package webhook

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/cairnhq/cairn/store"
)

// Endpoint is where the messages of one topic go.
type Endpoint struct {
	// URL receives the POSTs (http or https).
	URL string
	// Secret signs them: "whsec_" followed by base64, the form Standard
	// Webhooks libraries take (the prefix is optional). Generate one with
	// `echo whsec_$(openssl rand -base64 32)`.
	Secret string
	// Timeout bounds one attempt; 0 means 10 s.
	Timeout time.Duration
}

// Options tune a Deliverer; the zero value is ready for production.
type Options struct {
	// Client sends the POSTs (each bounded by its endpoint's Timeout); nil
	// means http.DefaultClient's transport.
	Client *http.Client
	// Owner names this process in claims; empty means "webhooks".
	Owner string
	// Logger receives failed deliveries; nil means slog.Default().
	Logger *slog.Logger
	// Now is the clock of claims and retries; nil means time.Now. It must
	// agree with the CreatedAt of the messages (the runner's clock).
	Now func() time.Time
	// Poll is how often the outbox is read when nothing wakes the
	// deliverer (messages written by other processes); 0 means 1 s.
	Poll time.Duration
	// Claim is how long a process keeps a message it is delivering: if it
	// stops meanwhile, another delivers the message once the claim runs
	// out. 0 means the longest endpoint Timeout plus 10 s; a shorter claim
	// is lengthened to that.
	Claim time.Duration
	// FirstRetry is the wait after a first failed attempt, doubled after
	// each further one (±20 % jitter) up to MaxRetry. 0 means 5 s and 1 h.
	FirstRetry, MaxRetry time.Duration
	// MaxAttempts is when to give up on a message (it stays in the outbox,
	// logged); 0 means 20 attempts (about 10 hours with the defaults).
	MaxAttempts int
	// Batch is how many messages one pass claims; 0 means 16.
	Batch int
}

// Deliverer sends an outbox's messages to their endpoints. Run it on every
// process that shares the store: each message is claimed by one at a time.
type Deliverer struct {
	outbox    store.Outbox
	endpoints map[string]endpoint
	opts      Options
	log       *slog.Logger
	wake      chan struct{}
}

type endpoint struct {
	url     string
	signer  *standardwebhooks.Webhook
	timeout time.Duration
}

// New checks the endpoints (keyed by topic: the Message.Topic they
// receive) and returns a Deliverer. opts may be nil.
func New(outbox store.Outbox, endpoints map[string]Endpoint, opts *Options) (*Deliverer, error) {
	d := &Deliverer{outbox: outbox, endpoints: make(map[string]endpoint, len(endpoints)), wake: make(chan struct{}, 1)}
	if opts != nil {
		d.opts = *opts
	}
	o := &d.opts
	if o.Client == nil {
		o.Client = &http.Client{}
	}
	if o.Owner == "" {
		o.Owner = "webhooks"
	}
	d.log = o.Logger
	if d.log == nil {
		d.log = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	o.Poll = positive(o.Poll, time.Second)
	o.FirstRetry = positive(o.FirstRetry, 5*time.Second)
	o.MaxRetry = positive(o.MaxRetry, time.Hour)
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 20
	}
	if o.Batch <= 0 {
		o.Batch = 16
	}
	for topic, e := range endpoints {
		u, err := url.Parse(e.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("webhook %s: url %q is not an absolute http(s) URL", topic, e.URL)
		}
		if err := CheckSecret(e.Secret); err != nil {
			return nil, fmt.Errorf("webhook %s: %w", topic, err)
		}
		signer, err := standardwebhooks.NewWebhook(e.Secret)
		if err != nil {
			return nil, fmt.Errorf("webhook %s: %w", topic, err)
		}
		if e.Timeout < 0 {
			return nil, fmt.Errorf("webhook %s: timeout %s is negative", topic, e.Timeout)
		}
		ep := endpoint{url: e.URL, signer: signer, timeout: positive(e.Timeout, 10*time.Second)}
		d.endpoints[topic] = ep
		o.Claim = max(o.Claim, ep.timeout+10*time.Second)
	}
	return d, nil
}

// CheckSecret checks a signing secret: "whsec_" (optional) followed by
// base64 of at least 18 bytes, the form Standard Webhooks libraries take.
func CheckSecret(secret string) error {
	if secret == "" {
		return errors.New("no secret: deliveries must be signed (whsec_ followed by base64: echo whsec_$(openssl rand -base64 32))")
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil || len(key) < 18 {
		return errors.New("the secret is not whsec_ followed by base64 of at least 18 bytes; make one with echo whsec_$(openssl rand -base64 32)")
	}
	return nil
}

func positive(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// Wake makes Run look at the outbox now (a commit wrote messages).
func (d *Deliverer) Wake() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Run delivers until ctx ends: whenever woken, and every Poll.
func (d *Deliverer) Run(ctx context.Context) {
	t := time.NewTicker(d.opts.Poll)
	defer t.Stop()
	for {
		for {
			n, err := d.DeliverDue(ctx)
			if err != nil && ctx.Err() == nil {
				d.log.Error("webhook outbox", "err", err)
			}
			if n < d.opts.Batch || err != nil {
				break // the outbox had no more due
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-d.wake:
		}
	}
}

// DeliverDue claims the messages due now (up to Options.Batch), sends them
// at once and acknowledges or reschedules each. It returns how many it
// claimed.
func (d *Deliverer) DeliverDue(ctx context.Context) (int, error) {
	now := d.opts.Now()
	msgs, err := d.outbox.ClaimMessages(ctx, d.opts.Owner, now, now.Add(d.opts.Claim), d.opts.Batch)
	if err != nil {
		return 0, err
	}
	var wg sync.WaitGroup
	errs := make([]error, len(msgs))
	for i, m := range msgs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = d.deliver(ctx, m)
		}()
	}
	wg.Wait()
	return len(msgs), errors.Join(errs...)
}

// deliver sends one claimed message and records the outcome in the outbox.
func (d *Deliverer) deliver(ctx context.Context, m store.Message) error {
	e, ok := d.endpoints[m.Topic]
	if !ok {
		d.log.Error("webhook message for an endpoint no longer configured: given up (it stays in the outbox)", "id", m.ID, "endpoint", m.Topic)
		return d.outbox.RetryMessage(ctx, m.ID, d.opts.Owner, time.Time{}, "no endpoint "+m.Topic)
	}
	sendErr := d.send(ctx, e, m)
	if sendErr == nil {
		return d.outbox.AckMessage(ctx, m.ID)
	}
	if ctx.Err() != nil {
		return nil // stopping: the claim runs out and someone sends it again
	}
	var next time.Time
	if m.Attempts < d.opts.MaxAttempts {
		next = d.opts.Now().Add(d.backoff(m.Attempts))
		d.log.Warn("webhook delivery failed; will retry", "id", m.ID, "endpoint", m.Topic, "attempt", m.Attempts, "retry_at", next, "err", sendErr)
	} else {
		d.log.Error("webhook delivery failed; given up (it stays in the outbox)", "id", m.ID, "endpoint", m.Topic, "attempts", m.Attempts, "err", sendErr)
	}
	err := d.outbox.RetryMessage(ctx, m.ID, d.opts.Owner, next, sendErr.Error())
	if errors.Is(err, store.ErrConflict) {
		return nil // our claim ran out and another process has the message
	}
	return err
}

// backoff is the wait after the given number of failed attempts.
func (d *Deliverer) backoff(attempts int) time.Duration {
	wait := d.opts.FirstRetry
	for i := 1; i < attempts && wait < d.opts.MaxRetry; i++ {
		wait *= 2
	}
	wait = min(wait, d.opts.MaxRetry)
	return time.Duration(float64(wait) * (0.8 + 0.4*rand.Float64()))
}

// send POSTs m, signed as Standard Webhooks says: the signature covers
// "id.timestamp.body", and the timestamp is this attempt's.
func (d *Deliverer) send(ctx context.Context, e endpoint, m store.Message) error {
	at := d.opts.Now()
	sig, err := e.signer.Sign(m.ID, at, m.Body)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(m.Body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "cairn-webhooks")
	req.Header.Set(standardwebhooks.HeaderWebhookID, m.ID)
	req.Header.Set(standardwebhooks.HeaderWebhookTimestamp, fmt.Sprint(at.Unix()))
	req.Header.Set(standardwebhooks.HeaderWebhookSignature, sig)
	resp, err := d.opts.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // drained so the connection is reused; the status decides
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("%s answered %s", e.url, resp.Status)
	}
	return nil
}
