package store

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/session"
)

// The in-memory store's encoded log gives back what it was given (Prev
// aside, which no store keeps), from any seq, across batches.
func FuzzEventLogRoundTrip(f *testing.F) {
	f.Add(int64(1), "session_started", int64(1764320000123456789), "f1", "main", []byte(`{"a":1}`), "ab12", uint8(3), int64(0))
	f.Add(int64(7), "custom_type", int64(-5), "", "", []byte(nil), "", uint8(1), int64(6))
	f.Add(int64(1<<40), "", int64(0), "frame\x00with nul", "ä", []byte(`null`), "x", uint8(9), int64(1<<40))
	f.Add(int64(3), "tool_result", int64(9), "f2", "main", []byte(`{}`), strings.Repeat("0123456789abcdef", 4), uint8(2), int64(0))
	f.Add(int64(3), "tool_result", int64(9), "f2", "main", []byte(`{}`), strings.Repeat("0123456789ABCDEF", 4), uint8(2), int64(0))
	f.Add(int64(3), "turn_completed", int64(9), "f2", "main", []byte(`{}`), strings.Repeat("0123456789abcdeg", 4), uint8(2), int64(0))
	f.Fuzz(func(t *testing.T, first int64, typ string, nanos int64, frame, agent string, data []byte, hash string, n uint8, after int64) {
		if first < 0 || first > 1<<60 || n == 0 || n > 16 {
			t.Skip()
		}
		zones := []*time.Location{time.UTC, time.FixedZone("", 3600), time.FixedZone("", -150), time.FixedZone("", -60)}
		var l eventLog
		var all []session.Event
		for i := range int64(n) {
			ev := session.Event{Seq: first + i, Type: session.EventType(typ), Time: time.Unix(0, nanos+i).In(zones[i%4]),
				Frame: frame, Agent: agent, Hash: hash, Prev: "dropped"}
			if len(data) > 0 {
				ev.Data = json.RawMessage(append(data, byte(i)))
			}
			all = append(all, ev)
		}
		// Chained batches (Head.Chained) get the engine's hashes, chained
		// from hash (the hash before the first event); plain ones keep
		// hash as given. The fuzzed seq decides which of the batches.
		chainedFrom := int(first % 3) // 0: all chained, 1: none, 2: from the second batch
		prev := hash
		for i := range all {
			if chainedFrom != 1 {
				all[i].Prev, all[i].Hash = prev, session.EventHash("ses_fuzz", &all[i], prev)
				prev = all[i].Hash
			}
		}
		for rest, b := all, 0; len(rest) > 0; b++ { // in batches of 1, 2, 3, …
			k := min(len(l.batches)+1, len(rest))
			l.append(rest[:k], chainedFrom == 0 || chainedFrom == 2 && b > 0)
			rest = rest[k:]
		}
		var want []session.Event
		for _, ev := range all {
			if ev.Seq > after {
				ev.Prev = ""
				want = append(want, ev)
			}
		}
		got := l.after("ses_fuzz", after)
		if len(got) != len(want) {
			t.Fatalf("after(%d): %d events, want %d", after, len(got), len(want))
		}
		for i := range got {
			if !got[i].Time.Equal(want[i].Time) {
				t.Fatalf("event %d: time %v, want %v", i, got[i].Time, want[i].Time)
			}
			_, gotOff := got[i].Time.Zone()
			_, wantOff := want[i].Time.Zone()
			got[i].Time, want[i].Time = time.Time{}, time.Time{}
			if gotOff != wantOff || !reflect.DeepEqual(got[i], want[i]) {
				t.Fatalf("event %d:\n got %+v\nwant %+v", i, got[i], want[i])
			}
		}
	})
}

// A reader's events do not change when the session's log grows, and a
// reader appending to an event's Data does not reach into the log.
func TestEventLogReadsAreStable(t *testing.T) {
	var l eventLog
	ev := func(seq int64) session.Event {
		return session.Event{Seq: seq, Type: session.EventUserMessage, Time: time.Unix(seq, 0).UTC(), Data: json.RawMessage(`{"text":"hi"}`)}
	}
	l.append([]session.Event{ev(1), ev(2)}, false)
	got := l.after("s", 0)
	got[0].Data = append(got[0].Data, '!')
	l.append([]session.Event{ev(3)}, false)
	again := l.after("s", 0)
	if len(again) != 3 || string(again[0].Data) != `{"text":"hi"}` || string(again[1].Data) != `{"text":"hi"}` {
		t.Fatalf("the log changed under a reader: %+v", again)
	}
	if got := l.after("s", 3); got != nil {
		t.Fatalf("after the last seq: %+v, want none", got)
	}
}

