package openai

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/cairnhq/cairn/model"
)

// seen is a request as the provider received it.
type seen struct {
	method, url, body string
	header            http.Header
}

// scriptedProvider answers each request with the next of its answers
// (the last one again once they run out) and records what it received.
type scriptedProvider struct {
	*httptest.Server
	mu      sync.Mutex
	got     []seen
	answers []func(w http.ResponseWriter, r *http.Request)
}

func newScriptedProvider(t *testing.T) *scriptedProvider {
	p := &scriptedProvider{}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		p.mu.Lock()
		p.got = append(p.got, seen{r.Method, r.URL.String(), string(b), r.Header.Clone()})
		answer := okAnswer
		if len(p.answers) > 0 {
			answer = p.answers[0]
			if len(p.answers) > 1 {
				p.answers = p.answers[1:]
			}
		}
		p.mu.Unlock()
		answer(w, r)
	}))
	t.Cleanup(p.Close)
	return p
}

// script sets the answers of the next requests and forgets what was seen.
func (p *scriptedProvider) script(answers ...func(w http.ResponseWriter, r *http.Request)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.answers, p.got = answers, nil
}

func (p *scriptedProvider) requests() []seen {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.got)
}

func okAnswer(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	if strings.Contains(r.URL.Path, "/responses") {
		io.WriteString(w, `{"id":"resp_1","object":"response","status":"completed","output":[{"type":"message","id":"m1","role":"assistant","status":"completed","content":[{"type":"output_text","text":"ok","annotations":[]}]}]}`)
		return
	}
	io.WriteString(w, `{"id":"c1","object":"chat.completion","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"ok"}}]}`)
}

// status answers code with body and headers (key, value, key, value…).
func status(code int, body string, headers ...string) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(headers); i += 2 {
			w.Header().Set(headers[i], headers[i+1])
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		io.WriteString(w, body)
	}
}

// redirectOnce sends a request on to its path's /moved, which answers.
func redirectOnce(w http.ResponseWriter, r *http.Request) {
	if strings.HasSuffix(r.URL.Path, "/moved") {
		okAnswer(w, r)
		return
	}
	http.Redirect(w, r, r.URL.Path+"/moved", http.StatusTemporaryRedirect)
}

// hangUp drops the connection without an answer.
func hangUp(w http.ResponseWriter, r *http.Request) {
	c, _, err := w.(http.Hijacker).Hijack()
	if err == nil {
		c.Close()
	}
}

// leanModels are both lean paths against url, two retries each.
func leanModels(url string) map[string]model.Model {
	retries := 2
	opts := Options{BaseURL: url + "/v1", APIKey: "sk-test", MaxRetries: &retries}
	return map[string]model.Model{
		"chat":      New("m", &opts),
		"responses": NewResponses("m", &ResponsesOptions{Options: opts}),
	}
}

// learnedOf is the request the model's lean path learned, if any.
func learnedOf(m model.Model) *learnedRequest {
	switch m := m.(type) {
	case *Model:
		return m.chat.learned.Load()
	case *Responses:
		return m.lean.learned.Load()
	}
	return nil
}

// The lean path's first request goes through the SDK's client; the ones
// after it are sent directly, with the URL and every header the SDK sent,
// and the same body: the provider cannot tell them apart.
func TestLeanRequestsAreTheSDKs(t *testing.T) {
	p := newScriptedProvider(t)
	for name, m := range leanModels(p.URL) {
		t.Run(name, func(t *testing.T) {
			p.script()
			req := &model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hello"}}}
			for i := range 3 {
				if i == 1 && learnedOf(m) == nil {
					t.Fatal("the first request taught the lean path nothing: the next ones go through the SDK")
				}
				if _, err := m.Generate(t.Context(), req); err != nil {
					t.Fatal(err)
				}
			}
			got := p.requests()
			if len(got) != 3 {
				t.Fatalf("%d requests", len(got))
			}
			for i, r := range got[1:] {
				if r.method != got[0].method || r.url != got[0].url || r.body != got[0].body || fmt.Sprint(r.header) != fmt.Sprint(got[0].header) {
					t.Errorf("request %d differs from the SDK's:\n%+v\nthe SDK's:\n%+v", i+2, r, got[0])
				}
			}
			if got[0].header.Get("Authorization") != "Bearer sk-test" || got[0].header.Get("X-Stainless-Retry-Count") != "0" {
				t.Errorf("the SDK's headers: %v", got[0].header)
			}
		})
	}
}

// outcome is what Cairn sees of a call, and what the provider received.
type outcome struct {
	text     string
	status   int
	message  string
	request  string
	err      string
	received int
}

// A call that fails on the lean path (after it learned its request) is
// the SDK's: the same requests reach the provider — retries after 429
// and 5xx honouring Retry-After-Ms, none after a 400 or x-should-retry:
// false, one after a dropped connection — and the same error comes back,
// as when the SDK's client carries the call from the start. A redirect is
// followed by the SDK (one request more: the lean attempt's).
func TestFailuresAreTheSDKs(t *testing.T) {
	p := newScriptedProvider(t)
	scenarios := map[string][]func(w http.ResponseWriter, r *http.Request){
		"400":                   {status(400, `{"error":{"message":"bad request","type":"invalid_request_error","code":"bad"}}`, "x-request-id", "req_400")},
		"429 then ok":           {status(429, `{"error":{"message":"slow down"}}`, "Retry-After-Ms", "1"), okAnswer},
		"500 until retries end": {status(500, `{"error":{"message":"boom"}}`, "Retry-After-Ms", "1", "x-request-id", "req_500")},
		"503 not to retry":      {status(503, `{"error":{"message":"no"}}`, "x-should-retry", "false")},
		"409 then ok":           {status(409, `{}`, "Retry-After-Ms", "1"), okAnswer},
		"dropped then ok":       {hangUp, okAnswer},
		"dropped until the end": {hangUp},
		"not JSON":              {status(502, `<html>bad gateway</html>`, "Retry-After-Ms", "1")},
		"redirect":              {redirectOnce},
	}
	see := func(m model.Model) outcome {
		resp, err := m.Generate(t.Context(), &model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}})
		var o outcome
		if err == nil {
			o.text = resp.Message.Content
		} else {
			var pe *model.ProviderError
			if !errors.As(err, &pe) {
				t.Fatalf("not a provider error: %v", err)
			}
			o.status, o.message, o.request, o.err = pe.Status, pe.Message, pe.RequestID, err.Error()
		}
		o.received = len(p.requests())
		return o
	}
	for name, answers := range scenarios {
		for kind := range leanModels(p.URL) {
			t.Run(name+"/"+kind, func(t *testing.T) {
				// The reference: a model whose every call goes through the
				// SDK's client (it has learned nothing).
				p.script(answers...)
				want := see(leanModels(p.URL)[kind])
				// The lean path, once it has learned its request.
				lean := leanModels(p.URL)[kind]
				p.script()
				see(lean)
				if learnedOf(lean) == nil {
					t.Fatal("nothing learned")
				}
				p.script(answers...)
				got := see(lean)
				if name == "redirect" {
					want.received++
				}
				if got != want {
					t.Fatalf("lean %+v, the SDK's %+v", got, want)
				}
			})
		}
	}
}
