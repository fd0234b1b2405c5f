package local

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"slices"
	"time"

	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/store"
)

// Page sizes of listings (cairn.DefaultPageSize, cairn.MaxPageSize).
const (
	DefaultPageSize = 100
	MaxPageSize     = 1000
)

// Page is a cairn.Page (documented there), which converts to it.
type Page struct {
	Limit  int
	Cursor string
	Kinds  []session.Kind
	Agent  string
	Owner  string
	Viewer session.Actor
}

// scope is the part of a listing the viewer may see: their tenant's
// sessions, unless they see every tenant.
func (p Page) scope(opts store.ListOptions) store.ListOptions {
	if !p.Viewer.EveryTenant() {
		opts.ByTenant, opts.Tenant = true, p.Viewer.Tenant
	}
	return opts
}

// cursor is what a page cursor holds: the listing goes on after the head at
// Position, skipping Skip interrupts of the head that follows it (the inbox
// may end a page inside one session's interrupts).
type cursor struct {
	UpdatedAt time.Time `json:"u"`
	ID        string    `json:"i"`
	Skip      int       `json:"n,omitempty"`
}

func (c cursor) position() store.Position { return store.Position{UpdatedAt: c.UpdatedAt, ID: c.ID} }

func encodeCursor(p store.Position, skip int) string {
	b, _ := json.Marshal(cursor{UpdatedAt: p.UpdatedAt, ID: p.ID, Skip: skip})
	return base64.RawURLEncoding.EncodeToString(b)
}

func (p Page) parse() (limit int, c cursor, err error) {
	limit = p.Limit
	switch {
	case limit == 0:
		limit = DefaultPageSize
	case limit < 0 || limit > MaxPageSize:
		return 0, c, &session.Error{Code: session.CodeInvalidRequest, Message: "limit must be between 1 and 1000"}
	}
	if p.Cursor == "" {
		return limit, c, nil
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(p.Cursor)
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil || c.Skip < 0 {
		return 0, c, &session.Error{Code: session.CodeInvalidRequest, Message: "cursor is not one this server issued: pass next_cursor from the previous page unchanged"}
	}
	return limit, c, nil
}

// SessionsPage is cairn.Runner.SessionsPage (documented there).
func (r *Runner) SessionsPage(ctx context.Context, status session.Status, page Page) (sessions []*session.Session, next string, err error) {
	limit, c, err := page.parse()
	if err != nil {
		return nil, "", err
	}
	heads, err := r.store.List(ctx, page.scope(store.ListOptions{Status: status, Agent: page.Agent, Owner: page.Owner, After: c.position(), Limit: limit + 1}))
	if err != nil {
		return nil, "", err
	}
	if len(heads) > limit {
		heads = heads[:limit]
		next = encodeCursor(heads[limit-1].Position(), 0)
	}
	sessions = make([]*session.Session, 0, len(heads))
	for _, h := range heads {
		s, err := r.sessionFromHead(h)
		if err != nil {
			return nil, "", err
		}
		sessions = append(sessions, s)
	}
	return sessions, next, nil
}

// InterruptsPage is cairn.Runner.InterruptsPage (documented there).
func (r *Runner) InterruptsPage(ctx context.Context, page Page) (interrupts []session.PendingInterrupt, next string, err error) {
	limit, c, err := page.parse()
	if err != nil {
		return nil, "", err
	}
	interrupts = []session.PendingInterrupt{}
	prev, skip := c.position(), c.Skip
	for {
		heads, more, err := r.pausedWith(ctx, page.scope(store.ListOptions{Status: session.StatusPaused, After: prev, Limit: limit + 1}), page.Kinds)
		if err != nil {
			return nil, "", err
		}
		for _, h := range heads {
			s, err := r.sessionFromHead(h)
			if err != nil {
				return nil, "", err
			}
			for i := skip; i < len(s.Interrupts); i++ {
				if len(page.Kinds) > 0 && !slices.Contains(page.Kinds, s.Interrupts[i].Kind) {
					continue
				}
				if len(interrupts) == limit {
					r.suggest(ctx, interrupts)
					return interrupts, encodeCursor(prev, i), nil
				}
				interrupts = append(interrupts, session.PendingInterrupt{Interrupt: s.Interrupts[i], SessionID: s.ID, Tenant: s.Tenant, Seq: s.Seq, PausedAt: s.UpdatedAt})
			}
			prev, skip = h.Position(), 0
		}
		if !more {
			r.suggest(ctx, interrupts)
			return interrupts, "", nil
		}
	}
}

// pausedWith lists up to opts.Limit paused sessions after opts.After, in List's
// order: all of them, or those with a pending interrupt of one of kinds.
// Each kind is an index walk of its own (store.ListOptions.Kind); for
// several, the walks are merged and a session with more than one of them
// comes once. more says whether sessions may follow the last one.
func (r *Runner) pausedWith(ctx context.Context, opts store.ListOptions, kinds []session.Kind) (heads []store.Head, more bool, err error) {
	limit := opts.Limit
	if len(kinds) == 0 {
		heads, err = r.store.List(ctx, opts)
		return heads, len(heads) == limit, err
	}
	seen := map[string]bool{}
	for _, k := range kinds {
		opts.Kind = k
		some, err := r.store.List(ctx, opts)
		if err != nil {
			return nil, false, err
		}
		// A kind that filled its page may have more after it.
		more = more || len(some) == limit
		for _, h := range some {
			if !seen[h.ID] {
				seen[h.ID] = true
				heads = append(heads, h)
			}
		}
	}
	slices.SortFunc(heads, func(a, b store.Head) int { return a.Position().Compare(b.Position()) })
	// The first limit of the merge are the first limit of the union: each
	// comes within the first limit of its own kind's walk.
	if len(heads) > limit {
		heads, more = heads[:limit], true
	}
	return heads, more, nil
}

// all walks a paged listing to its end.
func all[T any](page func(Page) ([]T, string, error)) ([]T, error) {
	out := []T{}
	p := Page{Limit: MaxPageSize}
	for {
		items, next, err := page(p)
		if err != nil {
			return nil, err
		}
		out = append(out, items...)
		if next == "" {
			return out, nil
		}
		p.Cursor = next
	}
}
