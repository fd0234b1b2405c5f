package local

import (
	"fmt"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// TestLabelsAreKeptAndBounded: the same label values give the same set,
// whose attributes are the values under their instrument's names; past
// maxLabelSets distinct sets, each is still right but none is kept.
func TestLabelsAreKeptAndBounded(t *testing.T) {
	var l labels
	k := labelKey{of: decisionLabels, a: "approval", b: "approve", c: "approver", d: "acme"}
	first := l.of(k)
	if again := l.of(k); &again.add[0] != &first.add[0] {
		t.Fatal("the same labels built twice")
	}
	want := attribute.NewSet(attribute.String("kind", "approval"), attribute.String("action", "approve"), attribute.String("role", "approver"), attribute.String("tenant", "acme"))
	if got := metric.NewAddConfig(first.add).Attributes(); !got.Equals(&want) {
		t.Fatalf("attributes %v, want %v", got.ToSlice(), want.ToSlice())
	}
	for i := range maxLabelSets + 10 {
		s := l.of(labelKey{of: toolLabels, a: fmt.Sprint("tool", i), b: "ok"})
		want := attribute.NewSet(attribute.String("tool", fmt.Sprint("tool", i)), attribute.String("outcome", "ok"))
		if got := metric.NewRecordConfig(s.record).Attributes(); !got.Equals(&want) {
			t.Fatalf("tool%d: attributes %v", i, got.ToSlice())
		}
	}
	if n := len(l.sets); n != maxLabelSets {
		t.Fatalf("%d sets kept, want %d", n, maxLabelSets)
	}
}
