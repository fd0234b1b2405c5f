package session_test

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/cairnhq/cairn/session"
)

func TestVisible(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"plain text, ünïcödé, 日本語, emoji 🚀", "plain text, ünïcödé, 日本語, emoji 🚀"},
		{"two\nlines\tand a tab", "two\nlines\tand a tab"},
		{"\u202egpj.exe", "⟨U+202E⟩gpj.exe"},
		{"rm\u200b -rf", "rm⟨U+200B⟩ -rf"},
		{"\u2066isolate\u2069 \u200f\ufeff", "⟨U+2066⟩isolate⟨U+2069⟩ ⟨U+200F⟩⟨U+FEFF⟩"},
		{"bell\a esc\x1b[2J del\x7f", "bell⟨U+0007⟩ esc⟨U+001B⟩[2J del⟨U+007F⟩"},
		{"cr\r\nline\u2028para\u2029", "cr⟨U+000D⟩\nline⟨U+2028⟩para⟨U+2029⟩"},
		{"tag\U000E0041 filler\u3164", "tag⟨U+E0041⟩ filler⟨U+3164⟩"},
		{"bad \xff byte", "bad \uFFFD byte"},
		{"a written \uFFFD stays", "a written \uFFFD stays"},
		// A joiner inside an emoji sequence is part of the picture; elsewhere it is hidden.
		{"👩\u200d💻 and 🏳\ufe0f\u200d🌈", "👩\u200d💻 and 🏳\ufe0f\u200d🌈"},
		{"a\u200db", "a⟨U+200D⟩b"},
	} {
		if got := session.Visible(c.in); got != c.want {
			t.Errorf("Visible(%+q) = %+q, want %+q", c.in, got, c.want)
		}
	}
}

func FuzzVisible(f *testing.F) {
	for _, s := range []string{"", "\u202egpj.exe", "👩\u200d💻", "\xff\xfe", "a\u200d", "\u200d💻", "\x1b[31mred"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := session.Visible(s)
		if !utf8.ValidString(got) {
			t.Fatalf("Visible(%+q) = %+q is not UTF-8", s, got)
		}
		if again := session.Visible(got); again != got {
			t.Fatalf("not stable: %+q then %+q", got, again)
		}
		for _, r := range got {
			if r != '\u200d' && (r < ' ' && r != '\n' && r != '\t' || r == 0x7f || r == '\u202e' || r == '\u200b' || r == '\u2066') {
				t.Fatalf("Visible(%+q) = %+q keeps %U", s, got, r)
			}
		}
		if utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return session.Visible(string(r)) != string(r) }) && got != s {
			t.Fatalf("changed text with nothing hidden: %+q → %+q", s, got)
		}
	})
}

func ExampleVisible() {
	// A right-to-left override makes "gpj.exe" read as "exe.jpg".
	fmt.Println(session.Visible("Open \u202egpj.exe?"))
	// Output: Open ⟨U+202E⟩gpj.exe?
}

func TestFold(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		s          string
		n          int
		head, rest string
	}{
		{"short", 10, "short", ""},
		{"日本語です", 2, "日本", "語です"},
		{"abc", 3, "abc", ""},
		{"abc", 0, "", "abc"},
	} {
		if h, r := session.Fold(c.s, c.n); h != c.head || r != c.rest {
			t.Errorf("Fold(%q, %d) = %q, %q; want %q, %q", c.s, c.n, h, r, c.head, c.rest)
		}
	}
}
