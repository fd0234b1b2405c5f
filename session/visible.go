package session

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Visible returns s with every character a reader cannot see, or that
// changes how the text around it reads, replaced by a visible marker such
// as ⟨U+202E⟩: bidirectional controls (a right-to-left override shows
// "\u202egpj.exe" as "exe.jpg"), zero-width and other format characters,
// control characters other than newline and tab (a terminal's escape
// sequences among them), line and paragraph separators, and the blank
// fillers some scripts have. Bytes that are not UTF-8 become U+FFFD.
//
// Front ends show arguments, messages, names and reasons through it, since
// a model, a tool or another person wrote them: the web page, cairn chat,
// the CLI, the action-link pages and the Slack bridge all do. A zero-width
// joiner inside an emoji sequence is kept, so 👩‍💻 stays one picture.
func Visible(s string) string {
	if !hasHidden(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	prev := rune(-1)
	for i, r := range s {
		switch {
		case r == utf8.RuneError && isInvalidAt(s, i):
			b.WriteRune(utf8.RuneError)
		case hidden(r) && !(r == zwj && joinsEmoji(prev, s[i+len(string(r)):])):
			fmt.Fprintf(&b, "⟨U+%04X⟩", r)
		default:
			b.WriteRune(r)
		}
		prev = r
	}
	return b.String()
}

// Fold splits s after n characters (runes, never inside one): the start a
// front end shows, and the rest it folds behind "expand" or names by
// length. rest is "" when s is that short.
func Fold(s string, n int) (head, rest string) {
	for i := range s {
		if n == 0 {
			return s[:i], s[i:]
		}
		n--
	}
	return s, ""
}

const zwj = '\u200D'

// hasHidden reports whether Visible would change s; most text has nothing
// to mark, and costs one pass and no allocation.
func hasHidden(s string) bool {
	for i, r := range s {
		if hidden(r) || (r == utf8.RuneError && isInvalidAt(s, i)) {
			return true
		}
	}
	return false
}

// hidden reports whether r is invisible or reorders text: control (but
// newline and tab), format (bidi controls, zero-width characters, the BOM,
// tags), line and paragraph separators, and blank letters.
func hidden(r rune) bool {
	switch r {
	case '\n', '\t':
		return false
	case '\u034F', '\u115F', '\u1160', '\u3164', '\uFFA0': // grapheme joiner, Hangul fillers
		return true
	}
	if r >= '\u180B' && r <= '\u180F' { // Mongolian variation selectors and vowel separator
		return true
	}
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp)
}

// isInvalidAt reports whether the RuneError at s[i] stands for a byte that
// is not UTF-8 (rather than a U+FFFD written in the text).
func isInvalidAt(s string, i int) bool {
	_, size := utf8.DecodeRuneInString(s[i:])
	return size == 1
}

// joinsEmoji reports whether a zero-width joiner between prev and the start
// of rest is part of an emoji sequence: a pictograph (or its variation
// selector or skin tone) before it, and a pictograph after it.
func joinsEmoji(prev rune, rest string) bool {
	next, _ := utf8.DecodeRuneInString(rest)
	pictograph := func(r rune) bool { return r > 0x2000 && unicode.Is(unicode.So, r) }
	return (pictograph(prev) || prev == '\uFE0F' || (prev >= 0x1F3FB && prev <= 0x1F3FF)) && pictograph(next)
}
