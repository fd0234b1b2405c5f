// Package fakeserver is the scaffold the fake model providers share
// (fakeopenai, fakeresponses, fakeanthropic, fakegemini): a server on
// 127.0.0.1 that records the requests its handler decoded, and a writer
// of Server-Sent Events. Each fake keeps only what its provider's wire
// format says.
package fakeserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
)

// Server is a running fake that records requests of type Req.
type Server[Req any] struct {
	*httptest.Server
	mu       sync.Mutex
	requests []Req
}

// Listen starts s serving h on 127.0.0.1; Close stops it.
func (s *Server[Req]) Listen(h http.Handler) { s.Server = httptest.NewServer(h) }

// Record keeps req and returns its number, from 1: the fakes make their
// response ids from it.
func (s *Server[Req]) Record(req Req) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, req)
	return len(s.requests)
}

// Requests returns the requests received so far.
func (s *Server[Req]) Requests() []Req {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// SSE writes a Server-Sent Events stream, flushing each event.
type SSE struct {
	w     http.ResponseWriter
	flush func()
}

// NewSSE starts a stream on w.
func NewSSE(w http.ResponseWriter) *SSE {
	w.Header().Set("Content-Type", "text/event-stream")
	flusher, _ := w.(http.Flusher)
	return &SSE{w: w, flush: func() {
		if flusher != nil {
			flusher.Flush()
		}
	}}
}

// Send writes one event: "event: name" when name is not empty, and data
// as JSON.
func (e *SSE) Send(name string, data any) {
	b, err := json.Marshal(data)
	if err != nil {
		panic(fmt.Sprintf("fakeserver: an event that is not JSON: %v", err)) // a bug of the fake
	}
	if name != "" {
		fmt.Fprintf(e.w, "event: %s\n", name)
	}
	fmt.Fprintf(e.w, "data: %s\n\n", b)
	e.flush()
}

// Raw writes text as it is (a terminator such as "data: [DONE]\n\n").
func (e *SSE) Raw(text string) {
	fmt.Fprint(e.w, text)
	e.flush()
}
