package server

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/cairnhq/cairn/session"
)

// previewRequest is the body of POST …/interrupts/{interrupt_id}/preview.
type previewRequest struct {
	// Arguments are those the caller may approve the call with (an edit);
	// absent or null: the call's own.
	Arguments json.RawMessage `json:"arguments"`
}

// postPreview computes the dry run of a pending approval's call with
// edited arguments, without deciding: checked as a decision's arguments,
// for a caller who may approve it, and recorded nowhere.
func (s *Server) postPreview(w http.ResponseWriter, r *http.Request) {
	var req previewRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if !s.mayRead(w, r) {
		return
	}
	p, err := s.runner.Preview(r.Context(), r.PathValue("id"), r.PathValue("interrupt_id"), req.Arguments, decidedBy(callerOf(r)))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, p)
}

// previewLine is one line of a preview as a page draws it: a diff's
// added, removed and hunk lines have a class that colours them.
type previewLine struct {
	Class, Text string
}

// previewLines are a preview's lines for a page (the action-link page;
// the web page draws the same in app.js): JSON indented, a diff's lines
// classed add, del or hunk. The page escapes and marks them (visible):
// a preview is a tool's output, never HTML.
func previewLines(p *session.Preview) []previewLine {
	text := strings.TrimRight(p.Text(), "\n")
	var out []previewLine
	for _, line := range strings.Split(text, "\n") {
		class := ""
		if p.Format == session.PreviewDiff {
			switch {
			case strings.HasPrefix(line, "+++"), strings.HasPrefix(line, "---"):
				class = "file"
			case strings.HasPrefix(line, "+"):
				class = "add"
			case strings.HasPrefix(line, "-"):
				class = "del"
			case strings.HasPrefix(line, "@@"):
				class = "hunk"
			}
		}
		out = append(out, previewLine{Class: class, Text: line})
	}
	return out
}
