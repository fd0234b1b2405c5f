package local_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testkit/check"
	"github.com/cairnhq/cairn/internal/testkit/fakeanthropic"
	"github.com/cairnhq/cairn/internal/testkit/fakegemini"
	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/model/anthropic"
	"github.com/cairnhq/cairn/model/gemini"
	"github.com/cairnhq/cairn/store/sqlite"
)

// A session whose agent moves to another provider between turns keeps the
// conversation and drops the first provider's data: the second provider is
// sent the text, never the other's signed thinking.
func TestSwitchingProvidersDropsTheOthersData(t *testing.T) {
	ctx := context.Background()
	claude := fakeanthropic.Start(t, func(fakeanthropic.Request) fakeanthropic.Reply {
		return fakeanthropic.Reply{Thinking: "secret plan", Text: "Hello from Claude."}
	})
	gem := fakegemini.Start(t, func(fakegemini.Request) fakegemini.Reply { return fakegemini.Reply{Text: "Hello from Gemini."} })
	path := filepath.Join(t.TempDir(), "cairn.db")
	runner := func(m model.Model) *cairn.Runner {
		st, err := sqlite.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return runnerFor(t, []*cairn.Agent{{Name: "main", Model: m}}, &cairn.RunnerOptions{Store: st})
	}
	first := runner(anthropic.New("claude", &anthropic.Options{BaseURL: claude.URL, APIKey: "k", MaxTokens: 8000, Thinking: &anthropic.Thinking{BudgetTokens: 2048}}))
	s := check.NoErr(t)(first.Start(ctx, "main", "hi", nil))
	first.Close()
	second := runner(gemini.New("gemini", &gemini.Options{BaseURL: gem.URL, APIKey: "k"}))
	s = check.NoErr(t)(second.Send(ctx, s.ID, "and you?", 0, nil))
	if s.Status != cairn.StatusCompleted || s.Output != "Hello from Gemini." {
		t.Fatalf("%+v", s)
	}
	sent, err := json.Marshal(gem.Requests()[0].Contents)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(sent), "Hello from Claude.") || strings.Contains(string(sent), "secret plan") || strings.Contains(string(sent), "thoughtSignature") {
		t.Fatalf("Gemini was sent %s", sent)
	}
}
