package local_test

import (
	"context"
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
