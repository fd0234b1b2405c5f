// Package hooktest is the tests' one webhook receiver: an HTTP server that
// verifies every delivery with the Standard Webhooks library (as a real
// receiver must) and keeps the payloads by webhook-id, in the order they
// first arrived, with how many times each id was delivered.
package hooktest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/cairnhq/cairn/internal/testkit/testwait"
	"github.com/cairnhq/cairn/webhook"
)

// Receiver receives webhooks at URL until the test ends.
type Receiver struct {
	// URL is where to send deliveries.
	URL      string
	t        testing.TB
	verifier *standardwebhooks.Webhook
	mu       sync.Mutex
	order    []string                   // ids, as first delivered
	payload  map[string]webhook.Payload // by id
	count    map[string]int             // deliveries by id
	hold     chan string                // set by Hold: the next delivery is held open
}

// New starts a receiver that verifies deliveries signed with secret.
func New(t testing.TB, secret string) *Receiver {
	v, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	rc := &Receiver{t: t, verifier: v, payload: map[string]webhook.Payload{}, count: map[string]int{}}
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	rc.URL = srv.URL + "/hooks"
	return rc
}

// ServeHTTP implements http.Handler.
func (rc *Receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if err := rc.verifier.Verify(body, r.Header); err != nil {
		rc.t.Errorf("a delivery does not verify: %v\n%s", err, body)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	var p webhook.Payload
	if err := json.Unmarshal(body, &p); err != nil {
		rc.t.Errorf("payload: %v\n%s", err, body)
	}
	id := r.Header.Get("webhook-id")
	rc.mu.Lock()
	if rc.count[id] == 0 {
		rc.order = append(rc.order, id)
	}
	rc.count[id]++
	rc.payload[id] = p
	held := rc.hold
	rc.hold = nil
	rc.mu.Unlock()
	if held != nil {
		held <- id
		<-r.Context().Done() // never answered: the sender gives up or dies
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// Hold holds the next delivery open, never answering it, and sends its id
// on the channel returned.
func (rc *Receiver) Hold() <-chan string {
	held := make(chan string, 1)
	rc.mu.Lock()
	rc.hold = held
	rc.mu.Unlock()
	return held
}

// Payloads are the payloads of type typ, once per id, in arrival order.
func (rc *Receiver) Payloads(typ webhook.EventType) []webhook.Payload {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []webhook.Payload
	for _, id := range rc.order {
		if rc.payload[id].Type == typ {
			out = append(out, rc.payload[id])
		}
	}
	return out
}

// Deliveries are the ids of type typ and how many times each was delivered.
func (rc *Receiver) Deliveries(typ webhook.EventType) map[string]int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	out := map[string]int{}
	for id, p := range rc.payload {
		if p.Type == typ {
			out[id] = rc.count[id]
		}
	}
	return out
}

// Len is how many deliveries (distinct ids, of any type) arrived.
func (rc *Receiver) Len() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.order)
}

// Payload is the payload delivered with id.
func (rc *Receiver) Payload(id string) webhook.Payload {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.payload[id]
}

// WaitForSession waits up to within for a payload of type typ about
// session id and returns the first, or fails the test.
func (rc *Receiver) WaitForSession(typ webhook.EventType, id string, within time.Duration) webhook.Payload {
	rc.t.Helper()
	var found webhook.Payload
	testwait.For(rc.t, within, string(typ)+" for session "+id, func() bool {
		for _, p := range rc.Payloads(typ) {
			if p.Data.SessionID == id {
				found = p
				return true
			}
		}
		return false
	})
	return found
}

// WaitFor waits up to within for n payloads of type typ and returns them
// (in arrival order), or fails the test.
func (rc *Receiver) WaitFor(typ webhook.EventType, n int, within time.Duration) []webhook.Payload {
	rc.t.Helper()
	testwait.For(rc.t, within, "webhooks of type "+string(typ), func() bool { return len(rc.Payloads(typ)) >= n })
	return rc.Payloads(typ)
}
