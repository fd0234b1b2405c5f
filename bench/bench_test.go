// Package bench measures Cairn's overhead: what it adds on top of the model
// per turn, per pause and resume, per byte written. The model is scripted and
// in-process, so the numbers are framework cost only. Run:
//
//	go test -run XXX -bench . -benchmem -count 5 ./bench | tee cairn.txt
//
// and see docs/performance.md for the figures and how to compare peers.
package bench

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/audit"
	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/internal/testkit/fakeopenai"
	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/model/openai"
	"github.com/cairnhq/cairn/model/scripted"
	"github.com/cairnhq/cairn/server"
	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/postgres"
	"github.com/cairnhq/cairn/store/sqlite"
)

type lookupArgs struct {
	Q string `json:"q"`
}

func lookupTool(approval bool) *cairn.Tool {
	spec := &cairn.Tool{Name: "lookup", Description: "Look up."}
	if approval {
		spec.Approval = cairn.Always()
	}
	return cairn.NewTool(spec, func(ctx context.Context, a lookupArgs) (string, error) { return "ok", nil })
}

// oneToolScript: the model asks for one tool, the tool runs, the model answers.
func oneToolScript() *scripted.Model {
	return scripted.New(scripted.Reply{ToolCalls: []scripted.Call{{Name: "lookup", Arguments: `{"q":"x"}`}}}, scripted.Reply{Text: "done"})
}

func newRunner(b *testing.B, agents []*cairn.Agent, opts *cairn.RunnerOptions) *cairn.Runner {
	b.Helper()
	r, err := cairn.NewRunner(agents, opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.Close() })
	return r
}

func oneAgent(approval bool) []*cairn.Agent {
	return []*cairn.Agent{{Name: "main", Model: oneToolScript(), Tools: []*cairn.Tool{lookupTool(approval)}}}
}

// BenchmarkTurn: one turn in memory: model asks for a tool, the tool runs,
// the model answers.
func BenchmarkTurn(b *testing.B) {
	ctx := context.Background()
	r := newRunner(b, oneAgent(false), nil)
	b.ReportAllocs()
	for b.Loop() {
		if s, err := r.Start(ctx, "main", "go", nil); err != nil || s.Status != cairn.StatusCompleted {
			b.Fatal(err, s)
		}
	}
}

func pauseResume(b *testing.B, r *cairn.Runner, agent string) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		s, err := r.Start(ctx, agent, "go", nil)
		if err != nil || s.Status != cairn.StatusPaused {
			b.Fatal(err, s)
		}
		s, err = r.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove}}, nil)
		if err != nil || s.Status != cairn.StatusCompleted {
			b.Fatal(err, s)
		}
	}
}

// BenchmarkPauseResume: a turn that pauses for approval, the approval, and
// the rest of the turn; in memory and on durable stores.
func BenchmarkPauseResume(b *testing.B) {
	b.Run("store=memory", func(b *testing.B) {
		pauseResume(b, newRunner(b, oneAgent(true), nil), "main")
	})
	for _, sync := range []string{"full", "normal"} {
		b.Run("store=sqlite-"+sync, func(b *testing.B) {
			st, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "bench.db")+"?synchronous="+sync)
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			pauseResume(b, newRunner(b, oneAgent(true), &cairn.RunnerOptions{Store: st}), "main")
		})
	}
	// As cairn serve runs: every pause and turn's end signs a checkpoint
	// (docs/audit.md), two Ed25519 signatures a cycle.
	b.Run("store=sqlite-normal-signed", func(b *testing.B) {
		st, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "bench.db")+"?synchronous=normal")
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		key, err := audit.StoreKey(context.Background(), st)
		if err != nil {
			b.Fatal(err)
		}
		pauseResume(b, newRunner(b, oneAgent(true), &cairn.RunnerOptions{Store: st, Signer: key}), "main")
	})
	b.Run("store=postgres", func(b *testing.B) {
		url := os.Getenv("CAIRN_TEST_POSTGRES")
		if url == "" {
			b.Skip("CAIRN_TEST_POSTGRES is not set (eval \"$(.ci/postgres start)\")")
		}
		st, err := postgres.Open(context.Background(), url)
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		pauseResume(b, newRunner(b, oneAgent(true), &cairn.RunnerOptions{Store: st}), "main")
	})
}

