// Package benchproc is what Cairn's load harnesses (bench/load,
// bench/server) share: servers started as processes, what the kernel
// counts for them (/proc/PID/io, /proc/PID/stat), the stores a cell runs
// on, and medians.
package benchproc

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// Server is a server process under measurement.
type Server struct {
	Cmd *exec.Cmd
	URL string // http://127.0.0.1:PORT
}

var listening = regexp.MustCompile(`listening on (http://\S+)$`)

// Start starts a server that prints "listening on http://ADDR" on stderr
// once it accepts requests (cairn serve, bench/peers/adkserver) and returns
// it then.
func Start(name string, args ...string) (*Server, error) {
	cmd := exec.Command(name, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(stderr)
	var last string
	for sc.Scan() {
		last = sc.Text()
		if m := listening.FindStringSubmatch(last); m != nil {
			go func() { _, _ = io.Copy(io.Discard, stderr) }() // drained so the server never blocks on it
			return &Server{Cmd: cmd, URL: m[1]}, nil
		}
	}
	return nil, fmt.Errorf("%s exited before listening: %v (last line: %q)", filepath.Base(name), cmd.Wait(), last)
}

// Stop ends the server (SIGTERM) and waits for it.
func (s *Server) Stop() {
	_ = s.Cmd.Process.Signal(syscall.SIGTERM) // it may have exited already
	_ = s.Cmd.Wait()                          // a signal's exit status is expected
}

// Counters are what the kernel counted for a process so far.
type Counters struct {
	WriteCalls   int64   // write system calls (syscw): files and sockets
	WrittenBytes int64   // bytes passed to write calls (wchar): files and sockets
	StorageBytes int64   // bytes the process caused to be written to storage (write_bytes)
	CPU          float64 // user + system CPU seconds
}

// Sub returns c − o.
func (c Counters) Sub(o Counters) Counters {
	return Counters{c.WriteCalls - o.WriteCalls, c.WrittenBytes - o.WrittenBytes, c.StorageBytes - o.StorageBytes, c.CPU - o.CPU}
}

// Read reads a process's counters from /proc (zero where unreadable).
func Read(pid int) Counters {
	var c Counters
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid)); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			k, v, _ := strings.Cut(line, ": ")
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			switch k {
			case "syscw":
				c.WriteCalls = n
			case "wchar":
				c.WrittenBytes = n
			case "write_bytes":
				c.StorageBytes = n
			}
		}
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		// The command name may hold spaces: the fields start after its ')'.
		if i := strings.LastIndexByte(string(b), ')'); i > 0 {
			f := strings.Fields(string(b[i+1:]))
			if len(f) > 12 {
				utime, _ := strconv.ParseInt(f[11], 10, 64)
				stime, _ := strconv.ParseInt(f[12], 10, 64)
				c.CPU = float64(utime+stime) / clockTicks
			}
		}
	}
	return c
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat's times: 100 on every
// Linux architecture Go supports.
const clockTicks = 100

// Store is a store a cell runs on.
type Store struct {
	URL   string   // the store: URL cairn serve takes
	Files []string // the files it writes (SQLite)
	Drop  func()   // removes it (PostgreSQL: the cell's database)
}

// StoreNames are the stores StoreFor knows.
const StoreNames = "memory, sqlite-full, sqlite-normal, postgres"

// StoreFor returns a fresh store named name in dir. postgres makes a
// database per cell on CAIRN_TEST_POSTGRES, dropped after it, so that later
// cells do not run on a cluster full of earlier ones.
func StoreFor(ctx context.Context, name, dir string) (Store, error) {
	db := filepath.Join(dir, "cairn.db")
	files := []string{db, db + "-wal", db + "-shm"}
	none := func() {}
	switch name {
	case "memory":
		return Store{URL: "memory", Drop: none}, nil
	case "sqlite-full":
		return Store{URL: "sqlite:" + db, Files: files, Drop: none}, nil
	case "sqlite-normal":
		return Store{URL: "sqlite:" + db + "?synchronous=normal", Files: files, Drop: none}, nil
	case "postgres":
		admin := os.Getenv("CAIRN_TEST_POSTGRES")
		if admin == "" {
			return Store{}, fmt.Errorf("postgres needs CAIRN_TEST_POSTGRES (bench/run.sh starts a throwaway server)")
		}
		conn, err := pgx.Connect(ctx, admin)
		if err != nil {
			return Store{}, err
		}
		defer conn.Close(ctx)
		dbName := fmt.Sprintf("cairn_bench_%d_%d", os.Getpid(), time.Now().UnixNano())
		if _, err := conn.Exec(ctx, "CREATE DATABASE "+dbName); err != nil {
			return Store{}, err
		}
		drop := func() {
			if c, err := pgx.Connect(ctx, admin); err == nil {
				_, _ = c.Exec(ctx, "DROP DATABASE IF EXISTS "+dbName+" WITH (FORCE)") // best effort: the run is over
				c.Close(ctx)
			}
		}
		cfg, err := pgx.ParseConfig(admin)
		if err != nil {
			return Store{}, err
		}
		return Store{URL: fmt.Sprintf("postgres://%s@%s:%d/%s?sslmode=disable", cfg.User, cfg.Host, cfg.Port, dbName), Drop: drop}, nil
	}
	return Store{}, fmt.Errorf("unknown store %q (%s)", name, StoreNames)
}

// Size is the summed size of files (missing ones count 0).
func Size(files []string) int64 {
	var n int64
	for _, f := range files {
		if fi, err := os.Stat(f); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// Median is the median of vs (the upper one of an even count); 0 for none.
func Median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	return s[len(s)/2]
}

// BuildCairn builds ./cmd/cairn (run from the repository root) into dir.
func BuildCairn(dir string) (string, error) {
	bin := filepath.Join(dir, "cairn")
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/cairn").CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/cairn (run from the repository root): %v\n%s", err, out)
	}
	return bin, nil
}

// Counts parses a -clients flag: positive numbers, comma separated.
func Counts(flag, list string) ([]int, error) {
	var out []int
	for _, c := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(c))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-%s: %q is not a positive number", flag, c)
		}
		out = append(out, n)
	}
	return out, nil
}
