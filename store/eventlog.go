package store

import (
	"encoding/binary"
	"encoding/hex"
	"sort"
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
// Encoding, per event: uvarint seq, type (appendType), time
// (appendTime), frame, agent and data, each uvarint-length-prefixed, and
// hash (appendHash). Prev is not kept, as in every store (it is the event
// before's Hash). A batch starts with its form: plain, or chained (Head.
// Chained), then the hash before its first event, and its events' hashes
// are derived when read (hashDerived). A completed session lives until a
// purge, and every byte kept is memory the process must first touch (twice
// over, with the garbage collector's room): a type in one byte and derived
// hashes keep a turn's events in about 0.95 KB instead of 1.5.
type eventLog struct {
	batches []eventBatch
	room    [3]eventBatch // where batches starts: a turn's commits, mostly
}

// eventBatch is one Append's events, encoded.
type eventBatch struct {
	last int64 // the seq of its last event
	buf  []byte
}

// The forms of a batch.
const (
	batchPlain   byte = iota // every hash kept
	batchChained             // the hash before it, then derived hashes
)

// append encodes events after the ones already kept; chained: their
// hashes are the engine's chain (Head.Chained).
func (l *eventLog) append(events []session.Event, chained bool) {
	if len(events) == 0 {
		return
	}
	size := 1
	if chained {
		size += hashLen(events[0].Prev)
	}
	for i := range events {
		ev := &events[i]
		size += uvarintLen(uint64(ev.Seq)) + typeLen(ev.Type) + maxTimeBytes + fieldLen(len(ev.Frame)) + fieldLen(len(ev.Agent)) +
			fieldLen(len(ev.Data)) + 1
		if !chained {
			size += hashLen(ev.Hash) - 1
		}
	}
	b := make([]byte, 0, size)
	if chained {
		b = appendHash(append(b, batchChained), events[0].Prev)
	} else {
		b = append(b, batchPlain)
	}
	for i := range events {
		ev := &events[i]
		b = binary.AppendUvarint(b, uint64(ev.Seq))
		b = appendType(b, ev.Type)
		b = appendTime(b, ev.Time)
		b = appendField(b, ev.Frame)
		b = appendField(b, ev.Agent)
		b = append(binary.AppendUvarint(b, uint64(len(ev.Data))), ev.Data...)
		if chained {
			b = append(b, hashDerived)
		} else {
			b = appendHash(b, ev.Hash)
		}
	}
	if l.batches == nil {
		l.batches = l.room[:0]
	}
	l.batches = append(l.batches, eventBatch{last: events[len(events)-1].Seq, buf: b})
}

// appendType appends typ: one byte, its place in knownEventTypes plus
// one, or 0 and the type's text for one Cairn does not record.
func appendType(b []byte, typ session.EventType) []byte {
	if i := typeIndex(typ); i >= 0 {
		return append(b, byte(i+1))
	}
	return appendField(append(b, 0), string(typ))
}

func typeLen(typ session.EventType) int {
	if typeIndex(typ) >= 0 {
		return 1
	}
	return 1 + fieldLen(len(typ))
}

// typeIndex is typ's place in knownEventTypes, or -1.
func typeIndex(typ session.EventType) int {
	for i, t := range knownEventTypes {
		if t == typ && i < 255 {
			return i
		}
	}
	return -1
}

// readType reads what appendType wrote and returns the rest.
func readType(b []byte) (session.EventType, []byte) {
	if b[0] != 0 {
		return knownEventTypes[b[0]-1], b[1:]
	}
	typ, rest := field(b[1:])
	return session.EventType(typ), rest
}

// The forms of a hash appendHash writes.
const (
	hashText    byte = iota // length-prefixed, as given
	hashBinary              // 32 bytes of a SHA-256 in lower-case hex
	hashDerived             // none: session.EventHash of the event and the one before's
)

// appendHash appends hash: 33 bytes for the SHA-256 hex digest every
// event carries (session.HashLen), its text for anything else (none, or
// an older or foreign form), so that a read gives back the same string.
func appendHash(b []byte, hash string) []byte {
	if len(hash) == hashHexLen && isLowerHex(hash) {
		b = append(b, hashBinary)
		n := len(b)
		b = append(b, make([]byte, hashHexLen/2)...)
		_, _ = hex.Decode(b[n:], []byte(hash)) // checked: lower-case hex
		return b
	}
	return appendField(append(b, hashText), hash)
}

func hashLen(hash string) int {
	if len(hash) == hashHexLen && isLowerHex(hash) {
		return 1 + hashHexLen/2
	}
	return 1 + fieldLen(len(hash))
}

// hashHexLen is the length of a SHA-256 digest in hex.
const hashHexLen = 64

// isLowerHex reports whether s is lower-case hex, without a branch per
// byte: a hash's digits and letters come in no order a branch predictor
// learns, and the two-range test cost a tenth of a BenchmarkTurn.
func isLowerHex(s string) bool {
	var bad byte
	for i := 0; i < len(s); i++ {
		bad |= notLowerHex[s[i]]
	}
	return bad == 0
}

// notLowerHex is 1 for every byte that is not a lower-case hex digit.
var notLowerHex = func() (t [256]byte) {
	for i := range t {
		if (i < '0' || i > '9') && (i < 'a' || i > 'f') {
			t[i] = 1
		}
	}
	return t
}()

// readHash reads what appendHash wrote and returns the rest; a derived
// hash reads as "" (after derives it).
func readHash(b []byte) (string, []byte) {
	switch b[0] {
	case hashDerived:
		return "", b[1:]
	case hashBinary:
		return hex.EncodeToString(b[1 : 1+hashHexLen/2]), b[1+hashHexLen/2:]
	}
	hash, rest := field(b[1:])
	return string(hash), rest
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

// after decodes the events whose seq is above seq, of the session id.
// Data aliases the log (capped, so an append by the caller copies); the
// log's bytes are never written twice, so what a reader holds never
// changes. A chained batch's hashes are derived from the hash before it,
// event by event.
func (l *eventLog) after(id string, seq int64) []session.Event {
	// The first batch that ends after seq: batches hold consecutive seqs.
	i := sort.Search(len(l.batches), func(i int) bool { return l.batches[i].last > seq })
	var out []session.Event
	for _, batch := range l.batches[i:] {
		b, chained, prev := batch.buf[1:], batch.buf[0] == batchChained, ""
		if chained {
			prev, b = readHash(b)
		}
		for len(b) > 0 {
			var ev session.Event
			ev, b = decodeEvent(b)
			if chained {
				ev.Hash = session.EventHash(id, &ev, prev)
				prev = ev.Hash
			}
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
	ev.Type, b = readType(b)
	ev.Time, b = readTime(b)
	var frame, agent, data []byte
	frame, b = field(b)
	agent, b = field(b)
	data, b = field(b)
	ev.Hash, b = readHash(b)
	ev.Frame, ev.Agent = string(frame), string(agent)
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

// knownEventTypes is never written: appendType's table.
var knownEventTypes = session.AllEventTypes()