// BenchmarkNestedPauseResume: depth 2: the parent calls an agent as a tool,
// whose gated tool pauses the session; approving runs it inside the child,
// the child answers, the parent answers.
func BenchmarkNestedPauseResume(b *testing.B) {
	parent := scripted.New(scripted.Reply{ToolCalls: []scripted.Call{{Name: "ask_child", Arguments: `{"input":"go"}`}}}, scripted.Reply{Text: "done"})
	r := newRunner(b, []*cairn.Agent{
		{Name: "parent", Model: parent, Tools: []*cairn.Tool{cairn.AgentTool("child", &cairn.Tool{Name: "ask_child", Description: "Child."})}},
		{Name: "child", Model: oneToolScript(), Tools: []*cairn.Tool{lookupTool(true)}},
	}, nil)
	pauseResume(b, r, "parent")
}

// history returns a paused session's events with about n messages.
// Its messages are a dozen words or so drawn at random (fixed seed) from
// common English words, so compression sees text, not one repeated line.
func history(b *testing.B, n int) []cairn.Event {
	ctx := context.Background()
	st := store.NewMemory()
	rng := rand.New(rand.NewPCG(1, 2))
	words := strings.Fields(`the of and to in is you that it he was for on are as with his they at be
		this have from or one had by word but not what all were we when your can said there use an each
		which she do how their if will up other about out many then them these so some her would make like
		him into time has look two more write go see number no way could people my than first water been
		call who oil its now find long down day did get come made may part deploy server approve release
		build check status report order invoice payment refund customer account ticket queue schedule`)
	text := func() string {
		n := 8 + rng.IntN(10)
		out := make([]string, n)
		for i := range out {
			out[i] = words[rng.IntN(len(words))]
		}
		return strings.Join(out, " ") + "."
	}
	m := model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		if len(req.Messages) >= n {
			return &model.Response{Message: model.Message{ToolCalls: []model.ToolCall{{ID: "c", Name: "lookup", Arguments: `{"q":"x"}`}}}}, nil
		}
		return &model.Response{Message: model.Message{Content: text()}}, nil
	})
	r := newRunner(b, []*cairn.Agent{{Name: "main", Model: m, Tools: []*cairn.Tool{lookupTool(true)}}}, &cairn.RunnerOptions{Store: st})
	s, err := r.Start(ctx, "main", text(), nil)
	for err == nil && s.Status != cairn.StatusPaused {
		s, err = r.Send(ctx, s.ID, text(), 0, nil)
	}
	if err != nil {
		b.Fatal(err)
	}
	evs, err := st.Events(ctx, s.ID, 0)
	if err != nil {
		b.Fatal(err)
	}
	return evs
}

