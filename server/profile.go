package server

import (
	"net/http"
	"net/http/pprof"
	"strings"
)

// profile answers GET /debug/pprof/… (Options.Profiling) with the
// standard library's profiles, for admins only: a CPU profile of a loaded
// server (/debug/pprof/profile?seconds=30, under the write timeout),
// the heap, allocations, goroutines, an execution trace. They name code,
// not data, but a CPU profile costs the server while it runs.
func (s *Server) profile(w http.ResponseWriter, r *http.Request) {
	if _, ok := require(w, r, RoleAdmin, "profiling the server"); !ok {
		return
	}
	switch strings.TrimPrefix(r.URL.Path, "/debug/pprof/") {
	case "cmdline":
		pprof.Cmdline(w, r)
	case "profile":
		pprof.Profile(w, r)
	case "symbol":
		pprof.Symbol(w, r)
	case "trace":
		pprof.Trace(w, r)
	default:
		pprof.Index(w, r) // the list, and heap, allocs, goroutine, block, mutex…
	}
}
