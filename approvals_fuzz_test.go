package cairn_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/cairnhq/cairn"
)

// An approval request is untrusted input: whatever its tool name,
// arguments, schema and message, it is refused with an error that records
// nothing, or recorded pending with exactly the arguments sent.
func FuzzApprovalRequest(f *testing.F) {
	f.Add("refund", `{"order":"A-1","amount":5}`, `{"type":"object","required":["order"]}`, "Refund?", "k1")
	f.Add("x", `[1]`, ``, "", "")
	f.Add("a b", `{"a":`, `{"type":"nonsense"}`, "m", "")
	f.Add("deploy", `{}`, `{"type":"object","properties":{"n":{"type":"integer","maximum":3}}}`, "", "k2")
	f.Add("t", `null`, `null`, "", "")
	r, err := cairn.NewRunner([]*cairn.Agent{cairn.ApprovalsAgent(nil, nil)}, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { r.Close() })
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, tool, args, schema, message, key string) {
		before, _ := r.Sessions(ctx, "")
		a, _, err := r.RequestApproval(ctx, cairn.ApprovalRequest{Tool: tool, Arguments: json.RawMessage(args), Schema: json.RawMessage(schema),
			Message: message, IdempotencyKey: key}, &cairn.StartOptions{Owner: "fuzz"})
		if err != nil {
			if cairn.ErrorCode(err) == "" || errors.Is(err, context.Canceled) {
				t.Fatalf("an error without a code: %v", err)
			}
			if key == "" { // a keyed request may name an earlier one
				if after, _ := r.Sessions(ctx, ""); len(after) != len(before) {
					t.Fatalf("a refused request recorded a session: %v", err)
				}
			}
			return
		}
		if a.Tool != tool || (a.Status != cairn.ApprovalPending) {
			t.Fatalf("recorded %+v for tool %q", a, tool)
		}
		var sent, kept any
		if json.Unmarshal([]byte(args), &sent) != nil || sent == nil {
			sent = map[string]any{}
		}
		if err := json.Unmarshal(a.Arguments, &kept); err != nil || !reflect.DeepEqual(sent, kept) {
			t.Fatalf("arguments %s recorded as %s", args, a.Arguments)
		}
	})
}
