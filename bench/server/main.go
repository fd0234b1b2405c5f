// Command server measures Cairn's HTTP server against ADK-Go's REST server
// (google.golang.org/adk/v2 server/adkrest, in-memory sessions) on the same
// whole approval cycle, side by side: one fake model for every system (the
// OpenAI Responses API's wire format, served by this process on 127.0.0.1),
// one load generator (this process), the systems alternated within each
// repetition so that a noisy machine slows them alike.
//
// A cycle is what a person-in-the-loop deployment does: create a session
// whose model asks for a gated tool (the session pauses), approve it (the
// tool runs, the model is called again, the session completes). Over REST
// that is, for Cairn, POST /v1/sessions and POST …/decisions; for ADK,
// POST …/sessions, POST /run (pauses on adk_request_confirmation) and POST
// /run with the confirmation.
//
//	go run ./bench/server                                   # adk, memory, sqlite, postgres at 1/8/64 clients, 6 runs
//	go run ./bench/server -systems adk,memory -clients 64 -runs 3
//	go run ./bench/server -baseline /tmp/cairn-9a95e0c          # and each Cairn store with another build, alternated, compared
//	go run ./bench/server -profile /tmp/prof                # and CPU, allocation and heap profiles of each Cairn system at the most clients
//
// It prints each cell's medians (cycles per second, the server's CPU time
// per cycle from /proc/PID/stat, what it wrote per cycle from /proc/PID/io)
// and the ratios the performance goals name, each the median of the
// ratios of one repetition's side-by-side cells. postgres needs
// CAIRN_TEST_POSTGRES (bench/run.sh starts a throwaway server).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairnhq/cairn/bench/internal/benchproc"
)

func main() {
	if len(os.Args) == 3 && os.Args[1] == serveWireFlag {
		if err := serveWire(os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, "bench/server: the wire relay:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench/server:", err)
		os.Exit(1)
	}
}

type options struct {
	systems  []string
	clients  []int
	runs     int
	duration time.Duration
	warmup   time.Duration
	cairn    string
	baseline string // another cairn binary, measured beside cairn ("memory@base", …)
	adk      string
	profile  string
	modelURL string
	// extra is appended to each Cairn model's config (e.g. "sdk: true").
	extra string
}

// baseSuffix marks a system run with the -baseline binary.
const baseSuffix = "@base"

// systemStores maps a system's name to Cairn's store ("" is ADK).
var systemStores = map[string]string{"adk": "", "wire": "", "memory": "memory", "sqlite": "sqlite-full", "postgres": "postgres"}

