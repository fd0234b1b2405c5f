package store

import (
	"encoding/binary"
	"slices"
	"time"

	"github.com/cairnhq/cairn/session"
)

// eventLog is how the in-memory store keeps a session's events: encoded,
// one after another, in byte slices, one slice per Append of exactly its
// size. Kept as session.Event values, each event is six pointers the
// garbage collector walks at every cycle for as long as the store lives
// (and a completed session lives until a purge), and a growing slice of
// them is copied at each Append: BenchmarkTurn spent a quarter of its time
// there. Bytes are not walked, and a batch is written once. Reads decode,
// and are rare next to appends (a running session's state is cached).
//
// Encoding, per event: uvarint seq, then type, time (appendTime),
// frame, agent, data and hash, each uvarint-length-prefixed. Prev is not
// kept, as in every store (it is the event before's Hash).
type eventLog struct {
	batches []eventBatch
	room    [3]eventBatch // where batches starts: a turn's commits, mostly
}

// eventBatch is one Append's events, encoded.
type eventBatch struct {
	first, last int64 // their seqs
	buf         []byte
}

// append encodes events after the ones already kept.
func (l *eventLog) append(events []session.Event) {
	if len(events) == 0 {
		return
	}
	size := 0
	for i := range events {
		ev := &events[i]
		size += uvarintLen(uint64(ev.Seq)) + fieldLen(len(ev.Type)) + maxTimeBytes + fieldLen(len(ev.Frame)) + fieldLen(len(ev.Agent)) +
			fieldLen(len(ev.Data)) + fieldLen(len(ev.Hash))
	}
	b := make([]byte, 0, size)
	for i := range events {
		ev := &events[i]
		b = binary.AppendUvarint(b, uint64(ev.Seq))
		b = appendField(b, string(ev.Type))
		b = appendTime(b, ev.Time)
		b = appendField(b, ev.Frame)
		b = appendField(b, ev.Agent)
		b = append(binary.AppendUvarint(b, uint64(len(ev.Data))), ev.Data...)
		b = appendField(b, ev.Hash)
	}
	if l.batches == nil {
		l.batches = l.room[:0]
	}
	l.batches = append(l.batches, eventBatch{first: events[0].Seq, last: events[len(events)-1].Seq, buf: b})
}

// appendTime appends t: the instant, then its zone (UTC, Local or a
// fixed offset in seconds, as time.Time.MarshalBinary keeps it; its
// UnmarshalBinary misreads negative offsets that are not whole minutes).
func appendTime(b []byte, t time.Time) []byte {
	b = binary.AppendVarint(b, t.Unix())
	b = binary.AppendUvarint(b, uint64(t.Nanosecond()))
	switch t.Location() {
	case time.UTC:
		return append(b, zoneUTC)
	case time.Local:
		return append(b, zoneLocal)
	}
	_, offset := t.Zone()
	return binary.AppendVarint(append(b, zoneFixed), int64(offset))
}

// A time's zone, as appendTime writes it.
const (
	zoneUTC byte = iota
	zoneLocal
	zoneFixed
)

// readTime reads what appendTime wrote and returns the rest.
func readTime(b []byte) (time.Time, []byte) {
	sec, n := binary.Varint(b)
	nsec, k := binary.Uvarint(b[n:])
	b = b[n+k:]
	t := time.Unix(sec, int64(nsec))
	switch b[0] {
	case zoneUTC:
		return t.UTC(), b[1:]
	case zoneLocal:
		return t, b[1:]
	}
	offset, n := binary.Varint(b[1:])
	return t.In(time.FixedZone("", int(offset))), b[1+n:]
}

// maxTimeBytes bounds appendTime's output.
const maxTimeBytes = 3*binary.MaxVarintLen64 + 1

// uvarintLen is the length of binary.AppendUvarint(nil, x).
func uvarintLen(x uint64) int {
	n := 1
	for ; x >= 0x80; x >>= 7 {
		n++
	}
	return n
}

// fieldLen is the length of appendField of n bytes.
func fieldLen(n int) int { return uvarintLen(uint64(n)) + n }

func appendField(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// after decodes the events whose seq is above seq. Data aliases the log
// (capped, so an append by the caller copies); the log's bytes are never
// written twice, so what a reader holds never changes.
func (l *eventLog) after(seq int64) []session.Event {
	i, _ := slices.BinarySearchFunc(l.batches, seq+1, func(b eventBatch, want int64) int {
		switch {
		case b.last < want:
			return -1
		case b.first > want:
			return 1
		}
		return 0
	})
	var out []session.Event
	for _, batch := range l.batches[i:] {
		for b := batch.buf; len(b) > 0; {
			var ev session.Event
			ev, b = decodeEvent(b)
			if ev.Seq > seq {
				out = append(out, ev)
			}
		}
	}
	return out
}

// decodeEvent reads one event from the start of b, which append wrote (a
// failure is a bug in this file, not bad input), and returns the rest.
func decodeEvent(b []byte) (session.Event, []byte) {
	seq, n := binary.Uvarint(b)
	b = b[n:]
	var ev session.Event
	ev.Seq = int64(seq)
	var typ, data []byte
	typ, b = field(b)
	ev.Type = eventType(typ)
	ev.Time, b = readTime(b)
	var frame, agent, hash []byte
	frame, b = field(b)
	agent, b = field(b)
	data, b = field(b)
	hash, b = field(b)
	ev.Frame, ev.Agent, ev.Hash = string(frame), string(agent), string(hash)
	if data != nil {
		ev.Data = data[:len(data):len(data)]
	}
	return ev, b
}

// field reads one length-prefixed field; nil for an empty one.
func field(b []byte) (value, rest []byte) {
	n, k := binary.Uvarint(b)
	if k <= 0 || uint64(len(b)-k) < n {
		panic("store: an event encoded in memory is cut short")
	}
	end := k + int(n)
	if n == 0 {
		return nil, b[end:]
	}
	return b[k:end], b[end:]
}

// knownEventTypes is never written: eventType's table.
var knownEventTypes = session.AllEventTypes()

// eventType is typ as a session.EventType, without allocating for the
// types Cairn records.
func eventType(typ []byte) session.EventType {
	for _, t := range knownEventTypes {
		if string(typ) == string(t) {
			return t
		}
	}
	return session.EventType(typ)
}
