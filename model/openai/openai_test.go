package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/testkit/fakeopenai"
	"github.com/cairnhq/cairn/internal/testkit/testwait"
	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/model/openai"
)

// TestRoundTripBothModes: a JSON answer on the lean path and on the SDK's
// types (Options.SDK), and a streamed one.
func TestRoundTripBothModes(t *testing.T) {
	for _, mode := range []struct {
		name        string
		stream, sdk bool
	}{{"json", false, false}, {"json-sdk", false, true}, {"stream", true, false}} {
		stream := mode.stream
		t.Run(mode.name, func(t *testing.T) {
			srv := fakeopenai.Start(t, func(r fakeopenai.Request) fakeopenai.Reply {
				if last := r.Messages[len(r.Messages)-1]; last.Role == "tool" {
					return fakeopenai.Reply{Content: "The deployment was successful."}
				}
				return fakeopenai.Reply{ToolCalls: []fakeopenai.Call{{ID: "call_abc", Name: "deploy_code", Arguments: `{"environment":"production"}`}}}
			})
			m := openai.New("gpt-4o-mini", &openai.Options{BaseURL: srv.BaseURL(), APIKey: "sk-test", Stream: stream, SDK: mode.sdk})
			tools := []model.ToolDefinition{{Name: "deploy_code", Description: "Deploy.", Parameters: json.RawMessage(`{"type":"object","properties":{"environment":{"type":"string"}}}`)}}
			ctx := context.Background()
			resp, err := m.Generate(ctx, &model.Request{System: "You deploy.", Messages: []model.Message{{Role: model.RoleUser, Content: "Deploy to production."}}, Tools: tools})
			if err != nil {
				t.Fatal(err)
			}
			calls := resp.Message.ToolCalls
			if len(calls) != 1 || calls[0].ID != "call_abc" || calls[0].Name != "deploy_code" || calls[0].Arguments != `{"environment":"production"}` {
				t.Fatalf("tool calls = %+v", calls)
			}
			if resp.Usage.InputTokens != 11 || resp.Usage.OutputTokens != 7 {
				t.Fatalf("usage = %+v", resp.Usage)
			}
			var deltas []string
			history := []model.Message{{Role: model.RoleUser, Content: "Deploy to production."}, resp.Message, {Role: model.RoleTool, ToolCallID: "call_abc", Content: "deployed"}}
			resp, err = m.Generate(ctx, &model.Request{Messages: history, Tools: tools, OnTextDelta: func(d string) { deltas = append(deltas, d) }})
			if err != nil {
				t.Fatal(err)
			}
			if resp.Message.Content != "The deployment was successful." || len(resp.Message.ToolCalls) != 0 {
				t.Fatalf("message = %+v", resp.Message)
			}
			if stream && (len(deltas) < 2 || strings.Join(deltas, "") != resp.Message.Content) {
				t.Fatalf("deltas = %q", deltas)
			}
			reqs := srv.Requests()
			if len(reqs) != 2 || reqs[0].Stream != stream || reqs[0].Model != "gpt-4o-mini" || len(reqs[0].Tools) != 1 {
				t.Fatalf("requests = %+v", reqs)
			}
			if reqs[0].Messages[0].Role != "system" || reqs[0].Messages[0].Text() != "You deploy." {
				t.Fatalf("system message = %+v", reqs[0].Messages[0])
			}
			second := reqs[1].Messages
			if second[1].Role != "assistant" || len(second[1].ToolCalls) != 1 || second[1].ToolCalls[0].ID != "call_abc" ||
				second[2].Role != "tool" || second[2].ToolCallID != "call_abc" || second[2].Text() != "deployed" {
				t.Fatalf("second request messages = %+v", second)
			}
			if got := reqs[0].Header.Get("Authorization"); got != "Bearer sk-test" {
				t.Fatalf("authorization = %q", got)
			}
		})
	}
}

func TestServerErrorIsReported(t *testing.T) {
	zero := 0
	m := openai.New("x", &openai.Options{BaseURL: "http://127.0.0.1:1/v1", MaxRetries: &zero})
	_, err := m.Generate(context.Background(), &model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}})
	if err == nil || !strings.Contains(err.Error(), "openai x") {
		t.Fatalf("err = %v", err)
	}
}

// flaky answers the first `fail` requests with status (and Retry-After),
// then a normal completion.
func flaky(t *testing.T, fail int, status int, retryAfter string) (*httptest.Server, *atomic.Int32) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if int(n.Add(1)) <= fail {
			w.Header().Set("x-request-id", fmt.Sprintf("req_%d", n.Load()))
			if retryAfter != "" {
				w.Header().Set("Retry-After", retryAfter)
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			fmt.Fprintf(w, `{"error":{"message":"server says no (%d)","type":"server_error","code":null,"param":null}}`, status)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

var hi = &model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}}

func TestRetryHonoursRetryAfter(t *testing.T) {
	srv, n := flaky(t, 1, 429, "1")
	m := openai.New("m", &openai.Options{BaseURL: srv.URL + "/v1", APIKey: "k"})
	start := time.Now()
	resp, err := m.Generate(context.Background(), hi)
	if err != nil || resp.Message.Content != "ok" || n.Load() != 2 {
		t.Fatalf("%v %+v after %d requests", err, resp, n.Load())
	}
	// Retry-After: 1 is a floor, not a performance figure.
	if waited := time.Since(start); waited < 900*time.Millisecond {
		t.Fatalf("retried after %v, before Retry-After", waited)
	}
}

func TestRetriesAreBounded(t *testing.T) {
	srv, n := flaky(t, 100, 500, "0")
	four := 4
	m := openai.New("gpt-x", &openai.Options{BaseURL: srv.URL + "/v1", APIKey: "k", MaxRetries: &four})
	_, err := m.Generate(context.Background(), hi)
	var pe *model.ProviderError
	if !errors.As(err, &pe) || n.Load() != 5 {
		t.Fatalf("err %v after %d requests", err, n.Load())
	}
	msg := err.Error()
	for _, want := range []string{"openai gpt-x", "HTTP 500", "request req_5", "after 5 attempts", "server says no (500)"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
}

func TestNoRetryOnClientErrors(t *testing.T) {
	srv, n := flaky(t, 100, 400, "")
	m := openai.New("m", &openai.Options{BaseURL: srv.URL + "/v1", APIKey: "k"})
	_, err := m.Generate(context.Background(), hi)
	if err == nil || n.Load() != 1 || !strings.Contains(err.Error(), "HTTP 400") {
		t.Fatalf("err %v after %d requests", err, n.Load())
	}
}

func TestCancelStopsRetrying(t *testing.T) {
	srv, n := flaky(t, 100, 429, "30")
	m := openai.New("m", &openai.Options{BaseURL: srv.URL + "/v1", APIKey: "k"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := m.Generate(ctx, hi); done <- err }()
	testwait.For(t, 10*time.Second, "the request to reach the server", func() bool { return n.Load() > 0 })
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) || n.Load() != 1 {
			t.Fatalf("err %v after %d requests", err, n.Load())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("cancel did not stop the 30 s retry wait")
	}
}
