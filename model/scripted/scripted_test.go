package scripted

import (
	"strings"
	"testing"
)

// words counts as strings.Fields splits.
func FuzzWords(f *testing.F) {
	for _, s := range []string{"", "a", " a  b ", "\u00a0x\u2003y", "\xffz \xfe", "done"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := words(s), len(strings.Fields(s)); got != want {
			t.Fatalf("words(%q) = %d, strings.Fields gives %d", s, got, want)
		}
	})
}
