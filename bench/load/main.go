// Command load is Cairn's HTTP load benchmark: a load generator in this
// process against `cairn serve` in another, for a fixed time, at several
// client counts and stores. Each client loops over whole sessions:
// POST /v1/sessions (a scripted model asks for a gated tool: the session
// pauses), then POST …/decisions (the tool runs, the model answers:
// completed). It prints sessions per second, latency percentiles of a
// whole session, and what the server wrote: bytes and write syscalls from
// /proc/PID/io, and the growth of the database files.
//
//	go run ./bench/load                                   # every store, 1/8/64/256 clients, 3 s, medians of 3
//	go run ./bench/load -stores sqlite-full -clients 64 -runs 5
//
// postgres needs CAIRN_TEST_POSTGRES (bench/run.sh starts a throwaway one).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cairnhq/cairn/bench/internal/benchproc"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(1)
	}
}

type options struct {
	stores   []string
	clients  []int
	duration time.Duration
	warmup   time.Duration
	runs     int
	binary   string
}

func run() error {
	var o options
	stores := flag.String("stores", "memory,sqlite-full,sqlite-normal,postgres", "stores to measure: memory, sqlite-full, sqlite-normal, postgres")
	clients := flag.String("clients", "1,8,64,256", "concurrent clients, comma separated")
	flag.DurationVar(&o.duration, "duration", 3*time.Second, "how long each measurement runs")
	flag.DurationVar(&o.warmup, "warmup", time.Second, "load before each measurement, not counted")
	flag.IntVar(&o.runs, "runs", 3, "measurements per cell (the table shows medians)")
	flag.StringVar(&o.binary, "cairn", "", "the cairn binary (default: go build ./cmd/cairn)")
	flag.Parse()
	o.stores = strings.Split(*stores, ",")
	var err error
	if o.clients, err = benchproc.Counts("clients", *clients); err != nil {
		return err
	}
	if o.binary == "" {
		dir, err := os.MkdirTemp("", "cairn-load")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		if o.binary, err = benchproc.BuildCairn(dir); err != nil {
			return err
		}
	}
	fmt.Printf("machine: %d cores; %s for %s after %s of warm-up, medians of %d\n\n", runtime.NumCPU(), "each cell", o.duration, o.warmup, o.runs)
	fmt.Println("| store | clients | sessions/s | p50 | p99 | p99.9 | written per session (bytes, write syscalls) | file growth per session |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	for _, st := range o.stores {
		if st == "postgres" && os.Getenv("CAIRN_TEST_POSTGRES") == "" {
			fmt.Printf("| postgres | – | skipped: set CAIRN_TEST_POSTGRES | | | | | |\n")
			continue
		}
		for _, c := range o.clients {
			var cells []cell
			for range o.runs {
				res, err := measure(o, st, c)
				if err != nil {
					return fmt.Errorf("%s, %d clients: %w", st, c, err)
				}
				cells = append(cells, res)
			}
			m := median(cells)
			fmt.Printf("| %s | %d | %.0f | %s | %s | %s | %.0f B, %.1f | %s |\n", st, c, m.rate, ms(m.p50), ms(m.p99), ms(m.p999),
				m.wrote, m.syscalls, growth(m.growth))
		}
	}
	return nil
}

// cell is one measurement.
type cell struct {
	rate            float64 // sessions per second
	p50, p99, p999  time.Duration
	wrote, syscalls float64 // per session, from /proc/PID/io
	growth          float64 // database files' growth per session (-1: not a file)
}

func median(cs []cell) cell {
	pick := func(f func(cell) float64) float64 {
		v := make([]float64, len(cs))
		for i, c := range cs {
			v[i] = f(c)
		}
		return benchproc.Median(v)
	}
	return cell{
		rate:  pick(func(c cell) float64 { return c.rate }),
		p50:   time.Duration(pick(func(c cell) float64 { return float64(c.p50) })),
		p99:   time.Duration(pick(func(c cell) float64 { return float64(c.p99) })),
		p999:  time.Duration(pick(func(c cell) float64 { return float64(c.p999) })),
		wrote: pick(func(c cell) float64 { return c.wrote }), syscalls: pick(func(c cell) float64 { return c.syscalls }),
		growth: pick(func(c cell) float64 { return c.growth }),
	}
}

