package local_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testkit/check"
	"github.com/cairnhq/cairn/model"
)

// limitedFunc is a model of any kind (no HTTP) that states its limits.
type limitedFunc struct {
	model.Func
	limits model.Limits
}

func (m limitedFunc) Limits() model.Limits { return m.limits }

// The runner applies a model's timeout and reply size whatever the model:
// a call past its timeout and a reply over max_reply_bytes fail the turn
// with their codes, and nothing of the reply is recorded.
func TestModelLimitsHoldForAnyModel(t *testing.T) {
	cases := []struct {
		name string
		m    model.Model
		code string
	}{
		{"reply too large", limitedFunc{model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
			return &model.Response{Message: model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "c", Name: "x", Arguments: strings.Repeat("9", 2000)}}}}, nil
		}), model.Limits{MaxReplyBytes: 1000}}, model.CodeReplyTooLarge},
		{"timeout", limitedFunc{model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
			<-ctx.Done() // a model that waits as long as it is let
			return nil, ctx.Err()
		}), model.Limits{Timeout: 100 * time.Millisecond}}, model.CodeTimeout},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRunner(t, c.m)
			sess, err := r.Start(t.Context(), "main", "hi", nil)
			if err != nil {
				t.Fatal(err)
			}
			if sess.Status != cairn.StatusFailed || sess.Error == nil || sess.Error.Code != c.code {
				t.Fatalf("%s: %+v", sess.Status, sess.Error)
			}
			evs := check.Events(t)(r.Events(t.Context(), sess.ID, 0))
			for _, ev := range evs {
				if ev.Type == "model_response" || len(ev.Data) > 1000 {
					t.Fatalf("recorded %s (%d bytes) of a refused reply", ev.Type, len(ev.Data))
				}
			}
		})
	}
}

// Each model call of a turn gets the whole timeout: the turn's one timer
// is re-armed per call, not left running from the first.
func TestEveryModelCallOfATurnGetsItsWholeTimeout(t *testing.T) {
	calls := 0
	m := limitedFunc{model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		calls++
		select { // elapsed time: each call takes 60% of its timeout, three in a row 180%
		case <-time.After(60 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if calls < 3 {
			return &model.Response{Message: model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: fmt.Sprint("c", calls), Name: "lookup", Arguments: `{}`}}}}, nil
		}
		return &model.Response{Message: model.Message{Role: model.RoleAssistant, Content: "done"}}, nil
	}), model.Limits{Timeout: 100 * time.Millisecond}}
	lookup := cairn.NewTool(&cairn.Tool{Name: "lookup"}, func(ctx context.Context, _ struct{}) (string, error) { return "ok", nil })
	r := newRunner(t, m, lookup)
	sess, err := r.Start(t.Context(), "main", "hi", nil)
	if err != nil {
		t.Fatal(err)
	}
	if sess.Status != cairn.StatusCompleted || calls != 3 {
		t.Fatalf("%s after %d calls: %+v", sess.Status, calls, sess.Error)
	}
}