// Every zone offset comes back as it went in, negative and not a whole
// minute too (time.Time.UnmarshalBinary reads -150 s as +106 s), and so
// do times in Local.
func TestEventLogKeepsEveryZone(t *testing.T) {
	var l eventLog
	at := time.Date(2026, 1, 1, 0, 0, 0, 7, time.UTC)
	in := []session.Event{{Seq: 1, Time: at.In(time.FixedZone("", -150))}, {Seq: 2, Time: at.In(time.FixedZone("", -60))}, {Seq: 3, Time: at.Local()}, {Seq: 4, Time: at}}
	l.append(in, false)
	for i, ev := range l.after("s", 0) {
		_, got := ev.Time.Zone()
		_, want := in[i].Time.Zone()
		if !ev.Time.Equal(at) || got != want || i >= 2 && ev.Time.Location() != in[i].Time.Location() {
			t.Errorf("event %d: %v (offset %d), want %v (offset %d)", i+1, ev.Time, got, in[i].Time, want)
		}
	}
}

// The events Cairn records keep their type in one byte and their hash
// (a SHA-256 in hex) in 33, and read back the same strings.
func TestEventLogKeepsTypesAndHashesCompact(t *testing.T) {
	hash := strings.Repeat("9f86d081884c7d65", 4)
	size := func(typ session.EventType, hash string) int {
		var l eventLog
		l.append([]session.Event{{Seq: 1, Type: typ, Time: time.Unix(0, 0).UTC(), Hash: hash}}, false)
		got := l.after("s", 0)
		if len(got) != 1 || got[0].Type != typ || got[0].Hash != hash {
			t.Fatalf("read back %+v, want type %q, hash %q", got, typ, hash)
		}
		return len(l.batches[0].buf)
	}
	if d := size(session.EventToolResult, hash) - size(session.EventToolResult, ""); d != 31 {
		t.Fatalf("a hex SHA-256 costs %d bytes more than none, want 31 (33 against 2)", d)
	}
	if d := size(session.EventToolResult, strings.ToUpper(hash)) - size(session.EventToolResult, hash); d != 33 {
		t.Fatalf("a hash not in lower-case hex costs %d bytes more, want 33 (kept as text)", d)
	}
	if d := size("custom_type", "") - size(session.EventToolResult, ""); d != 1+len("custom_type") {
		t.Fatalf("a type of Cairn's costs %d bytes less than a custom one, want %d", d, 1+len("custom_type"))
	}
}

// A chained batch keeps one byte per event's hash and the hash before it
// (33 bytes), and reads back the engine's hashes.
func TestChainedBatchesDeriveTheirHashes(t *testing.T) {
	events := make([]session.Event, 5)
	prev := strings.Repeat("ab", 32)
	for i := range events {
		events[i] = session.Event{Seq: int64(i + 7), Type: session.EventToolResult, Time: time.Unix(1764300000, int64(i)).UTC(),
			Frame: "f1", Agent: "main", Data: json.RawMessage(`{"call_id":"c1"}`), Prev: prev}
		events[i].Hash = session.EventHash("ses_1", &events[i], prev)
		prev = events[i].Hash
	}
	var plain, chained eventLog
	plain.append(events, false)
	chained.append(events, true)
	if d := len(plain.batches[0].buf) - len(chained.batches[0].buf); d != 5*32-33 {
		t.Fatalf("chained saves %d bytes, want %d (five hashes of 33 bytes for five of 1, and the hash before)", d, 5*32-33)
	}
	for i, ev := range chained.after("ses_1", 8) {
		if want := events[i+2].Hash; ev.Hash != want {
			t.Fatalf("event %d: hash %s, want %s", ev.Seq, ev.Hash, want)
		}
	}
}
