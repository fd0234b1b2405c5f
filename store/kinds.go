package store

import (
	"fmt"
	"strings"

	"github.com/cairnhq/cairn/session"
)

// Kinds is a set of interrupt kinds, a bit each: what a store keeps of a
// paused session's pending interrupts, to list them by kind from an index
// (one partial index per kind in SQLite and PostgreSQL).
type Kinds uint32

// kindOrder gives each kind its bit, 1 << its place in session.AllKinds.
// Stores keep the bits, so a kind keeps its place (AllKinds only grows at
// its end), and the 32 bits of Kinds bound the kinds a store indexes.
func kindOrder() []session.Kind {
	all := session.AllKinds()
	return all[:min(len(all), 32)]
}

// IndexedKinds are the kinds Kinds knows, in the order of their bits.
func IndexedKinds() []session.Kind { return kindOrder() }

// KindBit is kind's bit, or 0 for a kind Kinds does not know.
func KindBit(kind session.Kind) Kinds {
	for i, k := range kindOrder() {
		if k == kind {
			return 1 << i
		}
	}
	return 0
}

// KindsOf is the set of the interrupts' kinds.
func KindsOf(interrupts []session.Interrupt) Kinds {
	var ks Kinds
	for _, in := range interrupts {
		ks |= KindBit(in.Kind)
	}
	return ks
}

// Has reports whether kind is in ks.
func (ks Kinds) Has(kind session.Kind) bool {
	b := KindBit(kind)
	return b != 0 && ks&b != 0
}

// KindFilter is the bit List keeps for opts.Kind (0: no filter), or an
// error for a kind Kinds does not know.
func (opts ListOptions) KindFilter() (Kinds, error) {
	if opts.Kind == "" {
		return 0, nil
	}
	b := KindBit(opts.Kind)
	if b == 0 {
		return 0, fmt.Errorf("store: list by interrupt kind %q: not one of %s", opts.Kind, session.Kinds())
	}
	return b, nil
}

// KindCondition is the SQL condition for a paused session with a pending
// interrupt of kind bit, in constants only: an SQL store makes a partial
// index with it and repeats it word for word when it lists by kind, which
// is how SQLite and PostgreSQL know the index applies (a bound parameter
// would not match it).
func KindCondition(bit Kinds) string {
	return fmt.Sprintf("status = 'paused' AND pending_kinds & %d != 0", bit)
}

// KindBitSQL is an SQL expression for the bit of the kind named by expr:
// how an SQL store fills pending_kinds in from older sessions' summaries.
func KindBitSQL(expr string) string {
	var b strings.Builder
	b.WriteString("CASE " + expr)
	for _, k := range IndexedKinds() {
		fmt.Fprintf(&b, " WHEN '%s' THEN %d", k, KindBit(k))
	}
	b.WriteString(" ELSE 0 END")
	return b.String()
}
