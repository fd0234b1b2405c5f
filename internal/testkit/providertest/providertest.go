// Package providertest holds what the tests of the model adapters share:
// removing the kept provider data from a stored session (to show that a
// provider then refuses the follow-up), and reading a streamed turn's
// deltas.
package providertest

import (
	"context"
	"database/sql"
	"encoding/json"
	"testing"

	_ "modernc.org/sqlite" // the driver of the SQLite file the tests edit

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/session"
)

// StripProviderData removes message.provider_data from every stored
// model_response of the SQLite store at path, and its snapshots, as a store
// that dropped the field would; it returns how many events it changed.
func StripProviderData(t testing.TB, path string) int64 {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	res, err := db.Exec(`UPDATE events SET data = json_remove(data, '$.message.provider_data') WHERE type = 'model_response' AND json_extract(data, '$.message.provider_data') IS NOT NULL`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`DELETE FROM snapshots`); err != nil {
		t.Fatal(err)
	}
	n, _ := res.RowsAffected()
	return n
}

// Streamed starts agent on r with input and returns the session and the
// text deltas its turn streamed, in order.
func Streamed(ctx context.Context, r *cairn.Runner, agent, input string) (*cairn.Session, []string, error) {
	var deltas []string
	s, err := r.Start(ctx, agent, input, &cairn.StartOptions{Observe: func(ev cairn.Event) {
		if ev.Type != session.EventModelDelta {
			return
		}
		var d session.ModelDelta
		if json.Unmarshal(ev.Data, &d) == nil {
			deltas = append(deltas, d.Text)
		}
	}})
	return s, deltas, err
}
