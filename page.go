package cairn

import "github.com/cairnhq/cairn/internal/runtime"

// Page sizes of listings.
const (
	DefaultPageSize = runtime.DefaultPageSize
	MaxPageSize     = runtime.MaxPageSize
)

// Page asks for one page of a listing.
type Page struct {
	// Limit is the most items to return: 0 means DefaultPageSize; more than
	// MaxPageSize is refused.
	Limit int
	// Cursor is the next cursor of the previous page; empty for the first.
	Cursor string
}
