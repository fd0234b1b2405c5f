package mcptools_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testkit/check"
	"github.com/cairnhq/cairn/internal/testkit/mcptest"
	"github.com/cairnhq/cairn/mcp/mcptools"
	"github.com/cairnhq/cairn/model/scripted"
)

func connect(t *testing.T, servers ...mcptools.Server) *mcptools.Hub {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h, err := mcptools.Connect(ctx, servers, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

func runner(t *testing.T, m *scripted.Model, tools ...*cairn.Tool) *cairn.Runner {
	t.Helper()
	r, err := cairn.NewRunner([]*cairn.Agent{{Name: "main", Model: m, Tools: tools}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// @modelcontextprotocol/server-filesystem: write_file is destructive by
// its annotations, so it waits for approval and, approved, writes once;
// rejected, nothing is written and the model sees the reason; read_file is
// read-only and runs at once.
func TestFilesystemServerApprovals(t *testing.T) {
	ctx := context.Background()
	sandbox := t.TempDir()
	h := connect(t, mcptools.Server{Name: "fs", Command: []string{mcptest.Server(t, "mcp-server-filesystem"), sandbox}})
	write, read := h.Tool("fs", "write_file", nil), h.Tool("fs", "read_file", nil)
	if write == nil || read == nil || write.Name != "fs__write_file" || write.Approval.IsNever() || !read.Approval.IsNever() || !write.Idempotent {
		t.Fatalf("tools: write %+v, read %+v", write, read)
	}
	if write.Runs != "the tool write_file of the MCP server fs" {
		t.Fatalf("write_file runs %q", write.Runs)
	}
	target := filepath.Join(sandbox, "notes.txt")
	args := `{"path":"` + target + `","content":"hello from cairn"}`
	m := &scripted.Model{Replies: []scripted.Reply{
		{ToolCalls: []scripted.Call{{Name: "fs__write_file", Arguments: args}}},
		{Text: "{{.LastResult}}"},
	}}
	r := runner(t, m, write, read)

	s, err := r.Start(ctx, "main", "write the notes", nil)
	if err != nil || s.Status != cairn.StatusPaused || s.Interrupts[0].Tool != "fs__write_file" {
		t.Fatalf("start: %v %+v", err, s)
	}
	if _, err := os.Stat(target); err == nil {
		t.Fatal("written before the approval")
	}
	s, err = r.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove}}, nil)
	if err != nil || s.Status != cairn.StatusCompleted {
		t.Fatalf("approve: %v %+v", err, s)
	}
	if b, _ := os.ReadFile(target); string(b) != "hello from cairn" {
		t.Fatalf("file = %q", b)
	}

	os.Remove(target)
	s = check.NoErr(t)(r.Start(ctx, "main", "write the notes", nil))
	s, err = r.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionReject, Reason: "not today"}}, nil)
	if err != nil || s.Output != "The user rejected this tool call: not today" {
		t.Fatalf("reject: %v %+v", err, s)
	}
	if _, err := os.Stat(target); err == nil {
		t.Fatal("written after a rejection")
	}

	if err := os.WriteFile(target, []byte("already here"), 0o644); err != nil {
		t.Fatal(err)
	}
	reader := &scripted.Model{Replies: []scripted.Reply{
		{ToolCalls: []scripted.Call{{Name: "fs__read_file", Arguments: `{"path":"` + target + `"}`}}},
		{Text: "{{.LastResult}}"},
	}}
	s, err = runner(t, reader, read).Start(ctx, "main", "read the notes", nil)
	if err != nil || s.Status != cairn.StatusCompleted || !strings.Contains(s.Output, "already here") {
		t.Fatalf("read_file: %v %+v", err, s)
	}
}

// @modelcontextprotocol/server-memory: delete_entities waits for approval,
// create_entities (destructiveHint false) does not.
func TestMemoryServerApprovals(t *testing.T) {
	ctx := context.Background()
	h := connect(t, mcptools.Server{Name: "memory", Command: []string{mcptest.Server(t, "mcp-server-memory")},
		Env: map[string]string{"MEMORY_FILE_PATH": filepath.Join(t.TempDir(), "memory.jsonl")}})
	create, del := h.Tool("memory", "create_entities", nil), h.Tool("memory", "delete_entities", nil)
	m := &scripted.Model{Replies: []scripted.Reply{
		{ToolCalls: []scripted.Call{{Name: "memory__create_entities", Arguments: `{"entities":[{"name":"ana","entityType":"person","observations":["approves deploys"]}]}`}}},
		{ToolCalls: []scripted.Call{{Name: "memory__delete_entities", Arguments: `{"entityNames":["ana"]}`}}},
		{Text: "{{.LastResult}}"},
	}}
	r := runner(t, m, create, del)
	s, err := r.Start(ctx, "main", "remember ana, then forget her", nil)
	if err != nil || s.Status != cairn.StatusPaused || len(s.Interrupts) != 1 || s.Interrupts[0].Tool != "memory__delete_entities" {
		t.Fatalf("create runs, delete waits: %v %+v", err, s)
	}
	s, err = r.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove}}, nil)
	if err != nil || s.Status != cairn.StatusCompleted || !strings.Contains(strings.ToLower(s.Output), "deleted") {
		t.Fatalf("delete: %v %+v", err, s)
	}
}

// A server killed mid-call gives an error result the model sees; the next
// call restarts it and works.
func TestKilledServerRestarts(t *testing.T) {
	ctx := context.Background()
	h := connect(t, mcptools.Server{Name: "everything", Command: []string{mcptest.Server(t, "mcp-server-everything")}})
	slow, echo := h.Tool("everything", "trigger-long-running-operation", nil), h.Tool("everything", "echo", nil)
	if slow == nil || echo == nil {
		t.Fatalf("tools: %v", h.ToolNames("everything"))
	}
	done := make(chan struct{})
	var result string
	var callErr error
	go func() {
		defer close(done)
		result, callErr = slow.Handler(ctx, []byte(`{"duration":20,"steps":20}`))
	}()
	time.Sleep(500 * time.Millisecond) // elapsed time: the 20-step operation is under way when its server dies
	pid := h.Pid("everything")
	if pid == 0 {
		t.Fatal("no server process")
	}
	syscall.Kill(-pid, syscall.SIGKILL)
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("the call did not end when its server died")
	}
	if callErr == nil {
		t.Fatalf("a killed server gave a result: %q", result)
	}
	out, err := echo.Handler(ctx, []byte(`{"message":"back"}`))
	if err != nil || !strings.Contains(out, "back") || h.Pid("everything") == pid {
		t.Fatalf("after the restart: %q %v (pid %d → %d)", out, err, pid, h.Pid("everything"))
	}
}
