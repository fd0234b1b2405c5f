package engine

import (
	"strings"
	"testing"

	"github.com/cairnhq/cairn/session"
)

// machineAt is rulesMachine's agent with definition hash, following the
// latest or not.
func machineAt(hash string, latest bool) *Machine {
	m := rulesMachine()
	m.agents["main"].Definition, m.agents["main"].FollowLatest = hash, latest
	return m
}

// A session records its agent's definition when it starts. A machine
// whose agent follows the latest records definition_changed first when it
// steps a session of another definition — the caller's seq, read before
// it, still current — and a refused input leaves the state as it was.
func TestDefinitionChangedComesFirstAndOnlyWhenTaken(t *testing.T) {
	t.Parallel()
	st, _ := pausedOn(t, machineAt("sha256:a", false), "s1", "deploy", `{"env":"dev"}`)
	if st.Definition != "sha256:a" || st.View().Definition.Hash != "sha256:a" {
		t.Fatalf("started under %q", st.Definition)
	}
	in := st.Interrupts()[0].ID
	seq, head := st.Seq, st.Head

	// Pinned (not following): nothing recorded about versions.
	pinned := machineAt("sha256:b", false)
	other, _ := pausedOn(t, machineAt("sha256:a", false), "s0", "deploy", `{"env":"dev"}`)
	if s, err := pinned.Step(other, Decide{Seq: other.Seq, Actor: alice, Decisions: []session.Decision{{InterruptID: other.Interrupts()[0].ID, Action: session.ActionApprove}}}, t0); err != nil ||
		strings.Contains(types(s.Events), "definition_changed") {
		t.Fatalf("a machine that does not follow the latest: %v %s", err, types(s.Events))
	}

	latest := machineAt("sha256:b", true)
	_, err := latest.Step(st, Decide{Seq: seq, Actor: alice, Decisions: []session.Decision{{InterruptID: "int_nope", Action: session.ActionApprove}}}, t0)
	if err == nil || st.Seq != seq || st.Head != head || st.Definition != "sha256:a" {
		t.Fatalf("a refused decision changed the state: %v seq %d→%d, definition %s", err, seq, st.Seq, st.Definition)
	}
	s := step(t, latest, st, Decide{Seq: seq, Actor: alice, Decisions: []session.Decision{{InterruptID: in, Action: session.ActionApprove}}})
	if got := types(s.Events); !strings.HasPrefix(got, "definition_changed decision") {
		t.Fatalf("events: %s", got)
	}
	if p := s.Payloads[0].(*DefinitionChanged); p.From != "sha256:a" || p.To != "sha256:b" || st.Definition != "sha256:b" {
		t.Fatalf("definition_changed %+v, state %s", p, st.Definition)
	}
	// Once moved, nothing more is recorded.
	s = step(t, latest, st, ToolsDone{Frame: s.Effects[0].(RunTools).Frame, Results: []ToolOutcome{{CallID: "c1", Content: "ok"}}})
	if strings.Contains(types(s.Events), "definition_changed") {
		t.Fatalf("recorded twice: %s", types(s.Events))
	}
}
