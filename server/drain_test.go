package server_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/model/scripted"
	"github.com/cairnhq/cairn/server"
	"github.com/cairnhq/cairn/store"
)

// CloseStreams ends open event streams at once with a retry hint and
// refuses new ones with 503 stopping; other requests are still served.
func TestCloseStreamsEndsReadersNotRequests(t *testing.T) {
	r, err := cairn.NewRunner([]*cairn.Agent{{Name: "main", Model: scripted.New(scripted.Reply{Text: "hi"})}}, &cairn.RunnerOptions{Store: store.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	srv := server.New(r, nil)
	hs := httptest.NewServer(srv)
	defer hs.Close()
	sess, err := r.Start(t.Context(), "main", "hello", nil)
	if err != nil {
		t.Fatal(err)
	}
	open := func(path string) (*http.Response, error) {
		req, _ := http.NewRequest("GET", hs.URL+path, nil)
		req.Header.Set("Accept", "text/event-stream")
		return http.DefaultClient.Do(req)
	}
	ended := make(chan string, 2)
	for _, path := range []string{"/v1/sessions/" + sess.ID + "/events", "/v1/events"} {
		resp, err := open(path)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s: %v %v", path, err, resp)
		}
		go func() {
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			ended <- string(b)
		}()
	}
	srv.CloseStreams() // the headers came: both streams are open
	for range 2 {
		select {
		case body := <-ended:
			if !strings.Contains(body, "retry: 1000\n") {
				t.Fatalf("stream ended without the retry hint:\n%s", body)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a stream stayed open after CloseStreams")
		}
	}
	resp, err := open("/v1/events")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a new stream after CloseStreams: %d, want 503 with Retry-After", resp.StatusCode)
	}
	if resp, err := http.Get(hs.URL + "/v1/sessions/" + sess.ID); err != nil || resp.StatusCode != 200 {
		t.Fatalf("a plain request after CloseStreams: %v %v", err, resp)
	}
}

// A draining runner (Shutdown) takes no new work: creates, messages and
// decisions that reach it answer 503 stopping with Retry-After, never a
// 409 that tells the client to give up, and record nothing.
func TestDrainingAnswers503(t *testing.T) {
	r, err := cairn.NewRunner([]*cairn.Agent{{Name: "main", Model: scripted.New(scripted.Reply{Text: "hi"})}}, &cairn.RunnerOptions{Store: store.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	hs := httptest.NewServer(server.New(r, nil))
	defer hs.Close()
	sess, err := r.Start(t.Context(), "main", "hello", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, body string }{
		{"/v1/sessions", `{"agent":"main","input":"hello"}`},
		{"/v1/sessions/" + sess.ID + "/messages", `{"text":"again"}`},
	} {
		resp, err := http.Post(hs.URL+c.path, "application/json", strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(b), `"stopping"`) {
			t.Fatalf("POST %s while draining: %d %q %s", c.path, resp.StatusCode, resp.Header.Get("Retry-After"), b)
		}
	}
	if got, err := r.Session(t.Context(), sess.ID); err != nil || got.Seq != sess.Seq {
		t.Fatalf("the session after the refused message: %+v %v", got, err)
	}
}
