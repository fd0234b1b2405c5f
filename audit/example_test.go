package audit_test

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"log"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/audit"
	"github.com/cairnhq/cairn/model/scripted"
	"github.com/cairnhq/cairn/store"
)

// A runner signs a checkpoint at every turn's end; Verify checks every
// session's chain and its checkpoint against the public keys it trusts.
func ExampleVerify() {
	ctx := context.Background()
	_, private, err := ed25519.GenerateKey(nil)
	if err != nil {
		log.Fatal(err)
	}
	key, err := audit.NewKey("k1", private)
	if err != nil {
		log.Fatal(err)
	}
	st := store.NewMemory()
	runner, err := cairn.NewRunner([]*cairn.Agent{{Name: "main", Model: scripted.New(scripted.Reply{Text: "hello"})}},
		&cairn.RunnerOptions{Store: st, Signer: key})
	if err != nil {
		log.Fatal(err)
	}
	defer runner.Close()
	s, err := runner.Start(ctx, "main", "hi", nil)
	if err != nil {
		log.Fatal(err)
	}

	report, err := audit.Verify(ctx, st, audit.Options{Keys: audit.Keys{"k1": key.Public()}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(report.Sessions, "session,", report.Signed, "signed,", len(report.Breaks), "broken")
	state, err := runner.Audit(ctx, s.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(state.VerifiedSeq == s.Seq, state.SignedSeq == s.Seq, state.Checkpoint.Key)
	// Output:
	// 1 session, 1 signed, 0 broken
	// true true k1
}
