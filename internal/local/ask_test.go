package local_test

import (
	"path/filepath"

	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/store/sqlite"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testkit/check"
	"github.com/cairnhq/cairn/model"
)

// echoTool's model calls tool once and then repeats the tool's result.
func echoModel(tool string) *recordingModel {
	return newBrain(func(req *model.Request) model.Message {
		if l := last(req); l.Role == model.RoleTool {
			return text(l.Content)
		}
		return call("c1", tool, `{}`)
	})
}

// A question with a schema takes content valid under it, and only that.
func TestAskForWithSchema(t *testing.T) {
	ctx := context.Background()
	schema := json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer","minimum":0}},"required":["name"]}`)
	form := cairn.NewTool(&cairn.Tool{Name: "signup", Description: "Sign up."}, func(ctx context.Context, a struct{}) (string, error) {
		ans, err := cairn.AskFor(ctx, cairn.Question{Text: "Who are you?", Schema: schema})
		if err != nil {
			return "", err
		}
		return "got " + string(ans.Content), nil
	})
	r := mustRunner(t, &cairn.Agent{Name: "main", Model: echoModel("signup"), Tools: []*cairn.Tool{form}})
	s := check.NoErr(t)(r.Start(ctx, "main", "sign me up", nil))
	in := s.Interrupts[0]
	if in.Kind != cairn.KindInput || in.Question != "Who are you?" || string(in.Schema) != string(schema) {
		t.Fatalf("interrupt: %+v", in)
	}
	refused := []struct {
		d    cairn.Decision
		want string
	}{
		{cairn.Decision{Action: cairn.ActionAnswer, Text: "Ada"}, "content is required"},
		{cairn.Decision{Action: cairn.ActionAnswer, Content: json.RawMessage(`{"age":3}`)}, "missing property 'name'"},
		{cairn.Decision{Action: cairn.ActionAnswer, Content: json.RawMessage(`{"name":"Ada","age":-1}`)}, "/age"},
		{cairn.Decision{Action: cairn.ActionAnswer, Content: json.RawMessage(`["Ada"]`)}, "content does not match"},
	}
	for _, c := range refused {
		c.d.InterruptID = in.ID
		_, err := r.Resume(ctx, s.ID, s.Seq, []cairn.Decision{c.d}, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.d.Content, err, c.want)
		}
	}
	if again := check.NoErr(t)(r.Session(ctx, s.ID)); again.Seq != s.Seq {
		t.Fatalf("a refused answer changed the session: seq %d → %d", s.Seq, again.Seq)
	}
	s, err := r.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: in.ID, Action: cairn.ActionAnswer, Content: json.RawMessage(`{ "name": "Ada", "age": 36 }`)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != cairn.StatusCompleted || s.Output != `got {"name":"Ada","age":36}` {
		t.Fatalf("%s %q", s.Status, s.Output)
	}
}

// A question with a URL is answered once the user is done: no text needed;
// content is refused for a question without a schema.
func TestAskForWithURL(t *testing.T) {
	ctx := context.Background()
	link := cairn.NewTool(&cairn.Tool{Name: "link", Description: "Link an account."}, func(ctx context.Context, a struct{}) (string, error) {
		ans, err := cairn.AskFor(ctx, cairn.Question{Text: "Sign in to the bank", URL: "https://bank.example/oauth?state=1"})
		if err != nil {
			return "", err
		}
		return "linked (" + ans.Text + ")", nil
	})
	r := mustRunner(t, &cairn.Agent{Name: "main", Model: echoModel("link"), Tools: []*cairn.Tool{link}})
	s := check.NoErr(t)(r.Start(ctx, "main", "link", nil))
	in := s.Interrupts[0]
	if in.URL != "https://bank.example/oauth?state=1" {
		t.Fatalf("interrupt: %+v", in)
	}
	if _, err := r.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: in.ID, Action: cairn.ActionAnswer, Content: json.RawMessage(`{}`)}}, nil); !errors.Is(err, cairn.ErrInvalidRequest) {
		t.Fatalf("content on a question without a schema: %v", err)
	}
	s, err := r.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: in.ID, Action: cairn.ActionAnswer}}, nil)
	if err != nil || s.Output != "linked ()" {
		t.Fatalf("%v %q", err, s.Output)
	}
}

