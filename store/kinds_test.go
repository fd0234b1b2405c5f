package store_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/store"
)

// Every interrupt kind has a bit of its own, and the stores index each:
// a kind added to package session without one would be missing from the
// inbox by kind.
func TestEveryKindHasABit(t *testing.T) {
	t.Parallel()
	var all store.Kinds
	for _, name := range strings.Split(session.Kinds(), ", ") {
		k := session.Kind(name)
		b := store.KindBit(k)
		if b == 0 || all&b != 0 {
			t.Errorf("kind %s: bit %b (taken: %b)", k, b, all)
		}
		all |= b
		if !slices.Contains(store.IndexedKinds(), k) {
			t.Errorf("kind %s is not indexed", k)
		}
		ks := store.KindsOf([]session.Interrupt{{Kind: k}, {Kind: "nonsense"}})
		if !ks.Has(k) || ks != b {
			t.Errorf("KindsOf(%s) = %b", k, ks)
		}
	}
	if len(store.IndexedKinds()) != len(strings.Split(session.Kinds(), ", ")) {
		t.Errorf("indexed %v, kinds %s", store.IndexedKinds(), session.Kinds())
	}
	if _, err := (store.ListOptions{Kind: "robot"}).KindFilter(); err == nil || !strings.Contains(err.Error(), "approval, input") {
		t.Errorf("an unknown kind: %v", err)
	}
}
