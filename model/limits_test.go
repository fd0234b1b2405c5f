package model_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnhq/cairn/model"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// limitErr fetches url with a limited client and returns the LimitError
// that ended the exchange, or fails.
func limitErr(t *testing.T, lim model.Limits, url string) (*model.LimitError, time.Duration) {
	t.Helper()
	start := time.Now()
	resp, err := lim.HTTPClient(nil).Get(url)
	if err == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	var le *model.LimitError
	if !errors.As(err, &le) {
		t.Fatalf("err = %v, want a *model.LimitError", err)
	}
	return le, time.Since(start)
}

func TestIdleTimeoutBeforeTheHeaders(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-release }))
	defer srv.Close()
	defer close(release)
	le, took := limitErr(t, model.Limits{IdleTimeout: 200 * time.Millisecond}, srv.URL)
	if le.Code != model.CodeTimeout || le.Key != "idle_timeout" || le.InAnswer || took > 10*time.Second {
		t.Fatalf("%+v after %v", le, took)
	}
}

func TestIdleTimeoutAfterTheHeaders(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "data: {}\n\n")
		w.(http.Flusher).Flush()
		<-release // headers and a first chunk, then nothing
	}))
	defer srv.Close()
	defer close(release)
	le, _ := limitErr(t, model.Limits{IdleTimeout: 200 * time.Millisecond}, srv.URL)
	if le.Code != model.CodeTimeout || !le.InAnswer || !strings.Contains(le.Error(), "idle_timeout") {
		t.Fatalf("%+v: %v", le, le)
	}
}

// A trickle (a byte every 50 ms) never trips the idle timeout; the answer
// is read whole.
func TestTrickleKeepsAnAttemptAlive(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for range 10 {
			io.WriteString(w, "x")
			w.(http.Flusher).Flush()
			time.Sleep(50 * time.Millisecond) // elapsed time: a server that trickles its reply
		}
	}))
	defer srv.Close()
	resp, err := model.Limits{IdleTimeout: 300 * time.Millisecond}.HTTPClient(nil).Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil || string(b) != strings.Repeat("x", 10) {
		t.Fatalf("%q %v", b, err)
	}
}

// A body past MaxReplyBytes fails there: it is never read whole.
func TestReplyTooLarge(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := strings.Repeat("a", 64<<10)
		for range 800 { // 50 MiB
			if _, err := io.WriteString(w, chunk); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	le, _ := limitErr(t, model.Limits{MaxReplyBytes: 1 << 20}, srv.URL)
	if le.Code != model.CodeReplyTooLarge || le.Limit != "1MiB" || !strings.Contains(le.Error(), "max_reply_bytes") {
		t.Fatalf("%+v: %v", le, le)
	}
}

func TestLimitsDefaultsAndOff(t *testing.T) {
	l := model.Limits{IdleTimeout: -1}.Resolved()
	if l.Timeout != model.DefaultTimeout || l.IdleTimeout != -1 || l.MaxReplyBytes != model.DefaultMaxReplyBytes {
		t.Fatalf("%+v", l)
	}
	if got := model.FormatBytes(8 << 20); got != "8MiB" {
		t.Fatal(got)
	}
}

// TestModelConnectionsAreKept: a server running many turns at once calls
// its model over connections it keeps, instead of opening one per call
// beyond http.DefaultTransport's two idle ones (a TLS handshake each, in
// production).
func TestModelConnectionsAreKept(t *testing.T) {
	var opened atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "{}") }))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			opened.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	client := model.Limits{}.HTTPClient(nil)
	const concurrent, rounds = 16, 5
	for range rounds {
		var wg sync.WaitGroup
		for range concurrent {
			wg.Go(func() {
				resp, err := client.Get(srv.URL)
				if err != nil {
					t.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			})
		}
		wg.Wait()
	}
	// Each round needs at most concurrent connections; kept ones serve the
	// next rounds. With two kept, every round would open about 14 more.
	if n := opened.Load(); n > concurrent {
		t.Fatalf("%d connections opened for %d rounds of %d concurrent calls, want at most %d", n, rounds, concurrent, concurrent)
	}
}

// countingConn counts the write calls made on a connection.
type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countingConn) Write(b []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(b)
}

// TestARequestGoesOutInOneWrite: a provider SDK's request (openai-go
// wraps its body of bytes in a close-once reader of its own) goes out with
// its headers in one write call, not two: one TCP segment, one wake-up of
// the provider's side.
func TestARequestGoesOutInOneWrite(t *testing.T) {
	var got atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got.Store(string(b))
		io.WriteString(w, "{}")
	}))
	defer srv.Close()
	var writes atomic.Int64
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return countingConn{c, &writes}, nil
	}
	client := openai.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("k"), option.WithMaxRetries(0),
		option.WithHTTPClient(model.Limits{}.HTTPClient(&http.Client{Transport: tr})))
	body := []byte(`{"model":"m","input":"hello"}`)
	for i := range 3 {
		before := writes.Load()
		var resp *http.Response
		if err := client.Post(t.Context(), "responses", body, &resp); err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if n := writes.Load() - before; n != 1 {
			t.Fatalf("request %d: %d write calls, want 1", i, n)
		}
		if got.Load() != string(body) {
			t.Fatalf("the server got %q", got.Load())
		}
	}
}
