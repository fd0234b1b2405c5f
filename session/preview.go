package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// PreviewFormat says how a preview's content reads: plain text, a unified
// diff, or a JSON value.
type PreviewFormat string

// Preview formats.
const (
	// PreviewText is plain text (a terraform plan, an EXPLAIN): the default.
	PreviewText PreviewFormat = "text"
	// PreviewDiff is a unified diff: front ends colour its added and
	// removed lines.
	PreviewDiff PreviewFormat = "diff"
	// PreviewJSON is a JSON value (the rows a DELETE would touch): front
	// ends fold it.
	PreviewJSON PreviewFormat = "json"
)

// Known reports whether f is one of the formats of this version.
func (f PreviewFormat) Known() bool {
	return f == PreviewText || f == PreviewDiff || f == PreviewJSON
}

// MaxPreviewBytes bounds a preview's content: a tool's dry run may print
// anything, and every door shows it. Longer output is cut (text and diff,
// with Truncated set) or refused (JSON, which a cut does not leave valid).
const MaxPreviewBytes = 64 << 10

// Preview is what an approval's call would do, computed by the tool's
// side-effect-free dry run before the pause (a diff, a plan, the rows a
// statement would touch) and stored with its interrupt: every door shows
// it beside the arguments, and a restart does not compute it again. It is
// the tool's output, so it is untrusted: Normalize bounds it and makes
// every character visible, and front ends draw it as text, never as HTML.
type Preview struct {
	// Format is how Content reads; empty with Error.
	Format PreviewFormat `json:"format,omitempty"`
	// Content is a JSON string (text, diff) or any JSON value (json).
	Content json.RawMessage `json:"content,omitempty"`
	// Truncated says Content was cut at MaxPreviewBytes.
	Truncated bool `json:"truncated,omitempty"`
	// Error, instead of Content, is why no preview could be computed (the
	// dry run failed or timed out). It never blocks the decision.
	Error string `json:"error,omitempty"`
}

// TextPreview is a preview of plain text, or of a unified diff with
// PreviewDiff, for a Tool.Preview to return.
func TextPreview(format PreviewFormat, text string) Preview {
	b, _ := json.Marshal(text) // a string always marshals
	return Preview{Format: format, Content: b}
}

// JSONPreview is a preview of a JSON value (PreviewJSON).
func JSONPreview(v any) (Preview, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return Preview{}, fmt.Errorf("cairn: the preview is not JSON: %w", err)
	}
	return Preview{Format: PreviewJSON, Content: b}, nil
}

// PreviewFailed is a preview that could not be computed, shown as why.
func PreviewFailed(err error) Preview {
	return Preview{Error: err.Error()}
}

// PreviewOfOutput reads a dry run's output as a preview of format
// (PreviewText when empty): JSON output must be one JSON value; text is
// made valid UTF-8. Normalize bounds it.
func PreviewOfOutput(format PreviewFormat, output string) Preview {
	if format == "" {
		format = PreviewText
	}
	if format == PreviewJSON {
		trimmed := bytes.TrimSpace([]byte(output))
		if !json.Valid(trimmed) {
			return Preview{Error: fmt.Sprintf("the preview's output is not one JSON value (format: json): %s", clip(output, 200))}
		}
		return Preview{Format: PreviewJSON, Content: trimmed}
	}
	return TextPreview(format, strings.ToValidUTF8(output, "\uFFFD"))
}

// Normalize returns p as every door may show it: a known format, content
// of its format within MaxPreviewBytes (text cut at a character boundary,
// JSON compacted or refused), every hidden character of the text made
// visible (Visible), and an error of at most a few hundred characters.
// A preview written by anything (a tool, a log from elsewhere) goes
// through it before it is stored.
func (p Preview) Normalize() Preview {
	if p.Error != "" {
		return Preview{Error: clip(Visible(p.Error), 1000)}
	}
	format := p.Format
	if format == "" {
		format = PreviewText
	}
	if !format.Known() {
		return Preview{Error: Visible(fmt.Sprintf("the preview's format %q is not one of text, diff, json", clip(string(format), 40)))}
	}
	if format == PreviewJSON {
		var buf bytes.Buffer
		if err := json.Compact(&buf, p.Content); err != nil {
			return Preview{Error: fmt.Sprintf("the preview's content is not JSON: %v", err)}
		}
		if buf.Len() > MaxPreviewBytes {
			return Preview{Error: fmt.Sprintf("the preview's JSON is %d bytes, more than the %d a preview may have", buf.Len(), MaxPreviewBytes)}
		}
		return Preview{Format: PreviewJSON, Content: buf.Bytes()}
	}
	var text string
	if err := json.Unmarshal(p.Content, &text); err != nil {
		return Preview{Error: fmt.Sprintf("the preview's content is not a JSON string (format: %s)", format)}
	}
	text = Visible(text)
	cut := false
	if len(text) > MaxPreviewBytes {
		text, cut = cutAtRune(text, MaxPreviewBytes), true
	}
	out := TextPreview(format, text)
	out.Truncated = cut || p.Truncated
	return out
}

// Text is the preview as one plain text a terminal, an elicitation or a
// chat message shows: text and diffs as they are, JSON indented, an error
// as "preview failed: …".
func (p Preview) Text() string {
	if p.Error != "" {
		return "preview failed: " + p.Error
	}
	var out string
	switch p.Format {
	case PreviewJSON:
		var buf bytes.Buffer
		if json.Indent(&buf, p.Content, "", "  ") != nil {
			out = string(p.Content)
		} else {
			out = buf.String()
		}
	default:
		if json.Unmarshal(p.Content, &out) != nil {
			out = string(p.Content)
		}
	}
	if p.Truncated {
		out += "\n… (cut at " + fmt.Sprint(MaxPreviewBytes) + " bytes)"
	}
	return out
}

// cutAtRune returns the longest prefix of s of at most n bytes that ends
// at a character boundary.
func cutAtRune(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// clip shortens s to at most n bytes for a message, ending in "…" when
// it is cut (so a clipped text clips to itself).
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return cutAtRune(s, n-len("…")) + "…"
}
