package session_test

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/cairnhq/cairn/session"
)

// A preview from anywhere (a tool, a log written elsewhere) normalises to
// one every door may show: a known format, content of that format within
// MaxPreviewBytes, nothing hidden, and it normalises to itself again.
func FuzzPreviewNormalize(f *testing.F) {
	f.Add("diff", []byte(`"-a\n+b"`), "")
	f.Add("json", []byte(`{"rows": [1, 2]}`), "")
	f.Add("text", []byte(`"\u202egpj.exe"`), "")
	f.Add("html", []byte(`"<b>x</b>"`), "")
	f.Add("", []byte(`not json`), "")
	f.Add("", []byte(nil), "timed out\x1b[2J")
	f.Fuzz(func(t *testing.T, format string, content []byte, errText string) {
		p := session.Preview{Format: session.PreviewFormat(format), Content: content, Error: errText}.Normalize()
		switch {
		case p.Error != "":
			if p.Format != "" || len(p.Content) != 0 || strings.ContainsRune(p.Error, '\x1b') {
				t.Fatalf("an error preview keeps content or hidden characters: %+v", p)
			}
		case !p.Format.Known():
			t.Fatalf("format %q", p.Format)
		case len(p.Content) > session.MaxPreviewBytes+session.MaxPreviewBytes/2:
			t.Fatalf("content of %d bytes", len(p.Content))
		case p.Format == session.PreviewJSON:
			if !json.Valid(p.Content) {
				t.Fatalf("JSON preview is not JSON: %q", p.Content)
			}
		default:
			var s string
			if err := json.Unmarshal(p.Content, &s); err != nil || !utf8.ValidString(s) || session.Visible(s) != s {
				t.Fatalf("text preview %q: %v", p.Content, err)
			}
		}
		if again := p.Normalize(); again.Error != p.Error || string(again.Content) != string(p.Content) || again.Format != p.Format {
			t.Fatalf("not stable: %+v then %+v", p, again)
		}
	})
}
