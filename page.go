package cairn

import "github.com/cairnhq/cairn/internal/local"

// Page sizes of listings.
const (
	DefaultPageSize = local.DefaultPageSize
	MaxPageSize     = local.MaxPageSize
)

// Page asks for one page of a listing.
type Page struct {
	// Limit is the most items to return: 0 means DefaultPageSize; more than
	// MaxPageSize is refused.
	Limit int
	// Cursor is the next cursor of the previous page; empty for the first.
	Cursor string
	// Kinds, for the interrupt inbox, lists only interrupts of these kinds
	// (KindExternal: what waits on other systems); nil lists every kind.
	// Give the same Kinds with each page's Cursor.
	Kinds []Kind
	// Agent and Owner, for the session listing, list only the sessions of
	// that (root) agent, and that the owner started; empty lists every
	// one. Give the same ones with each page's Cursor.
	Agent, Owner string
	// Viewer, when set, lists only what that actor may see: the sessions of
	// their tenant (Actor.InTenant), walked from a per-tenant index. The
	// zero Actor is the program, which sees every tenant. A server passes
	// its caller.
	Viewer Actor
}
