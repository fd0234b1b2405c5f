package local_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testkit/check"
	"github.com/cairnhq/cairn/model"
)

// growingSet is a Toolset whose tools the test changes.
type growingSet struct {
	mu        sync.Mutex
	tools     []*cairn.Tool
	listeners []func()
}

func (g *growingSet) Tools() []*cairn.Tool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.tools
}

func (g *growingSet) Notify(fn func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.listeners = append(g.listeners, fn)
}

func (g *growingSet) add(t *cairn.Tool) {
	g.mu.Lock()
	g.tools = append(g.tools, t)
	ls := g.listeners
	g.mu.Unlock()
	for _, fn := range ls {
		fn()
	}
}

// A toolset that changes reaches the model's next request and can be
// called; a change that does not fit (a duplicate name) keeps the old tools.
func TestToolsetChanges(t *testing.T) {
	ctx := context.Background()
	echo := func(name string) *cairn.Tool {
		return cairn.NewTool(&cairn.Tool{Name: name, Description: "Echo."}, func(ctx context.Context, a struct{}) (string, error) { return name + " ran", nil })
	}
	set := &growingSet{tools: []*cairn.Tool{echo("first")}}
	var seen [][]string
	brain := newBrain(func(req *model.Request) model.Message {
		var names []string
		for _, d := range req.Tools {
			names = append(names, d.Name)
		}
		seen = append(seen, names)
		if l := last(req); l.Role == model.RoleTool {
			return text(l.Content)
		}
		return call("c1", names[len(names)-1], `{}`)
	})
	r := mustRunner(t, &cairn.Agent{Name: "main", Model: brain, Tools: []*cairn.Tool{echo("own")}, Toolsets: []cairn.Toolset{set}})
	if s := check.NoErr(t)(r.Start(ctx, "main", "go", nil)); s.Output != "first ran" {
		t.Fatalf("before: %q", s.Output)
	}
	set.add(echo("second"))
	if s := check.NoErr(t)(r.Start(ctx, "main", "go", nil)); s.Output != "second ran" || len(seen[2]) != 3 {
		t.Fatalf("after: %q, tools %v", s.Output, seen)
	}
	set.add(echo("own")) // clashes with the agent's own tool: ignored
	if got := r.Agents()[0].Tools; len(got) != 3 {
		t.Fatalf("a clashing change was taken: %+v", got)
	}
}

// A client-chosen session id: used as given, checked for its form, and
// never given to a second session.
func TestClientChosenSessionID(t *testing.T) {
	ctx := context.Background()
	r := mustRunner(t, &cairn.Agent{Name: "main", Model: newBrain(func(*model.Request) model.Message { return text("hi") })})
	s, err := r.Start(ctx, "main", "hello", &cairn.StartOptions{ID: "telegram_123_456"})
	if err != nil || s.ID != "telegram_123_456" {
		t.Fatalf("%v %+v", err, s)
	}
	if _, err := r.Start(ctx, "main", "again", &cairn.StartOptions{ID: "telegram_123_456"}); !errors.Is(err, cairn.ErrConflict) {
		t.Fatalf("the same id twice: %v", err)
	}
	if _, err := r.Start(ctx, "main", "hello", &cairn.StartOptions{ID: "no spaces please"}); !errors.Is(err, cairn.ErrInvalidRequest) {
		t.Fatalf("a malformed id: %v", err)
	}
}