func run() error {
	var o options
	systems := flag.String("systems", "adk,memory,sqlite,postgres", "systems to measure: adk, memory, sqlite (synchronous=full), postgres; and wire (a relay with no engine or store: the floor, see wire.go)")
	clients := flag.String("clients", "1,8,64", "concurrent clients, comma separated")
	flag.IntVar(&o.runs, "runs", 6, "repetitions of each cell (the tables show medians)")
	flag.DurationVar(&o.duration, "duration", 3*time.Second, "how long each measurement runs")
	flag.DurationVar(&o.warmup, "warmup", time.Second, "load before each measurement, not counted")
	flag.StringVar(&o.cairn, "cairn", "", "the cairn binary (default: go build ./cmd/cairn)")
	flag.StringVar(&o.adk, "adk", "", "the ADK server binary (default: go build ./adkserver in bench/peers)")
	flag.StringVar(&o.baseline, "baseline", "", "a cairn binary built from a fixed baseline commit: each Cairn store is measured with it too, alternated, and compared")
	flag.StringVar(&o.profile, "profile", "", "a directory: after the table, take CPU, allocation and heap profiles of each Cairn system at the most clients")
	flag.StringVar(&o.extra, "model-config", "", "YAML keys added to Cairn's model (e.g. 'sdk: true')")
	flag.Parse()
	for _, s := range strings.Split(*systems, ",") {
		if _, ok := systemStores[s]; !ok {
			return fmt.Errorf("-systems: unknown %q (adk, wire, memory, sqlite, postgres)", s)
		}
		if s == "postgres" && os.Getenv("CAIRN_TEST_POSTGRES") == "" {
			fmt.Fprintln(os.Stderr, "bench/server: postgres skipped: set CAIRN_TEST_POSTGRES")
			continue
		}
		o.systems = append(o.systems, s)
	}
	if o.baseline != "" {
		for _, s := range o.systems {
			if s != "adk" && s != "wire" && !strings.HasSuffix(s, baseSuffix) {
				o.systems = append(o.systems, s+baseSuffix)
			}
		}
	}
	var err error
	if o.clients, err = benchproc.Counts("clients", *clients); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "cairn-bench-server")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if o.cairn == "" {
		if o.cairn, err = benchproc.BuildCairn(dir); err != nil {
			return err
		}
	}
	if o.adk == "" {
		o.adk = filepath.Join(dir, "adkserver")
		cmd := exec.Command("go", "build", "-o", o.adk, "./adkserver")
		cmd.Dir = "bench/peers"
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build ./adkserver in bench/peers (run from the repository root): %v\n%s", err, out)
		}
	}
	// Cairn's model config names the key's variable; the servers inherit it.
	if err := os.Setenv("BENCH_MODEL_KEY", "bench"); err != nil {
		return err
	}
	fake, err := startModel()
	if err != nil {
		return err
	}
	defer fake.Close()
	o.modelURL = "http://" + fake.Addr().String() + "/v1"

	fmt.Printf("%s · %d cores · %s · each cell %s after %s of warm-up, %d runs alternated; medians\n\n",
		time.Now().UTC().Format("2006-01-02"), runtime.NumCPU(), runtime.Version(), o.duration, o.warmup, o.runs)
	results := map[key][]cell{}
	for _, c := range o.clients {
		for r := range o.runs {
			for _, s := range o.systems {
				res, err := measure(o, s, c, "")
				if err != nil {
					return fmt.Errorf("%s, %d clients, run %d: %w", s, c, r+1, err)
				}
				results[key{s, c}] = append(results[key{s, c}], res)
			}
		}
	}
	printCells(o, results)
	printRatios(o, results)
	if o.profile != "" {
		if err := os.MkdirAll(o.profile, 0o755); err != nil {
			return err
		}
		most := o.clients[len(o.clients)-1]
		for _, s := range o.systems {
			if s == "adk" || strings.HasSuffix(s, baseSuffix) {
				continue
			}
			file := filepath.Join(o.profile, fmt.Sprintf("cpu-%s-%d.pprof", s, most))
			if _, err := measure(o, s, most, file); err != nil {
				return fmt.Errorf("profile of %s: %w", s, err)
			}
			fmt.Printf("\nprofile: go tool pprof -top %s\n", file)
		}
	}
	return nil
}

type key struct {
	system  string
	clients int
}

// cell is one measurement.
type cell struct {
	rate    float64 // cycles per second
	cpu     float64 // the server's CPU seconds per cycle
	wrote   float64 // bytes passed to write calls per cycle (files and sockets)
	calls   float64 // write calls per cycle
	storage float64 // bytes written to storage per cycle
}

func pick(cs []cell, f func(cell) float64) float64 {
	v := make([]float64, len(cs))
	for i, c := range cs {
		v[i] = f(c)
	}
	return benchproc.Median(v)
}

func printCells(o options, results map[key][]cell) {
	fmt.Println("| system | clients | cycles/s | server CPU per cycle | written per cycle (all write calls) | write calls per cycle | to storage per cycle |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for _, s := range o.systems {
		for _, c := range o.clients {
			cs := results[key{s, c}]
			fmt.Printf("| %s | %d | %.0f | %.0f µs | %.1f KB | %.1f | %.1f KB |\n", label(s), c,
				pick(cs, func(c cell) float64 { return c.rate }), pick(cs, func(c cell) float64 { return c.cpu })*1e6,
				pick(cs, func(c cell) float64 { return c.wrote })/1e3, pick(cs, func(c cell) float64 { return c.calls }),
				pick(cs, func(c cell) float64 { return c.storage })/1e3)
		}
	}
	fmt.Println()
}

func label(s string) string {
	if name, ok := strings.CutSuffix(s, baseSuffix); ok {
		return label(name) + ", baseline"
	}
	switch s {
	case "adk":
		return "ADK-Go adkrest, in memory"
	case "wire":
		return "the wire alone (net/http relay, no engine)"
	case "sqlite":
		return "Cairn, SQLite (synchronous=full)"
	case "postgres":
		return "Cairn, PostgreSQL"
	}
	return "Cairn, in memory"
}

// ratio is one row of the ratio table: a÷b of a measure, and its goal.
type ratio struct {
	name    string
	a, b    string
	measure func(cell) float64
	goal    func(clients int) (bound float64, atLeast bool)
}

