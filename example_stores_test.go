package cairn_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/model/scripted"
	"github.com/cairnhq/cairn/store/postgres"
	"github.com/cairnhq/cairn/store/sqlite"
)

// A SQLite file keeps sessions across restarts: a session paused by one
// runner is resumed by another (a restarted process) on the same file.
// Without RunnerOptions.Store, sessions live in memory (store.NewMemory).
func Example_sqlite() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "cairn-example")
	defer os.RemoveAll(dir)
	agents := func() []*cairn.Agent {
		deploy := cairn.NewTool(&cairn.Tool{Name: "deploy", Description: "Deploy.", Approval: cairn.Always()},
			func(ctx context.Context, a struct{}) (string, error) { return "deployed", nil })
		model := scripted.New(
			scripted.Reply{ToolCalls: []scripted.Call{{Name: "deploy", Arguments: `{}`}}},
			scripted.Reply{Text: "{{.LastResult}}"})
		return []*cairn.Agent{{Name: "ops", Model: model, Tools: []*cairn.Tool{deploy}}}
	}

	st, err := sqlite.Open(ctx, filepath.Join(dir, "cairn.db"))
	if err != nil {
		fmt.Println(err)
		return
	}
	first, err := cairn.NewRunner(agents(), &cairn.RunnerOptions{Store: st})
	if err != nil {
		log.Fatal(err)
	}
	s, err := first.Start(ctx, "ops", "deploy", nil)
	if err != nil {
		log.Fatal(err)
	}
	first.Close()
	st.Close()
	fmt.Println(s.Status)

	st, _ = sqlite.Open(ctx, filepath.Join(dir, "cairn.db")) // after a restart
	defer st.Close()
	second, err := cairn.NewRunner(agents(), &cairn.RunnerOptions{Store: st})
	if err != nil {
		log.Fatal(err)
	}
	defer second.Close()
	s, err = second.Resume(ctx, s.ID, s.Seq, []cairn.Decision{{InterruptID: s.Interrupts[0].ID, Action: cairn.ActionApprove}}, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(s.Status, s.Output)
	// Output:
	// paused
	// completed deployed
}

// PostgreSQL lets several processes (cairn serve replicas) share sessions:
// a decision sent to any of them works, and each tool runs once. (Not run:
// it needs a server.)
func Example_postgres() {
	ctx := context.Background()
	st, err := postgres.Open(ctx, os.Getenv("DATABASE_URL")) // postgres://user:pass@host:5432/db
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()
	runner, err := cairn.NewRunner([]*cairn.Agent{{Name: "main", Model: scripted.New(scripted.Reply{Text: "hi"})}},
		&cairn.RunnerOptions{Store: st})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer runner.Close()
}
