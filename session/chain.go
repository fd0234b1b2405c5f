package session

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
)

// chainVersion starts every event hash's input: a later encoding gets
// another, and verifiers tell them apart.
const chainVersion = "cairn.event.v1"

// EventHash is the hash of ev, an event of session id, chained to prev
// (the hash of the event before it in the session, "" for the first): the
// lowercase hex SHA-256 of a canonical encoding of the session id, the
// event's seq, type, time (in whole microseconds, UTC: what every store
// keeps), frame, agent, data and prev, each field length-prefixed (an
// unsigned varint) so that no two events encode alike. Any edit,
// deletion, insertion or reordering of a session's events changes a hash
// or breaks a prev link after it. ev.Hash and ev.Prev are not read.
//
// The engine hashes every event it records, so the encoding is built in
// one buffer, on the stack for the usual event: the only allocation is
// the result.
func EventHash(id string, ev *Event, prev string) string {
	var stack [1024]byte
	b := stack[:0]
	b = field(b, chainVersion)
	b = field(b, id)
	b = binary.AppendUvarint(b, 8)
	b = binary.BigEndian.AppendUint64(b, uint64(ev.Seq))
	b = field(b, string(ev.Type))
	b = binary.AppendUvarint(b, 8)
	b = binary.BigEndian.AppendUint64(b, uint64(ev.Time.UnixMicro()))
	b = field(b, ev.Frame)
	b = field(b, ev.Agent)
	b = binary.AppendUvarint(b, uint64(len(ev.Data)))
	b = append(b, ev.Data...)
	b = field(b, prev)
	sum := sha256.Sum256(b)
	var out [2 * sha256.Size]byte
	hex.Encode(out[:], sum[:])
	return string(out[:])
}

// field appends s, length-prefixed.
func field(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}
