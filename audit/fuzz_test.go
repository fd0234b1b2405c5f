package audit_test

import (
	"strings"
	"testing"

	"github.com/cairnhq/cairn/audit"
	"github.com/cairnhq/cairn/store"
)

// An export is untrusted input: any bytes give a report or an error
// naming a line, never a panic.
func FuzzVerifyExport(f *testing.F) {
	f.Add(`{"kind":"key","id":"k1","public_key":"MCowBQYDK2VwAyEA"}` + "\n" + `{"kind":"session","id":"s","seq":1}` + "\n" +
		`{"kind":"event","session":"s","seq":1,"type":"user_message","time_us":1,"frame":"","agent":"a","data":"{}","hash":"x","prev":""}`)
	f.Add(`{"kind":"tombstone","id":"s","seq":3,"purged_at":"2026-11-28T12:00:00Z","checkpoint":{"seq":3,"hash":"h","at_us":5,"key":"k","sig":"!!"}}`)
	f.Add(`{"kind":"event","session":"s"}`)
	f.Fuzz(func(t *testing.T, export string) {
		rep, _, err := audit.VerifyExport(strings.NewReader(export), nil)
		// At most one break per session or tombstone, each naming one.
		if err == nil && (len(rep.Breaks) > rep.Sessions+rep.Tombstones || rep.Signed+rep.Unsigned > rep.Sessions) {
			t.Fatalf("%+v", rep)
		}
	})
}

// A stored checkpoint column is untrusted too: it decodes, or is
// ErrUnreadable, and what decodes encodes back to itself.
func FuzzDecodeCheckpoint(f *testing.F) {
	f.Add("1 42 1795844588804056 k1 5d0c c2ln")
	f.Add("")
	f.Add("1 x y z")
	f.Fuzz(func(t *testing.T, s string) {
		cp, err := store.DecodeCheckpoint(s)
		if err != nil || cp == nil {
			return
		}
		if again, err := store.DecodeCheckpoint(store.EncodeCheckpoint(cp).(string)); err != nil || *again != *cp {
			t.Fatalf("%q: %+v, then %+v %v", s, cp, again, err)
		}
	})
}
