package session_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/session"
)

func TestFailureReachesTheProviderError(t *testing.T) {
	t.Parallel()
	var pe *model.ProviderError
	var none *session.Failure
	if errors.As(none, &pe) {
		t.Fatal("a nil failure has no provider error")
	}
	if errors.As(&session.Failure{Code: "max_iterations"}, &pe) {
		t.Fatal("a failure without a provider has no provider error")
	}
	f := &session.Failure{Code: "model_error", Message: "boom",
		Provider: &model.ProviderError{Provider: "openai", Status: 429, RequestID: "req_1", Err: errors.New("not recorded")}}
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	var back session.Failure
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !errors.As(&back, &pe) || pe.Status != 429 || pe.RequestID != "req_1" || pe.Err != nil {
		t.Fatalf("after a JSON round trip (%s): %+v", b, pe)
	}
}

func TestErrorMatchesByCodeAndKeepsItsCause(t *testing.T) {
	t.Parallel()
	cause := errors.New("store: conflict")
	err := error(&session.Error{Code: session.CodeConflict, Message: "session changed", Err: cause})
	if !errors.Is(err, &session.Error{Code: session.CodeConflict}) || errors.Is(err, &session.Error{Code: session.CodeNotFound}) {
		t.Fatal("errors.Is should match by code")
	}
	if !errors.Is(err, cause) {
		t.Fatal("the cause is lost")
	}
}

// Logs written before questions had schemas hold answers as strings.
func TestAnswerReadsOldStrings(t *testing.T) {
	t.Parallel()
	var got []session.Answer
	if err := json.Unmarshal([]byte(`["staging",{"content":{"a":1}},{"declined":true,"reason":"no"}]`), &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].Text != "staging" || string(got[1].Content) != `{"a":1}` || !got[2].Declined || got[2].Reason != "no" {
		t.Fatalf("%+v", got)
	}
}
