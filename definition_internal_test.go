package cairn

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// What of a Tool or an Agent is the deployment's, not its definition's:
// code, or how it is run. Every other exported field must be in the
// definition (its value changes the hash) and come back from a rebuild.
var (
	toolDeployment  = map[string]bool{"Handler": true, "Preview": true, "PreviewTimeout": true, "Escalation": true}
	agentDeployment = map[string]bool{"Model": true, "Tools": true, "Toolsets": true, "Escalation": true, "OnNewVersion": true}
)

// sample is a value of type typ other than its zero, for field name.
func sample(t *testing.T, name string, typ reflect.Type) reflect.Value {
	t.Helper()
	switch typ {
	case reflect.TypeFor[Policy]():
		p, err := PolicyCEL("args", "args.x > 1")
		if name == "Review" {
			p, err = PolicyCEL("output", "output.x > 1")
		}
		if err != nil {
			t.Fatal(err)
		}
		return reflect.ValueOf(p)
	case reflect.TypeFor[json.RawMessage]():
		return reflect.ValueOf(json.RawMessage(`{"type":"object","properties":{"x":{"type":"number"}}}`))
	case reflect.TypeFor[*Approvers]():
		return reflect.ValueOf(&Approvers{Groups: []string{"sre"}, Count: 2})
	case reflect.TypeFor[[]ApprovalRule]():
		p, _ := PolicyCEL("args", "args.x > 5")
		return reflect.ValueOf([]ApprovalRule{{If: p, Approvers: Approvers{Groups: []string{"cfo"}}}})
	case reflect.TypeFor[*Wait]():
		return reflect.ValueOf(&Wait{Timeout: time.Hour, OnTimeout: OnTimeoutRetry, Retries: 3})
	case reflect.TypeFor[StandingRules]():
		return reflect.ValueOf(StandingRules{MaxDuration: 48 * time.Hour})
	case reflect.TypeFor[time.Duration]():
		return reflect.ValueOf(7 * time.Minute)
	}
	switch typ.Kind() {
	case reflect.String:
		return reflect.ValueOf("something").Convert(typ)
	case reflect.Bool:
		return reflect.ValueOf(true)
	case reflect.Int:
		return reflect.ValueOf(3)
	}
	t.Fatalf("field %s (%s): the test has no sample of its type: add one", name, typ)
	return reflect.Value{}
}

// Each field of a Tool that is not the deployment's changes the tool's
// definition, and a rebuild from the stored definition gives it back (the
// rebuilt tool's definition is the stored one).
func TestRebuildKeepsEveryToolField(t *testing.T) {
	handler := func(context.Context, json.RawMessage) (string, error) { return "ok", nil }
	base := func() *Tool { return &Tool{Name: "deploy", Handler: handler} }
	specOf := func(tl *Tool) json.RawMessage {
		t.Helper()
		ct, err := tl.compile()
		if err != nil {
			t.Fatal(err)
		}
		return ct.Spec
	}
	plain := specOf(base())
	for f := range reflect.TypeFor[Tool]().Fields() {
		if !f.IsExported() || toolDeployment[f.Name] || f.Name == "Name" {
			continue
		}
		tl := base()
		reflect.ValueOf(tl).Elem().FieldByIndex(f.Index).Set(sample(t, f.Name, f.Type))
		if f.Name == "Approvers" || f.Name == "ApprovalRules" {
			tl.Approval = Always() // they need a policy that asks
		}
		spec := specOf(tl)
		if string(spec) == string(plain) {
			t.Errorf("Tool.%s is not in the tool's definition: a pinned session would lose it (or list it as the deployment's in toolDeployment)", f.Name)
			continue
		}
		rebuilt, err := rebuildTool(spec, map[string]*Tool{"deploy": base()})
		if err != nil {
			t.Fatalf("Tool.%s: %v", f.Name, err)
		}
		if again := specOf(rebuilt); string(again) != string(spec) {
			t.Errorf("Tool.%s: rebuilt as %s, stored as %s", f.Name, again, spec)
		}
	}
}

// The same for an Agent's fields.
func TestRebuildKeepsEveryAgentField(t *testing.T) {
	base := func() *Agent { return &Agent{Name: "main"} }
	specOf := func(a *Agent) json.RawMessage {
		t.Helper()
		spec, err := a.spec()
		if err != nil {
			t.Fatal(err)
		}
		return spec
	}
	plain := specOf(base())
	for f := range reflect.TypeFor[Agent]().Fields() {
		if !f.IsExported() || agentDeployment[f.Name] || f.Name == "Name" {
			continue
		}
		a := base()
		reflect.ValueOf(a).Elem().FieldByIndex(f.Index).Set(sample(t, f.Name, f.Type))
		spec := specOf(a)
		if string(spec) == string(plain) {
			t.Errorf("Agent.%s is not in the agent's definition: a pinned session would lose it (or list it as the deployment's in agentDeployment)", f.Name)
			continue
		}
		var stored agentSpec
		if err := json.Unmarshal(spec, &stored); err != nil {
			t.Fatal(err)
		}
		rebuilt := base()
		if err := stored.apply(rebuilt); err != nil {
			t.Fatalf("Agent.%s: %v", f.Name, err)
		}
		if again := specOf(rebuilt); string(again) != string(spec) {
			t.Errorf("Agent.%s: rebuilt as %s, stored as %s", f.Name, again, spec)
		}
	}
}
