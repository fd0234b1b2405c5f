package main

import (
	"io"
	"unicode/utf8"

	"github.com/cairnhq/cairn/session"
)

// visibleWriter shows what a terminal would hide or obey: everything
// written through it passes session.Visible, so a right-to-left override
// in a model's arguments prints as ⟨U+202E⟩ and an escape sequence in a
// tool's result cannot clear the screen or recolour the prompt. cairn chat
// and cairn sessions print through one; a rune split across writes is
// held until its end arrives.
type visibleWriter struct {
	w       io.Writer
	partial []byte // the start of a rune the last write ended in
}

func newVisibleWriter(w io.Writer) *visibleWriter { return &visibleWriter{w: w} }

// Write implements io.Writer; it reports len(p) once the shown text is written.
func (v *visibleWriter) Write(p []byte) (int, error) {
	buf := append(v.partial, p...)
	v.partial = nil
	// Hold back an incomplete rune at the end (at most 3 bytes).
	for i := len(buf) - 1; i >= 0 && i >= len(buf)-utf8.UTFMax+1; i-- {
		if utf8.RuneStart(buf[i]) {
			if !utf8.FullRune(buf[i:]) {
				v.partial = append([]byte(nil), buf[i:]...)
				buf = buf[:i]
			}
			break
		}
	}
	if _, err := io.WriteString(v.w, session.Visible(string(buf))); err != nil {
		return 0, err
	}
	return len(p), nil
}
