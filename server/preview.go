package server

import (
	"encoding/json"
	"unicode/utf8"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/session"
)

// PreviewBytes bounds each long value a listing inlines (GET /v1/sessions,
// GET /v1/interrupts, the cross-session feed): a session's output and
// error, an interrupt's arguments, message, question, text and preview. A page of
// 1,000 sessions stays a few MiB whatever the models wrote; the session
// itself has every value whole.
const PreviewBytes = 2 << 10

// previewSession returns s, or a copy with long values cut to previews,
// named in Truncated.
func previewSession(s *cairn.Session) *cairn.Session {
	out := *s
	cut := false
	if v, ok := preview(s.Output); ok {
		out.Output, cut = v, true
		out.Truncated = append(out.Truncated, "output")
	}
	if s.Error != nil {
		if v, ok := preview(s.Error.Message); ok {
			e := *s.Error
			e.Message, cut = v, true
			out.Error = &e
			out.Truncated = append(out.Truncated, "error.message")
		}
	}
	copied := false // out.Interrupts is s's until an interrupt is cut
	for i, in := range s.Interrupts {
		if p, ok := previewInterrupt(in); ok {
			if !copied {
				out.Interrupts, copied = append([]cairn.Interrupt(nil), s.Interrupts...), true
			}
			out.Interrupts[i], cut = p, true
		}
	}
	if !cut {
		return s
	}
	return &out
}

// previewInterrupt cuts an interrupt's long values; ok reports a cut.
func previewInterrupt(in cairn.Interrupt) (cairn.Interrupt, bool) {
	cut := false
	for _, f := range []struct {
		name string
		v    *string
	}{{"message", &in.Message}, {"question", &in.Question}, {"text", &in.Text}} {
		if v, ok := preview(*f.v); ok {
			*f.v, cut = v, true
			in.Truncated = append(in.Truncated, f.name)
		}
	}
	if v, ok := preview(string(in.Arguments)); ok {
		in.Arguments, _ = json.Marshal(v) // a string: the start of the JSON
		in.Truncated, cut = append(in.Truncated, "arguments"), true
	}
	if p := in.Preview; p != nil && len(p.Content) > PreviewBytes {
		text := string(p.Content) // the start of a JSON preview's JSON
		if p.Format != session.PreviewJSON {
			text = p.Text()
		}
		v, _ := preview(text)
		short := *p
		short.Content, _ = json.Marshal(v) // a string, as a cut argument is
		in.Preview = &short
		in.Truncated, cut = append(in.Truncated, "preview"), true
	}
	return in, cut
}

// preview cuts s to PreviewBytes on a rune boundary, with an ellipsis.
func preview(s string) (string, bool) {
	if len(s) <= PreviewBytes {
		return s, false
	}
	n := PreviewBytes
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…", true
}