func printRatios(o options, results map[key][]cell) {
	rate := func(c cell) float64 { return c.rate }
	cpu := func(c cell) float64 { return c.cpu }
	atLeast := func(v float64) func(int) (float64, bool) { return func(int) (float64, bool) { return v, true } }
	stored := func(clients int) (float64, bool) {
		if clients == 1 {
			return 0.6, true
		}
		return 1, true
	}
	rows := []ratio{
		{"Cairn in memory ÷ ADK, cycles/s", "memory", "adk", rate, atLeast(3)},
		{"Cairn in memory ÷ ADK, server CPU per cycle", "memory", "adk", cpu, func(int) (float64, bool) { return 0.3, false }},
		{"Cairn on SQLite ÷ ADK in memory, cycles/s", "sqlite", "adk", rate, stored},
		{"Cairn on SQLite ÷ Cairn in memory, CPU per cycle", "sqlite", "memory", cpu, nil},
		{"Cairn on PostgreSQL ÷ ADK in memory, cycles/s", "postgres", "adk", rate, stored},
		{"Cairn on PostgreSQL ÷ Cairn in memory, CPU per cycle", "postgres", "memory", cpu, nil},
		{"the wire alone ÷ ADK, cycles/s (the most any server on net/http reaches)", "wire", "adk", rate, nil},
		{"the wire alone ÷ ADK, server CPU per cycle (the least)", "wire", "adk", cpu, nil},
		{"Cairn in memory ÷ the wire alone, server CPU per cycle", "memory", "wire", cpu, nil},
	}
	wrote := func(c cell) float64 { return c.wrote }
	for _, st := range []struct{ name, system string }{{"in memory", "memory"}, {"on SQLite", "sqlite"}, {"on PostgreSQL", "postgres"}} {
		base := st.system + baseSuffix
		rows = append(rows,
			ratio{"Cairn " + st.name + " ÷ the baseline, cycles/s", st.system, base, rate, nil},
			ratio{"Cairn " + st.name + " ÷ the baseline, server CPU per cycle", st.system, base, cpu, nil})
		if st.system == "sqlite" {
			rows = append(rows, ratio{"Cairn on SQLite ÷ the baseline, bytes written per cycle", st.system, base, wrote, func(int) (float64, bool) { return 0.5, false }})
		}
	}
	head := "| ratio (median of the runs' side-by-side ratios) |"
	line := "|---|"
	for _, c := range o.clients {
		head += fmt.Sprintf(" %d client%s |", c, plural(c))
		line += "---|"
	}
	fmt.Println(head)
	fmt.Println(line)
	for _, r := range rows {
		as, bs := results[key{r.a, o.clients[0]}], results[key{r.b, o.clients[0]}]
		if len(as) == 0 || len(bs) == 0 {
			continue
		}
		row := "| " + r.name + " |"
		for _, c := range o.clients {
			as, bs := results[key{r.a, c}], results[key{r.b, c}]
			var v []float64
			for i := range min(len(as), len(bs)) {
				if d := r.measure(bs[i]); d > 0 {
					v = append(v, r.measure(as[i])/d)
				}
			}
			m := benchproc.Median(v)
			row += fmt.Sprintf(" %.2f×", m)
			if r.goal != nil {
				bound, up := r.goal(c)
				met := (up && m >= bound) || (!up && m <= bound)
				sign := map[bool]string{true: "≥", false: "≤"}[up]
				row += fmt.Sprintf(" (goal %s %.1f: %s)", sign, bound, map[bool]string{true: "met", false: "not met"}[met])
			}
			row += " |"
		}
		fmt.Println(row)
	}
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

const cairnConfig = `
store: %s
models:
  bench:
    provider: openai-responses
    model: bench-model
    base_url: %s
    api_key_env: BENCH_MODEL_KEY
%s
tools:
  lookup: {builtin: echo, approval: always, description: Look up., parameters: {type: object, properties: {q: {type: string}}}}
agents:
  main: {model: bench, instructions: be brief, tools: [lookup]}
`

// measure starts a fresh server of system s and drives it with clients
// for the warm-up and the measurement; with profile set it also takes a
// CPU profile of the measurement into that file.
func measure(o options, s string, clients int, profile string) (cell, error) {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "cairn-bench-server-run")
	if err != nil {
		return cell{}, err
	}
	defer os.RemoveAll(dir)
	var srv *benchproc.Server
	var cycle func(*http.Client, string) error
	switch s {
	case "adk":
		srv, err = benchproc.Start(o.adk, "-model-url", o.modelURL)
		cycle = adkCycle
	case "wire":
		self, serr := os.Executable()
		if serr != nil {
			return cell{}, serr
		}
		srv, err = benchproc.Start(self, serveWireFlag, o.modelURL)
		cycle = cairnCycle
	default:
		binary := o.cairn
		if name, ok := strings.CutSuffix(s, baseSuffix); ok {
			s, binary = name, o.baseline
		}
		st, serr := benchproc.StoreFor(ctx, systemStores[s], dir)
		if serr != nil {
			return cell{}, serr
		}
		defer st.Drop()
		extra := ""
		for _, l := range strings.Split(o.extra, "\n") {
			if strings.TrimSpace(l) != "" {
				extra += "    " + l + "\n"
			}
		}
		cfg := filepath.Join(dir, "cairn.yaml")
		if err := os.WriteFile(cfg, []byte(fmt.Sprintf(cairnConfig, st.URL, o.modelURL, extra)), 0o600); err != nil {
			return cell{}, err
		}
		srv, err = benchproc.Start(binary, "serve", "--config", cfg, "--addr", "127.0.0.1:0")
		cycle = cairnCycle
	}
	if err != nil {
		return cell{}, err
	}
	defer srv.Stop()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}}
	if _, err := drive(client, srv.URL, cycle, clients, o.warmup); err != nil {
		return cell{}, fmt.Errorf("warm-up: %w", err)
	}
	profiled := make(chan error, 1)
	if profile != "" {
		go func() { profiled <- takeProfiles(srv.URL, profile, o.duration) }()
	}
	pid := srv.Cmd.Process.Pid
	c0 := benchproc.Read(pid)
	n, err := drive(client, srv.URL, cycle, clients, o.duration)
	if err != nil {
		return cell{}, err
	}
	used := benchproc.Read(pid).Sub(c0)
	if profile != "" {
		if err := <-profiled; err != nil {
			return cell{}, err
		}
	}
	if n == 0 {
		return cell{}, errors.New("no cycle completed")
	}
	f := float64(n)
	return cell{rate: f / o.duration.Seconds(), cpu: used.CPU / f, wrote: float64(used.WrittenBytes) / f,
		calls: float64(used.WriteCalls) / f, storage: float64(used.StorageBytes) / f}, nil
}