const config = `
store: %s
models:
  demo:
    provider: scripted
    script:
      - tool_calls: [{name: lookup, arguments: {q: x}}]
      - text: "done"
tools:
  lookup: {builtin: echo, approval: always, parameters: {type: object, properties: {q: {type: string}}}}
agents:
  main: {model: demo, tools: [lookup]}
`

// measure starts a fresh server on a fresh store and drives it.
func measure(o options, storeName string, clients int) (cell, error) {
	dir, err := os.MkdirTemp("", "cairn-load-run")
	if err != nil {
		return cell{}, err
	}
	defer os.RemoveAll(dir)
	st, err := benchproc.StoreFor(context.Background(), storeName, dir)
	if err != nil {
		return cell{}, err
	}
	defer st.Drop()
	cfg := filepath.Join(dir, "cairn.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(config, st.URL)), 0o600); err != nil {
		return cell{}, err
	}
	srv, err := benchproc.Start(o.binary, "serve", "--config", cfg, "--addr", "127.0.0.1:0")
	if err != nil {
		return cell{}, err
	}
	defer srv.Stop()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}}
	if _, err := drive(client, srv.URL, clients, o.warmup); err != nil {
		return cell{}, fmt.Errorf("warm-up: %w", err)
	}
	pid := srv.Cmd.Process.Pid
	c0, size0 := benchproc.Read(pid), benchproc.Size(st.Files)
	lat, err := drive(client, srv.URL, clients, o.duration)
	if err != nil {
		return cell{}, err
	}
	used, size1 := benchproc.Read(pid).Sub(c0), benchproc.Size(st.Files)
	n := float64(len(lat))
	if n == 0 {
		return cell{}, errors.New("no session completed")
	}
	slices.Sort(lat)
	q := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	c := cell{rate: n / o.duration.Seconds(), p50: q(0.50), p99: q(0.99), p999: q(0.999),
		wrote: float64(used.WrittenBytes) / n, syscalls: float64(used.WriteCalls) / n, growth: -1}
	if st.Files != nil {
		c.growth = float64(size1-size0) / n
	}
	return c, nil
}

// drive runs clients in a loop for d and returns each session's latency.
func drive(client *http.Client, url string, clients int, d time.Duration) ([]time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var mu sync.Mutex
	var all []time.Duration
	var firstErr error
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for ctx.Err() == nil {
				t0 := time.Now()
				if err := session(client, url); err != nil {
					mu.Lock()
					firstErr = cmpErr(firstErr, err)
					mu.Unlock()
					return
				}
				if ctx.Err() == nil {
					mine = append(mine, time.Since(t0))
				}
			}
			mu.Lock()
			all = append(all, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return all, firstErr
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// session is one whole session: create (pauses), decide (completes).
func session(client *http.Client, url string) error {
	var s struct {
		ID         string
		Seq        int64
		Status     string
		Interrupts []struct{ ID string }
	}
	if err := post(client, url+"/v1/sessions", `{"agent":"main","input":"go"}`, &s); err != nil {
		return err
	}
	if s.Status != "paused" || len(s.Interrupts) != 1 {
		return fmt.Errorf("create: status %s", s.Status)
	}
	body := fmt.Sprintf(`{"seq":%d,"decisions":[{"interrupt_id":%q,"action":"approve"}]}`, s.Seq, s.Interrupts[0].ID)
	if err := post(client, url+"/v1/sessions/"+s.ID+"/decisions", body, &s); err != nil {
		return err
	}
	if s.Status != "completed" {
		return fmt.Errorf("decide: status %s", s.Status)
	}
	return nil
}

func post(client *http.Client, url, body string, out any) error {
	resp, err := client.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("%s: HTTP %d %s", url, resp.StatusCode, b)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }

func growth(g float64) string {
	if g < 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f B", g)
}
