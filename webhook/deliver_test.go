package webhook_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/webhook"
)

// The test vector of the Standard Webhooks specification.
const (
	specSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	specID        = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	specTimestamp = 1614265330
	specBody      = `{"test": 2432232314}`
	specSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

// receiver records the deliveries it gets; answer decides each status.
type receiver struct {
	mu     sync.Mutex
	got    []http.Header
	bodies []string
	answer func(n int) int
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	rc.got = append(rc.got, r.Header.Clone())
	rc.bodies = append(rc.bodies, string(body))
	n := len(rc.got)
	rc.mu.Unlock()
	status := http.StatusNoContent
	if rc.answer != nil {
		status = rc.answer(n)
	}
	w.WriteHeader(status)
}

func (rc *receiver) deliveries() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.got)
}

// outboxWith is a real (in-memory) store whose outbox holds msgs.
func outboxWith(t *testing.T, msgs ...store.Message) *store.Memory {
	t.Helper()
	m := store.NewMemory()
	at := time.Unix(specTimestamp, 0)
	h := store.Head{ID: "s1", Agent: "main", Status: session.StatusPaused, Seq: 1, CreatedAt: at, UpdatedAt: at, Summary: json.RawMessage(`{}`), Outbox: msgs}
	if err := m.Append(context.Background(), h, 0, []session.Event{{Seq: 1, Type: session.EventUserMessage, Time: at, Data: json.RawMessage(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestSignatureMatchesTheSpecification(t *testing.T) {
	t.Parallel()
	rc := &receiver{}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	at := time.Unix(specTimestamp, 0)
	out := outboxWith(t, store.Message{ID: specID, Topic: "hooks", Body: []byte(specBody), CreatedAt: at})
	d, err := webhook.New(out, map[string]webhook.Endpoint{"hooks": {URL: srv.URL, Secret: specSecret}}, &webhook.Options{Now: func() time.Time { return at }})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := d.DeliverDue(context.Background()); n != 1 || err != nil {
		t.Fatalf("DeliverDue = %d, %v", n, err)
	}
	h := rc.got[0]
	if h.Get("webhook-signature") != specSignature || h.Get("webhook-id") != specID || h.Get("webhook-timestamp") != "1614265330" || rc.bodies[0] != specBody {
		t.Fatalf("headers %v body %s; want the specification's signature %s", h, rc.bodies[0], specSignature)
	}
	wh, _ := standardwebhooks.NewWebhook(specSecret)
	if err := wh.VerifyIgnoringTimestamp([]byte(rc.bodies[0]), h); err != nil {
		t.Fatalf("the Standard Webhooks library refuses it: %v", err)
	}
	if left, _ := out.ClaimMessages(context.Background(), "x", at.Add(time.Hour), at.Add(2*time.Hour), 10); len(left) != 0 {
		t.Fatalf("a delivered message is still in the outbox: %+v", left)
	}
}

// A receiver that fails is tried again later with the same id and a fresh
// signature, backing off; after MaxAttempts the message is given up.
func TestFailedDeliveriesBackOffAndGiveUp(t *testing.T) {
	t.Parallel()
	rc := &receiver{answer: func(int) int { return http.StatusServiceUnavailable }}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	now := time.Unix(specTimestamp, 0)
	clock := func() time.Time { return now }
	out := outboxWith(t, store.Message{ID: "msg_1", Topic: "hooks", Body: []byte(`{}`), CreatedAt: now})
	d, err := webhook.New(out, map[string]webhook.Endpoint{"hooks": {URL: srv.URL, Secret: specSecret}},
		&webhook.Options{Now: clock, FirstRetry: time.Second, MaxRetry: 8 * time.Second, MaxAttempts: 6})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var waits []time.Duration
	last := now
	for attempt := 1; attempt <= 6; attempt++ {
		// Step the clock until the message is due again.
		for {
			n, err := d.DeliverDue(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if n == 1 {
				break
			}
			now = now.Add(100 * time.Millisecond)
			if now.Sub(last) > time.Minute {
				t.Fatalf("attempt %d never came due", attempt)
			}
		}
		waits = append(waits, now.Sub(last))
		last = now
	}
	// Waits: 0, then about 1, 2, 4, 8, 8 s (±20 %).
	want := []time.Duration{0, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 8 * time.Second}
	for i, w := range waits {
		if lo, hi := time.Duration(float64(want[i])*0.8)-100*time.Millisecond, time.Duration(float64(want[i])*1.2)+100*time.Millisecond; w < lo || w > hi {
			t.Fatalf("wait before attempt %d = %v, want about %v (all: %v)", i+1, w, want[i], waits)
		}
	}
	now = now.Add(24 * time.Hour)
	if n, _ := d.DeliverDue(ctx); n != 0 || rc.deliveries() != 6 {
		t.Fatalf("after giving up: claimed %d, delivered %d times (want 0, 6)", n, rc.deliveries())
	}
	ids := map[string]bool{}
	wh, _ := standardwebhooks.NewWebhook(specSecret)
	for i, h := range rc.got {
		ids[h.Get("webhook-id")] = true
		if err := wh.VerifyIgnoringTimestamp([]byte(rc.bodies[i]), h); err != nil {
			t.Fatalf("attempt %d does not verify: %v", i+1, err)
		}
	}
	firstTry, lastTry := rc.got[0], rc.got[len(rc.got)-1]
	if len(ids) != 1 || firstTry.Get("webhook-timestamp") == lastTry.Get("webhook-timestamp") || firstTry.Get("webhook-signature") == lastTry.Get("webhook-signature") {
		t.Fatalf("ids %v (want one); first and last attempts signed at %s and %s (want each attempt signed at its own time)",
			ids, firstTry.Get("webhook-timestamp"), lastTry.Get("webhook-timestamp"))
	}
}

func TestBadEndpointsAreRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		e    webhook.Endpoint
		want string
	}{
		{webhook.Endpoint{URL: "example.org/hook", Secret: specSecret}, "absolute http(s) URL"},
		{webhook.Endpoint{URL: "https://example.org/hook"}, "no secret"},
		{webhook.Endpoint{URL: "https://example.org/hook", Secret: "whsec_not base64!"}, "not whsec_ followed by base64"},
	} {
		_, err := webhook.New(store.NewMemory(), map[string]webhook.Endpoint{"hooks": tc.e}, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "webhook hooks") {
			t.Errorf("%+v: %v, want an error naming the endpoint and %q", tc.e, err, tc.want)
		}
	}
}
