package cairn_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/model/scripted"
	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/store/sqlite"
)

// deployment is one version of a "releaser" agent on a SQLite file: its
// instructions, its deploy tool's schema (with or without region) and
// approval policy, and what its model was asked.
type deployment struct {
	instructions string
	region       bool   // deploy takes a region too
	approval     string // CEL over args
	noDeploy     bool   // the deploy tool is gone
	latest       bool   // on_new_version: latest
}

type asked struct {
	mu       sync.Mutex
	requests []*model.Request
	runs     []string // the deploy tool's runs: the arguments it got
}

func (a *asked) last() *model.Request {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.requests[len(a.requests)-1]
}

func (d deployment) open(t *testing.T, path string, seen *asked) *cairn.Runner {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	params := `{"type":"object","properties":{"env":{"type":"string"}},"required":["env"]}`
	if d.region {
		params = `{"type":"object","properties":{"env":{"type":"string"},"region":{"type":"string"}},"required":["env","region"]}`
	}
	policy, err := cairn.PolicyCEL("args", d.approval)
	if err != nil {
		t.Fatal(err)
	}
	var tools []*cairn.Tool
	if !d.noDeploy {
		tools = append(tools, &cairn.Tool{Name: "deploy", Description: "Deploy.", Parameters: json.RawMessage(params), Approval: policy,
			Handler: func(ctx context.Context, args json.RawMessage) (string, error) {
				seen.mu.Lock()
				seen.runs = append(seen.runs, string(args))
				seen.mu.Unlock()
				return "deployed " + string(args), nil
			}})
	}
	script := scripted.New(scripted.Reply{ToolCalls: []scripted.Call{{Name: "deploy", Arguments: `{"env":"{{.Input}}"}`}}}, scripted.Reply{Text: "done: {{.LastResult}}"})
	m := model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		seen.mu.Lock()
		seen.requests = append(seen.requests, req)
		seen.mu.Unlock()
		return script.Generate(ctx, req)
	})
	agent := &cairn.Agent{Name: "releaser", Instructions: d.instructions, Model: m, Tools: tools}
	if d.latest {
		agent.OnNewVersion = cairn.VersionLatest
	}
	r, err := cairn.NewRunner([]*cairn.Agent{agent}, &cairn.RunnerOptions{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

func toolNamed(req *model.Request, name string) *model.ToolDefinition {
	for i := range req.Tools {
		if req.Tools[i].Name == name {
			return &req.Tools[i]
		}
	}
	return nil
}

func eventTypes(t *testing.T, r *cairn.Runner, id string) []cairn.EventType {
	t.Helper()
	events, err := r.Events(context.Background(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	var types []cairn.EventType
	for _, ev := range events {
		types = append(types, ev.Type)
	}
	return types
}

// A session paused under one deployment resumes, after a restart with
// another (instructions, the tool's schema and its approval policy
// changed), under the definition it started with; the new sessions run
// under the new one; and the session shows which it runs under.
func TestPausedSessionKeepsItsDefinition(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "cairn.db")
	a := deployment{instructions: "You release. Version A.", approval: `args.env == "production"`}
	b := deployment{instructions: "You release. Version B.", region: true, approval: "true"}

	var seenA asked
	ra := a.open(t, path, &seenA)
	s, err := ra.Start(ctx, "releaser", "production", nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != cairn.StatusPaused || s.Definition == nil || !s.Definition.Current || !strings.HasPrefix(s.Definition.Hash, "sha256:") {
		t.Fatalf("started: %s, definition %+v", s.Status, s.Definition)
	}
	hashA := s.Definition.Hash
	_ = ra.Close()

	var seenB asked
	rb := b.open(t, path, &seenB)
	got, err := rb.Session(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Definition == nil || got.Definition.Hash != hashA || got.Definition.Current {
		t.Fatalf("under B, the paused session shows %+v; want %s, not current", got.Definition, hashA)
	}
	s, err = rb.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != cairn.StatusCompleted || !strings.HasPrefix(s.Output, `done: deployed {"env":"production"}`) {
		t.Fatalf("resumed: %s %q %+v", s.Status, s.Output, s.Error)
	}
	req := seenB.last()
	if req.System != a.instructions {
		t.Errorf("resumed under instructions %q, want A's %q", req.System, a.instructions)
	}
	if deploy := toolNamed(req, "deploy"); deploy == nil || strings.Contains(string(deploy.Parameters), "region") {
		t.Errorf("resumed with the deploy schema %v, want A's (no region)", deploy)
	}
	for _, typ := range eventTypes(t, rb, s.ID) {
		if typ == cairn.EventDefinitionChanged {
			t.Error("a pinned session recorded definition_changed")
		}
	}

	// The same session's next turn is still A's: staging does not ask
	// under A's policy (B asks for everything).
	s, err = rb.Send(ctx, s.ID, "staging", 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != cairn.StatusCompleted || s.Definition.Hash != hashA {
		t.Fatalf("A's policy: a staging deploy should not ask; got %s %+v", s.Status, s.Definition)
	}

	// A new session runs under B: the region is required, and it asks.
	fresh, err := rb.Start(ctx, "releaser", "staging", nil)
	if err != nil {
		t.Fatal(err)
	}
	if fresh.Definition == nil || fresh.Definition.Hash == hashA || !fresh.Definition.Current {
		t.Fatalf("a new session under B: %+v", fresh.Definition)
	}
	if req := seenB.last(); req.System != b.instructions || !strings.Contains(string(toolNamed(req, "deploy").Parameters), "region") {
		t.Fatalf("a new session under B was asked with %q %s", req.System, toolNamed(req, "deploy").Parameters)
	}
}

// An agent that says on_new_version: latest resumes a session paused
// under A under B, and records definition_changed before the decision.
func TestLatestResumesUnderTheNewDefinition(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "cairn.db")
	a := deployment{instructions: "Version A.", approval: "true"}
	b := deployment{instructions: "Version B.", region: true, approval: "true", latest: true}
	var seenA, seenB asked
	ra := a.open(t, path, &seenA)
	s, err := ra.Start(ctx, "releaser", "production", nil)
	if err != nil {
		t.Fatal(err)
	}
	hashA := s.Definition.Hash
	_ = ra.Close()
	rb := b.open(t, path, &seenB)
	s, err = rb.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Definition == nil || s.Definition.Hash == hashA || !s.Definition.Current {
		t.Fatalf("resumed under latest: %+v", s.Definition)
	}
	if req := seenB.last(); req.System != b.instructions || !strings.Contains(string(toolNamed(req, "deploy").Parameters), "region") {
		t.Fatalf("resumed under latest with %q %s", req.System, toolNamed(req, "deploy").Parameters)
	}
	events, err := rb.Events(ctx, s.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	changed := -1
	for i, ev := range events {
		// Only these two: their order.
		//exhaustive:ignore
		switch ev.Type {
		case cairn.EventDefinitionChanged:
			var p session.DefinitionChanged
			if err := json.Unmarshal(ev.Data, &p); err != nil || p.From != hashA || p.To != s.Definition.Hash {
				t.Fatalf("definition_changed %s: %v", ev.Data, err)
			}
			changed = i
		case cairn.EventDecision:
			if changed < 0 {
				t.Fatal("the decision was recorded before definition_changed")
			}
		}
	}
	if changed < 0 {
		t.Fatal("no definition_changed recorded")
	}
}

// A session pinned to a definition whose tool the deployment no longer
// has fails the call with an error the model reads; nothing panics.
func TestPinnedToolThatIsGoneFailsTheCall(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "cairn.db")
	var seenA, seenB asked
	ra := deployment{instructions: "A", approval: "true"}.open(t, path, &seenA)
	s, err := ra.Start(ctx, "releaser", "production", nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = ra.Close()
	rb := deployment{instructions: "B", approval: "true", noDeploy: true}.open(t, path, &seenB)
	s, err = rb.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != cairn.StatusCompleted || !strings.Contains(s.Output, `tool "deploy" is not deployed any more`) {
		t.Fatalf("resumed: %s %q", s.Status, s.Output)
	}
	if len(seenA.runs)+len(seenB.runs) != 0 {
		t.Fatalf("a tool ran: %v %v", seenA.runs, seenB.runs)
	}
	req := seenB.last()
	last := req.Messages[len(req.Messages)-1]
	if last.Role != model.RoleTool || !last.IsError || !strings.Contains(last.Content, "not deployed any more") {
		t.Fatalf("the model read %+v", last)
	}
}

// A session whose agent the deployment no longer has cannot be rebuilt:
// its decision is refused (409, nothing changes) saying why, and it
// resumes once the agent is configured again.
func TestPinnedAgentThatIsGoneRefusesTheDecision(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "cairn.db")
	var seen asked
	a := deployment{instructions: "A", approval: "true"}
	ra := a.open(t, path, &seen)
	s, err := ra.Start(ctx, "releaser", "production", nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = ra.Close()

	st, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	other, err := cairn.NewRunner([]*cairn.Agent{{Name: "other", Model: scripted.New(scripted.Reply{Text: "hi"})}}, &cairn.RunnerOptions{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	decide := []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove}}
	_, err = other.Resume(ctx, s.ID, s.Seq, decide, nil)
	if !errors.Is(err, cairn.ErrConflict) || !strings.Contains(err.Error(), `agent "releaser" is not deployed any more`) {
		t.Fatalf("resume without the agent: %v", err)
	}
	_ = other.Close()
	if got, _ := a.open(t, path, &seen).Resume(ctx, s.ID, s.Seq, decide, nil); got == nil || got.Status != cairn.StatusCompleted {
		t.Fatalf("resumed once the agent is back: %+v", got)
	}
}