// BenchmarkContinuation: the round trip of a stateless continuation token
// of a paused session with 10, 100 and 1,000 messages: the state encoded,
// compressed and signed, then verified, decoded and loaded, as Invoke and
// Continue do ("format=v2"); "format=v1" is the earlier token (the whole
// log, uncompressed, replayed) for comparison.
func BenchmarkContinuation(b *testing.B) {
	codec, err := cairn.NewCodec([]byte(strings.Repeat("k", 32)))
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{10, 100, 1000} {
		evs := history(b, n)
		paused, err := engine.Replay(evs)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("messages=%d/format=v2", n), func(b *testing.B) {
			b.ReportAllocs()
			size := 0
			for b.Loop() {
				snap, err := engine.Snapshot(paused)
				if err != nil {
					b.Fatal(err)
				}
				tok, err := codec.Encode(&cairn.Continuation{Agent: "main", Snapshot: snap})
				if err != nil {
					b.Fatal(err)
				}
				cont, err := codec.Decode(tok)
				if err != nil {
					b.Fatal(err)
				}
				if _, _, err := engine.Restore(cont.Snapshot, nil, nil); err != nil {
					b.Fatal(err)
				}
				size = len(tok)
			}
			b.ReportMetric(float64(size), "token-bytes")
		})
		b.Run(fmt.Sprintf("messages=%d/format=v1", n), func(b *testing.B) {
			b.ReportAllocs()
			size := 0
			for b.Loop() {
				tok, err := v1Token(&cairn.Continuation{ID: "tok_x", Agent: "main", Events: evs})
				if err != nil {
					b.Fatal(err)
				}
				cont, err := codec.Decode(tok)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := engine.Replay(cont.Events); err != nil {
					b.Fatal(err)
				}
				size = len(tok)
			}
			b.ReportMetric(float64(size), "token-bytes")
		})
	}
}

// v1Token signs a continuation in the version 1 format (uncompressed JSON).
func v1Token(c *cairn.Continuation) (string, error) {
	key := []byte(strings.Repeat("k", 32))
	h := sha256.Sum256(append([]byte("cairn-kid:"), key...))
	c.KeyID = hex.EncodeToString(h[:4])
	payload, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	signed := "cairn.v1." + base64.RawURLEncoding.EncodeToString(payload)
	m := hmac.New(sha256.New, key)
	m.Write([]byte(signed))
	return signed + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil)), nil
}

// countingStore counts the bytes each Append writes (events and head).
type countingStore struct {
	store.Store
	bytes  atomic.Int64
	events atomic.Int64 // of which the events' data
}

// countingBlobs is a countingStore that keeps its store's Blobs, so the
// runner writes chunked snapshots through it.
type countingBlobs struct {
	*countingStore
	store.Blobs
}

func counting(st store.Store) (*countingStore, store.Store) {
	c := &countingStore{Store: st}
	if b, ok := st.(store.Blobs); ok {
		return c, countingBlobs{c, b}
	}
	return c, c
}

func (c *countingStore) Append(ctx context.Context, h store.Head, expected int64, evs []session.Event) error {
	n := len(h.Summary) + len(h.Snapshot)
	for _, b := range h.Blobs {
		n += len(b.Key) + len(b.Data)
	}
	for _, e := range evs {
		n += len(e.Data) + len(e.Type) + len(e.Frame) + len(e.Agent) + 16
		c.events.Add(int64(len(e.Data)))
	}
	c.bytes.Add(int64(n))
	return c.Store.Append(ctx, h, expected, evs)
}

// BenchmarkStepByHistory: one turn (user message → model → tool → model)
// on a real SQLite file for sessions with 10, 100 and 1,000 messages of
// history: bytes written per step (snapshots included) and time per step,
// with the runner's state cache ("cached") and without it ("cold", as after
// a restart: the latest snapshot and the log after it are read). Steps
// rotate over 25 prepared sessions, so history grows little while measuring;
// run with -benchtime 50x.
func BenchmarkStepByHistory(b *testing.B) {
	b.Run("cached", func(b *testing.B) { stepByHistory(b, 0) })
	b.Run("cold", func(b *testing.B) { stepByHistory(b, -1) })
}

func stepByHistory(b *testing.B, cached int) {
	const sessions = 25
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("messages=%d", n), func(b *testing.B) {
			ctx := context.Background()
			sq, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "bench.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer sq.Close()
			cs, through := counting(sq)
			r := newRunner(b, oneAgent(false), &cairn.RunnerOptions{Store: through, CachedSessions: cached})
			ids := make([]string, sessions)
			for i := range ids {
				s, err := r.Start(ctx, "main", "go", nil)
				if err != nil {
					b.Fatal(err)
				}
				for len := 4; len < n; len += 4 { // each turn adds 4 messages
					if s, err = r.Send(ctx, s.ID, "again, with a message of ordinary length", 0, nil); err != nil {
						b.Fatal(err)
					}
				}
				ids[i] = s.ID
			}
			cs.bytes.Store(0)
			b.ReportAllocs()
			b.ResetTimer()
			i := 0
			for b.Loop() {
				if _, err := r.Send(ctx, ids[i%sessions], "again, with a message of ordinary length", 0, nil); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric(float64(cs.bytes.Load())/float64(b.N), "bytes/step")
		})
	}
}

