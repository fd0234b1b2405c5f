package server

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"mime"
	"net/http"
	"path"
	"strings"
)

// web is the page served at /: plain HTML, CSS and JavaScript with no build
// step and nothing fetched from elsewhere, so it works offline and with
// `go run` alone.
//
//go:embed web
var web embed.FS

// serveIndex answers the page.
func (s *Server) serveIndex(w http.ResponseWriter, r *http.Request) {
	s.serveAsset(w, r, "index.html")
}

// serveUI answers the page's scripts and styles.
func (s *Server) serveUI(w http.ResponseWriter, r *http.Request) {
	s.serveAsset(w, r, r.PathValue("file"))
}

func (s *Server) serveAsset(w http.ResponseWriter, r *http.Request, name string) {
	if strings.Contains(name, "/") || strings.HasPrefix(name, ".") {
		writeError(w, http.StatusNotFound, "not_found", "no such file of the web page: "+name)
		return
	}
	b, err := web.ReadFile("web/" + name)
	if err != nil {
		writeError(w, http.StatusNotFound, "not_found", "no such file of the web page: "+name)
		return
	}
	sum := sha256.Sum256(b)
	etag := `"` + hex.EncodeToString(sum[:8]) + `"`
	w.Header().Set("ETag", etag)
	w.Header().Set("Cache-Control", "no-cache") // revalidate: a new binary serves a new page
	w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if ct := mime.TypeByExtension(path.Ext(name)); ct != "" {
		w.Header().Set("Content-Type", ct)
	}
	if r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Write(b)
}
