package session_test

import (
	"errors"
	"reflect"
	"testing"
	"unsafe"

	"github.com/cairnhq/cairn/session"
)

// The decision point's answers for each kind of actor, as a table.
func TestAuthorityDecides(t *testing.T) {
	t.Parallel()
	person := func(name, role string, groups ...string) session.Actor {
		return session.Actor{Name: name, Subject: name, Role: role, Groups: groups, Via: session.ViaToken}
	}
	approval := &session.Interrupt{ID: "int_1", Kind: session.KindApproval, Tool: "refund",
		Approvers: &session.Approvers{Groups: []string{"finance"}, Count: 2, NotRequester: true}, Required: 2,
		Approvals:   []session.Approval{{Actor: person("fin1", "approver", "finance")}},
		RequestedBy: []session.Actor{person("uma", "user")}}
	question := &session.Interrupt{ID: "int_2", Kind: session.KindInput, Question: "Which?"}
	message := &session.Interrupt{ID: "int_3", Kind: session.KindMessage, Text: "Hi"}
	var a session.Authority
	for _, c := range []struct {
		name  string
		actor session.Actor
		in    *session.Interrupt
		act   session.Action
		want  error
		owner string
	}{
		{"the program", session.Actor{}, approval, session.ActionApprove, nil, ""},
		{"a second finance approver", person("fin2", "approver", "finance"), approval, session.ActionApprove, nil, ""},
		{"the same approver again", person("fin1", "approver", "finance"), approval, session.ActionApprove, session.ErrAlreadyApproved, ""},
		{"another group", person("ana", "approver", "sre"), approval, session.ActionApprove, session.ErrNotAnApprover, ""},
		{"the requester", person("uma", "approver", "finance"), approval, session.ActionApprove, session.ErrNotAnApprover, ""},
		{"the requester rejects", person("uma", "approver", "finance"), approval, session.ActionReject, nil, ""},
		{"a user", person("ulf", "user", "finance"), approval, session.ActionApprove, session.ErrForbidden, ""},
		{"an admin without override", person("root", "admin"), approval, session.ActionApprove, session.ErrNotAnApprover, ""},
		{"an action link outside the groups", session.Actor{Name: "room", Via: session.ViaActionLink}, approval, session.ActionApprove, session.ErrNotAnApprover, ""},
		{"a callback approves", session.Actor{Name: "callback", Via: session.ViaCallback}, approval, session.ActionApprove, session.ErrForbidden, ""},
		{"the owner answers", person("uma", "user"), question, session.ActionAnswer, nil, "uma"},
		{"another user answers", person("ulf", "user"), question, session.ActionAnswer, session.ErrForbidden, "uma"},
	} {
		_, err := a.MayDecide(c.actor, c.owner, c.in, c.act)
		if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	if _, err := (session.Authority{AdminOverride: true}).MayDecide(person("root", "admin"), "", approval, session.ActionApprove); err != nil {
		t.Errorf("an admin with the override: %v", err)
	}
	if a.Decides(person("uma", "approver", "finance"), "", approval) || !a.Decides(person("fin2", "approver", "finance"), "", approval) {
		t.Error("Decides: the requester decides, or a second approver does not")
	}
	if a.Decides(person("ana", "approver"), "uma", message) || !a.Decides(person("uma", "user"), "uma", message) {
		t.Error("Decides: an approver answers another's interactive agent, or its owner does not")
	}
}

// IsZero (which omitzero and the stores use) knows every field of Actor: a
// field added later and forgotten there fails here.
func TestActorIsZeroKnowsEveryField(t *testing.T) {
	t.Parallel()
	if !(session.Actor{}).IsZero() {
		t.Fatal("the zero Actor is not zero")
	}
	typ := reflect.TypeFor[session.Actor]()
	for i := range typ.NumField() {
		var a session.Actor
		f := reflect.ValueOf(&a).Elem().Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString("x")
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Slice:
			f.Set(reflect.MakeSlice(f.Type(), 1, 1))
		default:
			t.Fatalf("field %s: kind %s is not handled here", typ.Field(i).Name, f.Kind())
		}
		if a.IsZero() {
			t.Errorf("an Actor with only %s set is zero", typ.Field(i).Name)
		}
	}
}

// An Actor rides in every decision; at more than 128 bytes, a closure that
// captures one (the runtime's resume) moves it to the heap, an allocation
// per decision (BenchmarkPauseResume showed it when AllTenants sat in the
// middle). Keep new fields where padding was, or measure.
func TestActorStaysSmall(t *testing.T) {
	if size := unsafe.Sizeof(session.Actor{}); size > 128 {
		t.Fatalf("session.Actor is %d bytes, more than 128", size)
	}
}