// A held question: a rejection runs the tool again with a declined answer
// (the held work hears it) instead of ending the call; a run that lost its
// held work says ErrInDoubt, and the call pauses as an in-doubt approval
// whose approval runs it afresh, without the old answers.
func TestHeldQuestion(t *testing.T) {
	ctx := context.Background()
	var runs []string
	lost := true
	held := cairn.NewTool(&cairn.Tool{Name: "held", Description: "Holds work."}, func(ctx context.Context, a struct{}) (string, error) {
		answers := cairn.Answers(ctx)
		b, _ := json.Marshal(answers)
		runs = append(runs, string(b))
		switch {
		case len(answers) == 0:
			_, err := cairn.AskFor(ctx, cairn.Question{Text: "Proceed?", Held: true})
			return "", err
		case answers[0].Declined && lost:
			lost = false
			return "", cairn.ErrInDoubt
		}
		return "the server heard: declined=" + map[bool]string{true: "yes", false: "no"}[answers[0].Declined] + " " + answers[0].Reason, nil
	})
	r := mustRunner(t, &cairn.Agent{Name: "main", Model: echoModel("held"), Tools: []*cairn.Tool{held}})
	s := check.NoErr(t)(r.Start(ctx, "main", "go", nil))
	s, err := r.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionReject, Reason: "not now"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != cairn.StatusPaused || !s.Interrupts[0].InDoubt || s.Interrupts[0].Kind != cairn.KindApproval {
		t.Fatalf("lost held work: %s %+v", s.Status, s.Interrupts)
	}
	s, err = r.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Approved again: it starts afresh (no answers) and asks again.
	if s.Status != cairn.StatusPaused || s.Interrupts[0].Kind != cairn.KindInput {
		t.Fatalf("after the in-doubt approval: %s %+v", s.Status, s.Interrupts)
	}
	s, err = r.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionReject, Reason: "no thanks"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != cairn.StatusCompleted || s.Output != "the server heard: declined=yes no thanks" {
		t.Fatalf("%s %q", s.Status, s.Output)
	}
	want := `null [{"declined":true,"reason":"not now"}] null [{"declined":true,"reason":"no thanks"}]`
	if got := strings.Join(runs, " "); got != want {
		t.Fatalf("runs:\n got %s\nwant %s", got, want)
	}
}

// A question's State comes back with its answer when the tool runs again,
// on another runner of the store (a restart, another replica); the
// interrupt shows the remote task and the hops through it, and the log
// keeps the state with the question.
func TestQuestionStateComesBackWithTheAnswer(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "c.db")
	var seen []string
	tool := cairn.NewTool(&cairn.Tool{Name: "partner", Description: "Ask the partner."}, func(ctx context.Context, a struct{}) (string, error) {
		answers := cairn.Answers(ctx)
		if len(answers) == 0 {
			_, err := cairn.AskFor(ctx, cairn.Question{Text: "Which date?", Held: true, State: json.RawMessage(`{"task_id": "t-1"}`),
				Remote: &cairn.Remote{URL: "http://partner.example/", TaskID: "t-1"}, Path: []cairn.PathStep{{Agent: "booking", Tool: "ask_date", CallID: "r1"}}})
			return "", err
		}
		last := answers[len(answers)-1]
		seen = append(seen, string(last.State))
		return "booked for " + last.Text, nil
	})
	agents := func() []*cairn.Agent {
		return []*cairn.Agent{{Name: "main", Model: echoModel("partner"), Tools: []*cairn.Tool{tool}}}
	}
	open := func() *cairn.Runner {
		st, err := sqlite.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		r, err := cairn.NewRunner(agents(), &cairn.RunnerOptions{Store: st})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return r
	}
	first := open()
	s := check.NoErr(t)(first.Start(ctx, "main", "book it", nil))
	in := s.Interrupts[0]
	if in.Remote == nil || in.Remote.TaskID != "t-1" || len(in.Path) != 2 || in.Path[1].Agent != "booking" {
		t.Fatalf("the interrupt: %+v", in)
	}
	events, err := first.Events(ctx, s.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	kept := false
	for _, ev := range events {
		kept = kept || ev.Type == cairn.EventInputRequested && strings.Contains(string(ev.Data), `"state":{"task_id":"t-1"}`)
	}
	if !kept {
		t.Fatal("the question's event does not keep its state")
	}
	second := open()
	s = check.NoErr(t)(second.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: in.ID, Action: cairn.ActionAnswer, Text: "May 3"}}, nil))
	if s.Status != cairn.StatusCompleted || s.Output != "booked for May 3" || len(seen) != 1 || seen[0] != `{"task_id":"t-1"}` {
		t.Fatalf("after the answer on another runner: %s %q, states seen %v", s.Status, s.Output, seen)
	}
}
