package main

import (
	"bytes"
	"testing"
)

func TestVisibleWriterMarksHiddenRunesAcrossWrites(t *testing.T) {
	var out bytes.Buffer
	w := newVisibleWriter(&out)
	in := "deploy \u202egpj.exe\x1b[2J 日本"
	// One byte at a time: every rune is split across writes.
	for i := 0; i < len(in); i++ {
		if n, err := w.Write([]byte{in[i]}); n != 1 || err != nil {
			t.Fatalf("write %d: %d %v", i, n, err)
		}
	}
	if got, want := out.String(), "deploy ⟨U+202E⟩gpj.exe⟨U+001B⟩[2J 日本"; got != want {
		t.Fatalf("got %+q, want %+q", got, want)
	}
}
