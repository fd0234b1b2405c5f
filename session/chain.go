package session

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"time"
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
	var out [HashLen]byte
	return string(AppendEventHash(out[:0], id, ev, prev))
}

// HashLen is the length of an event's hash (EventHash), in bytes.
const HashLen = 2 * sha256.Size

// AppendEventHash appends EventHash(id, ev, prev) to dst: how the engine
// hashes a step's events into one buffer, for one string of them all.
func AppendEventHash(dst []byte, id string, ev *Event, prev string) []byte {
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
	return hex.AppendEncode(dst, sum[:])
}

// field appends s, length-prefixed.
func field(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// checkpointVersion starts every checkpoint's signed message.
const checkpointVersion = "cairn.checkpoint.v1"

// Checkpoint is a signed statement that a session's log, up to Seq, ends
// in the event whose hash is Hash: the runtime signs one at every pause,
// every turn's end and every so many events in between, and a purge keeps
// the last one in the session's tombstone. Whoever edits the store without
// the signing key cannot make one, so events a checkpoint covers cannot be
// rewritten, even with their hashes recomputed. See docs/audit.md.
type Checkpoint struct {
	Seq  int64     `json:"seq"`
	Hash string    `json:"hash"`
	At   time.Time `json:"at"`
	// Key is the id of the key that signed it.
	Key string `json:"key"`
	// Sig is the Ed25519 signature of CheckpointMessage, in standard
	// base64.
	Sig string `json:"sig"`
}

// CheckpointMessage is what a checkpoint of session id signs: its session,
// seq, hash, time (whole microseconds) and key id, encoded as EventHash
// encodes events (each field length-prefixed), after a version of its own.
func CheckpointMessage(id string, cp Checkpoint) []byte {
	b := make([]byte, 0, 64+len(id)+len(cp.Hash)+len(cp.Key))
	b = field(b, checkpointVersion)
	b = field(b, id)
	b = binary.AppendUvarint(b, 8)
	b = binary.BigEndian.AppendUint64(b, uint64(cp.Seq))
	b = field(b, cp.Hash)
	b = binary.AppendUvarint(b, 8)
	b = binary.BigEndian.AppendUint64(b, uint64(cp.At.UnixMicro()))
	b = field(b, cp.Key)
	return b
}

// CheckpointSigner signs checkpoints of sessions' logs: the runtime calls
// it at every pause, every turn's end and every so many events in
// between, with the session's last seq and hash. audit.Key is one.
// Key ids have no spaces.
type CheckpointSigner interface {
	Sign(session string, seq int64, hash string, at time.Time) Checkpoint
}