// BenchmarkHTTP: whole sessions over HTTP on loopback: POST /v1/sessions
// (the model, a fake OpenAI server on 127.0.0.1 reached through the
// official SDK, asks for a gated tool: the session pauses), then POST
// …/decisions (the tool runs, the model answers: completed). SQLite store.
// Reports sessions per second at 1, 8 and 64 concurrent clients. Client,
// fake model and server share one process and there are no percentiles:
// it is a harness for CPU profiles of the whole path (-cpuprofile), not a
// throughput figure; bench/load measures that, with a separate server.
func BenchmarkHTTP(b *testing.B) {
	for _, clients := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			fake := fakeopenai.Start(b, func(r fakeopenai.Request) fakeopenai.Reply {
				if r.Messages[len(r.Messages)-1].Role == "tool" {
					return fakeopenai.Reply{Content: "done"}
				}
				return fakeopenai.Reply{ToolCalls: []fakeopenai.Call{{ID: "call_1", Name: "lookup", Arguments: `{"q":"x"}`}}}
			})
			st, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "bench.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			m := openai.New("m", &openai.Options{BaseURL: fake.BaseURL(), APIKey: "k"})
			r := newRunner(b, []*cairn.Agent{{Name: "main", Model: m, Tools: []*cairn.Tool{lookupTool(true)}}}, &cairn.RunnerOptions{Store: st})
			srv := httptest.NewServer(server.New(r, nil))
			defer srv.Close()
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
			post := func(path, body string, out any) error {
				resp, err := client.Post(srv.URL+path, "application/json", strings.NewReader(body))
				if err != nil {
					return err
				}
				defer resp.Body.Close()
				if resp.StatusCode >= 300 {
					return fmt.Errorf("%s: HTTP %d", path, resp.StatusCode)
				}
				return json.NewDecoder(resp.Body).Decode(out)
			}
			var next atomic.Int64
			var wg sync.WaitGroup
			errs := make(chan error, clients)
			b.ResetTimer()
			start := time.Now()
			for range clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for next.Add(1) <= int64(b.N) {
						var s cairn.Session
						if err := post("/v1/sessions", `{"agent":"main","input":"go"}`, &s); err != nil {
							errs <- err
							return
						}
						body := fmt.Sprintf(`{"seq":%d,"decisions":[{"interrupt_id":%q,"action":"approve"}]}`, s.Seq, s.Interrupts[0].ID)
						if err := post("/v1/sessions/"+s.ID+"/decisions", body, &s); err != nil || s.Status != cairn.StatusCompleted {
							errs <- fmt.Errorf("decide: %v %s", err, s.Status)
							return
						}
					}
				}()
			}
			wg.Wait()
			elapsed := time.Since(start)
			close(errs)
			for err := range errs {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "sessions/s")
		})
	}
}

// BenchmarkColdResume: a paused session with 10, 1,000 and 10,000 messages
// of history is resumed (the approval, the tool, the model's answer) and
// paused again by the next message, by a runner that keeps no state in
// memory ("cold", as after a restart, an eviction or on another replica:
// the latest snapshot and the events after it are read and decoded) and by
// one that does ("warm"). state-read-ns is the state read alone (the
// latest snapshot and the message chunks it names, read and decoded: what
// any load costs before replaying) and tail-events the events replayed
// after the snapshot; written/event-byte is what building the histories
// wrote (snapshots included) per byte of event data. Each op is a whole cycle (two loads when cold); sessions
// rotate so history grows little: run with -benchtime 100x.
func BenchmarkColdResume(b *testing.B) {
	for _, backend := range []string{"memory", "sqlite"} {
		for _, n := range []int{10, 1000, 10000} {
			for _, mode := range []string{"warm", "cold"} {
				b.Run(fmt.Sprintf("store=%s/messages=%d/%s", backend, n, mode), func(b *testing.B) {
					coldResume(b, backend, n, mode == "cold")
				})
			}
		}
	}
}