// takeProfiles takes a CPU profile and a profile of the allocations of
// the next d, side by side, into file and file with "cpu" replaced by
// "allocs", and then one of the heap ("heap").
func takeProfiles(url, file string, d time.Duration) error {
	secs := max(1, int(d.Seconds()))
	errs := make(chan error, 2)
	for _, p := range []struct{ kind, file string }{{"profile", file}, {"allocs", strings.Replace(file, "cpu-", "allocs-", 1)}} {
		go func() { errs <- fetchProfile(fmt.Sprintf("%s/debug/pprof/%s?seconds=%d", url, p.kind, secs), p.file) }()
	}
	if err := errors.Join(<-errs, <-errs); err != nil {
		return err
	}
	// What the server holds once the load is over: the store's sessions
	// and the state cache.
	return fetchProfile(url+"/debug/pprof/heap?gc=1", strings.Replace(file, "cpu-", "heap-", 1))
}

func fetchProfile(url, file string) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: HTTP %d", url, resp.StatusCode)
	}
	out, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, resp.Body); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// drive runs clients, each looping over whole cycles, for d and returns
// the number of cycles that completed within it.
func drive(client *http.Client, url string, cycle func(*http.Client, string) error, clients int, d time.Duration) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var done atomic.Int64
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for ctx.Err() == nil {
				if err := cycle(client, url); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
				if ctx.Err() == nil {
					done.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return done.Load(), firstErr
}

// cairnCycle: create (pauses on the gated tool), approve (completes).
func cairnCycle(client *http.Client, url string) error {
	var s struct {
		ID         string
		Seq        int64
		Status     string
		Output     string
		Interrupts []struct{ ID string }
	}
	if err := post(client, url+"/v1/sessions", `{"agent":"main","input":"go"}`, &s); err != nil {
		return err
	}
	if s.Status != "paused" || len(s.Interrupts) != 1 {
		return fmt.Errorf("create: status %s with %d interrupts", s.Status, len(s.Interrupts))
	}
	body := fmt.Sprintf(`{"seq":%d,"decisions":[{"interrupt_id":%q,"action":"approve"}]}`, s.Seq, s.Interrupts[0].ID)
	if err := post(client, url+"/v1/sessions/"+s.ID+"/decisions", body, &s); err != nil {
		return err
	}
	if s.Status != "completed" || s.Output != "done" {
		return fmt.Errorf("decide: status %s, output %q", s.Status, s.Output)
	}
	return nil
}

// adkEvent is what the cycle reads of ADK's events.
type adkEvent struct {
	Content *struct {
		Parts []struct {
			Text         string `json:"text"`
			FunctionCall *struct {
				ID   string `json:"id"`
				Name string `json:"name"`
			} `json:"functionCall"`
		} `json:"parts"`
	} `json:"content"`
}

// adkCycle: create a session, run (pauses on adk_request_confirmation),
// run with the confirmation (completes).
func adkCycle(client *http.Client, url string) error {
	var created struct{ ID string }
	if err := post(client, url+"/apps/main/users/u/sessions", `{}`, &created); err != nil {
		return err
	}
	var events []adkEvent
	run := `{"appName":"main","userId":"u","sessionId":%q,"newMessage":%s}`
	if err := post(client, url+"/run", fmt.Sprintf(run, created.ID, `{"role":"user","parts":[{"text":"go"}]}`), &events); err != nil {
		return err
	}
	confirm := ""
	for _, ev := range events {
		if ev.Content == nil {
			continue
		}
		for _, p := range ev.Content.Parts {
			if p.FunctionCall != nil && p.FunctionCall.Name == "adk_request_confirmation" {
				confirm = p.FunctionCall.ID
			}
		}
	}
	if confirm == "" {
		return fmt.Errorf("run: no adk_request_confirmation in %d events", len(events))
	}
	msg := fmt.Sprintf(`{"role":"user","parts":[{"functionResponse":{"id":%q,"name":"adk_request_confirmation","response":{"confirmed":true}}}]}`, confirm)
	events = nil
	if err := post(client, url+"/run", fmt.Sprintf(run, created.ID, msg), &events); err != nil {
		return err
	}
	text := ""
	for _, ev := range events {
		if ev.Content != nil {
			for _, p := range ev.Content.Parts {
				if p.Text != "" {
					text = p.Text
				}
			}
		}
	}
	if text != "done" {
		return fmt.Errorf("confirmed run: last text %q", text)
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
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("%s: HTTP %d %s", url, resp.StatusCode, b)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// startModel serves the fake model: OpenAI's Responses API, non-streaming.
// A request whose input holds a function_call_output is answered with the
// text "done"; any other with a call of the tool lookup. The bodies are
// shaped as OpenAI sends them (every field of a Response), so that each
// system decodes what it would in production.
func startModel() (net.Listener, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	var n atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/responses", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		id := n.Add(1)
		var output string
		if bytes.Contains(body, []byte(`"function_call_output"`)) {
			output = fmt.Sprintf(`{"id":"msg_%d","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","annotations":[],"logprobs":[],"text":"done"}]}`, id)
		} else {
			output = fmt.Sprintf(`{"id":"fc_%d","type":"function_call","status":"completed","arguments":"{\"q\":\"x\"}","call_id":"call_%d","name":"lookup"}`, id, id)
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("x-request-id", fmt.Sprintf("req_%d", id))
		fmt.Fprintf(w, responseBody, id, time.Now().Unix(), output)
	})
	go func() { _ = http.Serve(ln, mux) }() // ends when the listener closes
	return ln, nil
}

// responseBody is a Response as OpenAI sends it (the model's id, the
// creation time and the output item are filled in).
const responseBody = `{
  "id": "resp_%d",
  "object": "response",
  "created_at": %d,
  "status": "completed",
  "background": false,
  "error": null,
  "incomplete_details": null,
  "instructions": "be brief",
  "max_output_tokens": null,
  "max_tool_calls": null,
  "model": "bench-model-2026-01-01",
  "output": [%s],
  "parallel_tool_calls": true,
  "previous_response_id": null,
  "prompt_cache_key": null,
  "reasoning": {"effort": null, "summary": null},
  "safety_identifier": null,
  "service_tier": "default",
  "store": false,
  "temperature": 1.0,
  "text": {"format": {"type": "text"}, "verbosity": "medium"},
  "tool_choice": "auto",
  "tools": [{"type": "function", "description": "Look up.", "name": "lookup", "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}, "strict": false}],
  "top_logprobs": 0,
  "top_p": 1.0,
  "truncation": "disabled",
  "usage": {"input_tokens": 52, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 9, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 61},
  "user": null,
  "metadata": {}
}`
