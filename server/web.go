package server

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"mime"
	"net/http"
	"path"
)

// webFiles is the page served at /: plain HTML, CSS and JavaScript with no build
// step and nothing fetched from elsewhere, so it works offline and with
// `go run` alone.
//
//go:embed web
var webFiles embed.FS

// serveIndex answers the page.
func (s *Server) serveIndex(w http.ResponseWriter, r *http.Request) {
	s.serveAsset(w, r, "index.html")
}

// serveUI answers the page's scripts and styles.
func (s *Server) serveUI(w http.ResponseWriter, r *http.Request) {
	s.serveAsset(w, r, r.PathValue("file"))
}

// asset is one file of the page, read and hashed once.
type asset struct {
	body        []byte
	etag, ctype string
}

// assets reads the page's files once per server.
func (s *Server) assets() map[string]asset {
	s.webOnce.Do(func() {
		s.web = map[string]asset{}
		entries, _ := webFiles.ReadDir("web")
		for _, e := range entries {
			b, err := webFiles.ReadFile("web/" + e.Name())
			if err != nil {
				continue
			}
			sum := sha256.Sum256(b)
			s.web[e.Name()] = asset{body: b, etag: `"` + hex.EncodeToString(sum[:8]) + `"`, ctype: mime.TypeByExtension(path.Ext(e.Name()))}
		}
	})
	return s.web
}

func (s *Server) serveAsset(w http.ResponseWriter, r *http.Request, name string) {
	a, ok := s.assets()[name]
	if !ok {
		writeError(w, http.StatusNotFound, "not_found", "no such file of the web page: "+name)
		return
	}
	w.Header().Set("ETag", a.etag)
	w.Header().Set("Cache-Control", "no-cache") // revalidate: a new binary serves a new page
	w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if a.ctype != "" {
		w.Header().Set("Content-Type", a.ctype)
	}
	if r.Header.Get("If-None-Match") == a.etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Write(a.body)
}