// cycleModel asks for the gated tool after a user message and answers
// after its result, so every message pauses and every approval completes.
var cycleModel = model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
	if req.Messages[len(req.Messages)-1].Role == model.RoleTool {
		return &model.Response{Message: model.Message{Content: "an answer of ordinary length, about a dozen words or so."}}, nil
	}
	return &model.Response{Message: model.Message{ToolCalls: []model.ToolCall{{ID: "c", Name: "lookup", Arguments: `{"q":"x"}`}}}}, nil
})

func coldResume(b *testing.B, backend string, n int, cold bool) {
	sessions := max(4, 1000/n) // short histories: more of them, so they stay short
	ctx := context.Background()
	var st store.Store = store.NewMemory()
	if backend == "sqlite" {
		sq, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "bench.db")+"?synchronous=normal")
		if err != nil {
			b.Fatal(err)
		}
		defer sq.Close()
		st = sq
	}
	agents := []*cairn.Agent{{Name: "main", Model: cycleModel, Tools: []*cairn.Tool{lookupTool(true)}}}
	const msg = "a user message of ordinary length, a dozen words or so."
	cycle := func(r *cairn.Runner, s *cairn.Session) *cairn.Session {
		s, err := r.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove}}, nil)
		if err == nil {
			s, err = r.Send(ctx, s.ID, msg, s.Seq, nil)
		}
		if err != nil || s.Status != cairn.StatusPaused {
			b.Fatal(err, s)
		}
		return s
	}
	// Build the histories with a caching runner, then measure with another.
	counted, through := counting(st)
	build := newRunner(b, agents, &cairn.RunnerOptions{Store: through})
	paused := make([]*cairn.Session, sessions)
	for i := range paused {
		s, err := build.Start(ctx, "main", msg, nil)
		if err != nil {
			b.Fatal(err)
		}
		for range n / 4 { // a cycle adds 4 messages
			s = cycle(build, s)
		}
		paused[i] = s
	}
	build.Close()
	opts := &cairn.RunnerOptions{Store: st}
	if cold {
		opts.CachedSessions = -1
	}
	r := newRunner(b, agents, opts)
	// The state read: what loading a session costs before any replay, the
	// latest snapshot and the chunks it names, read and decoded.
	var readNs, tail int64
	for _, s := range paused {
		start := time.Now()
		seq, snap, err := st.LatestSnapshot(ctx, s.ID)
		switch {
		case errors.Is(err, store.ErrNotFound): // short: no snapshot yet
		case err != nil:
			b.Fatal(err)
		default:
			chunks := func(keys []string) ([][]byte, error) { return st.(store.Blobs).GetBlobs(ctx, keys) }
			if _, _, err := engine.Restore(snap, chunks, nil); err != nil {
				b.Fatal(err)
			}
		}
		readNs += time.Since(start).Nanoseconds()
		evs, err := st.Events(ctx, s.ID, seq)
		if err != nil {
			b.Fatal(err)
		}
		tail += int64(len(evs))
	}
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		paused[i%sessions] = cycle(r, paused[i%sessions])
		i++
	}
	b.ReportMetric(float64(readNs)/float64(sessions), "state-read-ns")
	b.ReportMetric(float64(tail)/float64(sessions), "tail-events")
	// Everything written to build the histories (events, heads, snapshots
	// and their chunks) per byte of event data.
	b.ReportMetric(float64(counted.bytes.Load())/float64(counted.events.Load()), "written/event-byte")
}
