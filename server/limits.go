package server

import (
	"context"
	"io"
	"net/http"
	"sync"
	"time"
)

// Timeouts of the http.Server that HTTPServer returns. A deadline only
// bites when a write waits, and every write of an answer or an event sets
// WriteGrace first (extendWrite): a turn (creating a session, a message,
// decisions, a stateless invoke) may run as long as its tools do and still
// answer, and an event stream lives as long as its client keeps reading.
const (
	ReadHeaderTimeout = 10 * time.Second
	ReadTimeout       = time.Minute // the whole request, body included
	WriteTimeout      = time.Minute
	IdleTimeout       = 2 * time.Minute
	WriteGrace        = 30 * time.Second
)

// Event stream limits (Options can change them).
const (
	DefaultMaxStreamsPerSession = 32
	DefaultMaxStreams           = 10000
	DefaultStreamIdle           = 10 * time.Minute
)

// HTTPServer returns an http.Server serving s with Cairn's timeouts: a
// client that sends its headers or body too slowly (slowloris), or reads an
// answer too slowly, is cut off; idle keep-alive connections are closed.
//
// Its Shutdown ends the event streams at once (CloseStreams) and waits
// only for requests that run a turn.
func (s *Server) HTTPServer() *http.Server {
	srv := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       s.readTimeout,
		WriteTimeout:      s.writeTimeout,
		IdleTimeout:       IdleTimeout,
	}
	srv.RegisterOnShutdown(s.CloseStreams)
	return srv
}

// extendWrite gives the next write WriteGrace. Errors mean the writer has
// no deadlines (a test recorder): nothing to extend.
func extendWrite(w http.ResponseWriter) {
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(WriteGrace))
}

// streams counts the live event streams, per session and in all.
type streams struct {
	mu         sync.Mutex
	perSession map[string]int
	total      int
	maxPer     int
	maxTotal   int
}

// acquire reserves a stream on session id ("" for the cross-session feed,
// which only the server's total bounds); ok is false when a limit is
// reached, with the reason.
func (l *streams) acquire(id string) (release func(), reason string, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.total >= l.maxTotal:
		return nil, "this server has as many event streams open as it allows; retry later or read GET …/events?after=SEQ", false
	case id != "" && l.perSession[id] >= l.maxPer: // "": the cross-session feed
		return nil, "this session has as many event streams open as the server allows; close one or read GET …/events?after=SEQ", false
	}
	if l.perSession == nil {
		l.perSession = map[string]int{}
	}
	l.perSession[id]++
	l.total++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.total--
			if l.perSession[id]--; l.perSession[id] <= 0 {
				delete(l.perSession, id)
			}
		})
	}, "", true
}

// CloseStreams ends every event stream (the per-session and cross-session
// SSE streams, AI SDK stream resumptions, MCP's GET streams) at once, each
// with a retry hint, and refuses new ones, so that a stopping server does
// not wait on readers: browsers and clients reconnect, to another node
// behind a load balancer, with Last-Event-ID. Requests that run a turn are
// not ended. HTTPServer's server calls it when Shutdown begins; a caller
// with its own http.Server registers it with RegisterOnShutdown.
func (s *Server) CloseStreams() { s.closeOnce.Do(func() { close(s.stopping) }) }

// stoppingMessage tells an SSE client to reconnect soon, elsewhere.
func stoppingMessage(w http.ResponseWriter, flush func()) {
	extendWrite(w)
	io.WriteString(w, "retry: 1000\n: this server is stopping; reconnect with Last-Event-ID\n\n")
	flush()
}

// endsOnStop ends the requests of h (a handler that holds long streams of
// its own, like MCP's) when CloseStreams is called.
func (s *Server) endsOnStop(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		go func() {
			select {
			case <-s.stopping:
				cancel()
			case <-ctx.Done():
			}
		}()
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}
