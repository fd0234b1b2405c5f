package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"html/template"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/session"
)

// Action links (cairn.RunnerOptions.Webhooks): the link is the credential,
// so these routes need no bearer token. A GET only shows what the link
// would do (mail scanners and chat unfurlers follow GET links); the POST
// its page submits decides, once.

// actionPage is everything the confirmation page shows.
type actionPage struct {
	Title   string
	Status  int
	Message string // why nothing is asked (used, expired, invalid)
	Done    bool   // decided by this request
	Link    *cairn.ActionLink
	In      *cairn.Interrupt
	Args    string // the call's arguments, indented (the start of them when long)
	More    string // the rest of long arguments, folded behind "expand"
	Outcome string // the session's status after the decision
}

// foldArgsAt is how much of a call's arguments the page shows before the
// rest is folded behind "expand".
const foldArgsAt = 2000

// MoreChars is how many characters are folded.
func (p *actionPage) MoreChars() int { return utf8.RuneCountInString(p.More) }

// The page shows what a model, a tool or a person wrote through visible
// (session.Visible): a right-to-left override cannot turn "gpj.exe" into
// "exe.jpg", here or in the arguments.
var actionTemplate = template.Must(template.New("action").Funcs(template.FuncMap{"visible": session.Visible, "previewLines": previewLines}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex"><title>{{.Title}} · Cairn</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:3rem auto;padding:0 1rem;color:#222}
pre{background:#f4f4f4;padding:.75rem;overflow:auto;white-space:pre-wrap;overflow-wrap:anywhere}p,code{overflow-wrap:anywhere}button{font-size:1rem;padding:.5rem 1.25rem;border-radius:.3rem;border:1px solid #888;cursor:pointer}
.approve{background:#1a7f37;color:#fff;border-color:#1a7f37}.reject{background:#cf222e;color:#fff;border-color:#cf222e}
textarea{width:100%;min-height:4rem;font:inherit}.note{color:#555}
.preview pre span{display:block}.preview .add{background:#e6ffec;color:#116329}.preview .del{background:#ffebe9;color:#82071e}.preview .hunk{color:#0550ae}.preview-error{color:#cf222e}</style></head><body>
<h1>{{.Title}}</h1>
{{if .Message}}<p>{{visible .Message}}</p>{{end}}
{{with .In}}<p><strong>{{if .Message}}{{visible .Message}}{{else if .Question}}{{visible .Question}}{{else}}Tool {{visible .Tool}}{{end}}</strong></p>
{{if .Tool}}<p class="note">Tool <code>{{visible .Tool}}</code> in session <code>{{$.Link.SessionID}}</code>{{with .ExpiresAt}}, waiting until {{.Format "2006-01-02 15:04 MST"}}{{end}}.</p>{{end}}
{{if $.Args}}<pre>{{visible $.Args}}{{if $.More}}…{{end}}</pre>{{if $.More}}<details><summary>expand ({{$.MoreChars}} more characters)</summary><pre>{{visible $.More}}</pre></details>{{end}}{{end}}
{{with .Preview}}<section class="preview"><p class="note">What the call would do (its tool's dry run, computed before you were asked):</p>
{{if .Error}}<p class="preview-error">Preview failed: {{visible .Error}}</p>{{else}}<pre class="preview-{{.Format}}">{{range previewLines .}}<span{{with .Class}} class="{{.}}"{{end}}>{{visible .Text}}</span>{{end}}</pre>{{end}}</section>{{end}}{{end}}
{{if and .In (not .Done)}}<form method="post">
{{if eq .Link.Action "reject"}}<p><label>Reason (the agent sees it)<br><textarea name="reason"></textarea></label></p>
<button class="reject" type="submit">Reject</button>{{else}}<button class="approve" type="submit">Approve</button>{{end}}
</form>{{end}}
{{if .Done}}<p class="note">The session is now {{.Outcome}}. You can close this page.</p>{{end}}
</body></html>
`))

// actionForm is the page of an action link: what it would decide, and a
// button that POSTs the decision.
func (s *Server) actionForm(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	link, err := s.runner.ReadActionLink(ctx, r.PathValue("token"))
	if err != nil {
		s.actionRefused(w, r, err)
		return
	}
	sess, err := s.runner.Session(ctx, link.SessionID)
	if err != nil {
		s.actionRefused(w, r, err)
		return
	}
	for _, in := range sess.Interrupts {
		if in.ID == link.InterruptID {
			title := "Approve this call?"
			if link.Action == session.ActionReject {
				title = "Reject this call?"
				if in.Kind == session.KindInput {
					title = "Decline this question?"
				}
			}
			page := &actionPage{Title: title, Link: link, In: &in, Args: indented(in.Arguments)}
			page.Args, page.More = session.Fold(page.Args, foldArgsAt)
			writeActionPage(w, http.StatusOK, page)
			return
		}
	}
	s.actionRefused(w, r, &session.Error{Code: session.CodeConflict, Interrupt: link.InterruptID,
		Message: "this link was used, or the call was decided another way: nothing waits for it any more"})
}

// followAction decides through an action link. A client that asks for
// JSON (Accept: application/json) gets the session, or the API's error.
func (s *Server) followAction(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	reason := ""
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		if err := r.ParseForm(); err != nil {
			s.actionRefused(w, r, &session.Error{Code: session.CodeInvalidRequest, Message: "the form is malformed: " + err.Error(), Err: err})
			return
		}
		reason = strings.TrimSpace(r.PostForm.Get("reason"))
	}
	// A person signed in to follow the link (a bearer token) decides as
	// themselves; otherwise the link decides as its receiver.
	var opts *cairn.TurnOptions
	if p, ok := s.bearer(r); ok {
		opts = decidedBy(p)
	}
	sess, err := s.runner.FollowActionLink(turnContext(r), r.PathValue("token"), reason, opts)
	if err != nil {
		s.actionRefused(w, r, err)
		return
	}
	if wantsJSON(r) {
		writeJSON(w, http.StatusOK, sess)
		return
	}
	link, _ := s.runner.ReadActionLink(r.Context(), r.PathValue("token"))
	title := "Approved"
	if link != nil && link.Action == session.ActionReject {
		title = "Rejected"
	}
	writeActionPage(w, http.StatusOK, &actionPage{Title: title, Done: true, Link: link, Outcome: string(sess.Status)})
}

// actionRefused answers a link that cannot decide: 403 altered, 410
// expired, 409 used (or decided another way), 404 session gone.
func (s *Server) actionRefused(w http.ResponseWriter, r *http.Request, err error) {
	if wantsJSON(r) || cairn.ErrorCode(err) == "" {
		s.fail(w, r, err)
		return
	}
	page := &actionPage{Status: httpStatus(cairn.ErrorCode(err)), Message: err.Error()}
	var e *session.Error
	if errors.As(err, &e) {
		page.Message = e.Message
	}
	switch page.Status {
	case http.StatusConflict:
		page.Title = "Already decided"
	case http.StatusGone:
		page.Title = "This link expired"
	case http.StatusForbidden:
		page.Title = "This link is not valid"
	default:
		page.Title = "This link cannot decide"
	}
	writeActionPage(w, page.Status, page)
}

func writeActionPage(w http.ResponseWriter, status int, page *actionPage) {
	var buf bytes.Buffer
	if err := actionTemplate.Execute(&buf, page); err != nil {
		writeError(w, http.StatusInternalServerError, "internal", "the page could not be rendered: "+err.Error())
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer") // the URL is the credential
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

func wantsJSON(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "application/json")
}

func indented(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var buf bytes.Buffer
	if json.Indent(&buf, raw, "", "  ") != nil {
		return string(raw)
	}
	return buf.String()
}
