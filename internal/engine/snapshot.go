package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/session"
)

// Snapshot layouts. Version 1 held every frame's messages inline; version 2
// may name sealed runs of them by content address instead (chunks), so a
// snapshot of a long conversation writes only what changed since the last
// one. Restore reads both; an unknown version is an error, and the driver
// falls back to replaying the log.
const (
	snapshotV1 = 1
	snapshotV2 = 2
)

// ChunkMessages is how many messages a sealed chunk holds. Messages are
// append-only, so once a frame has ChunkMessages more of them than it had
// sealed, the run is encoded once and never changes again.
const ChunkMessages = 64

// Chunk is a sealed run of a frame's messages, stored by its content
// address (Key, "msgs-sha256-" and the hex SHA-256 of Data).
type Chunk struct {
	Key  string
	Data []byte
}

type snapshot struct {
	V      int         `json:"v"`
	Frames int         `json:"frames"`
	State  *State      `json:"state"`
	Stack  []snapFrame `json:"stack,omitempty"` // v2: the frames, messages chunked
}

// snapFrame is a frame in a version 2 snapshot: its first messages are in
// the chunks named, in order, the rest inline.
type snapFrame struct {
	*Frame
	Chunks []string `json:"chunks,omitempty"`
}

// sealed is a frame's bookkeeping of the chunks a snapshot already wrote
// for its first messages. It is not part of the session.
type sealed struct {
	keys  []string // in message order
	msgs  int      // how many of the frame's first messages they hold
	bytes int      // their encoded size
}

// Parts is a snapshot split for a store that keeps chunks: Root names the
// chunks, Chunks are the ones not written by an earlier snapshot of this
// state, and Bytes is what the whole snapshot decodes from (the root and
// every chunk it names).
type Parts struct {
	Root   []byte
	Chunks []Chunk
	Bytes  int
}

// Snapshot encodes a state, every message inline, so that Restore with the
// events after it rebuilds exactly what replaying the whole log would. It
// needs no store (continuation tokens carry it).
func Snapshot(st *State) ([]byte, error) {
	return json.Marshal(snapshot{V: snapshotV1, Frames: st.frames, State: st})
}

// SnapshotParts encodes a state as a root that names its frames' sealed
// message chunks, sealing the runs that filled since the last snapshot.
// Whatever the history, the root holds at most ChunkMessages-1 messages per
// frame, so writing a snapshot costs about as much at 10,000 messages as at
// 100, and the messages themselves are encoded once.
func SnapshotParts(st *State) (Parts, error) {
	return snapshotParts(st, ChunkMessages)
}

// snapshotParts is SnapshotParts with per messages in a chunk (tests seal
// short conversations with small ones; Restore reads any size).
func snapshotParts(st *State, per int) (Parts, error) {
	var p Parts
	frames := make([]snapFrame, len(st.Frames))
	for i, f := range st.Frames {
		for f.sealed.msgs+per <= len(f.Messages) {
			data, err := json.Marshal(f.Messages[f.sealed.msgs : f.sealed.msgs+per])
			if err != nil {
				return p, fmt.Errorf("snapshot chunk: %w", err)
			}
			sum := sha256.Sum256(data)
			key := "msgs-sha256-" + hex.EncodeToString(sum[:])
			p.Chunks = append(p.Chunks, Chunk{Key: key, Data: data})
			f.sealed.keys = append(f.sealed.keys, key)
			f.sealed.msgs += per
			f.sealed.bytes += len(data)
		}
		open := *f
		open.Messages = f.Messages[f.sealed.msgs:]
		frames[i] = snapFrame{Frame: &open, Chunks: f.sealed.keys}
		p.Bytes += f.sealed.bytes
	}
	top := *st
	top.Frames = nil
	root, err := json.Marshal(snapshot{V: snapshotV2, Frames: st.frames, State: &top, Stack: frames})
	if err != nil {
		return p, err
	}
	p.Root = root
	p.Bytes += len(root)
	return p, nil
}

// Restore decodes a snapshot, reading the chunks a root names with chunks
// (nil when the snapshot came without a store), and applies the events
// that follow it. It returns how many bytes the snapshot decoded from.
func Restore(data []byte, chunks func(keys []string) ([][]byte, error), tail []session.Event) (*State, int, error) {
	var snap snapshot
	if err := json.Unmarshal(data, &snap); err != nil {
		return nil, 0, fmt.Errorf("snapshot: %w", err)
	}
	if (snap.V != snapshotV1 && snap.V != snapshotV2) || snap.State == nil || snap.State.Seq < 1 {
		return nil, 0, fmt.Errorf("snapshot: unsupported version %d or empty state", snap.V)
	}
	st, size := snap.State, len(data)
	st.frames = snap.Frames
	if snap.V == snapshotV2 {
		n, err := restoreFrames(st, snap.Stack, chunks)
		if err != nil {
			return nil, 0, err
		}
		size += n
	}
	if err := applyLog(st, tail); err != nil {
		return nil, 0, fmt.Errorf("after snapshot at seq %d: %w", snap.State.Seq, err)
	}
	return st, size, nil
}

// restoreFrames puts a version 2 snapshot's frames back together, reading
// every chunk they name in one call.
func restoreFrames(st *State, stack []snapFrame, chunks func(keys []string) ([][]byte, error)) (int, error) {
	var keys []string
	for _, sf := range stack {
		if sf.Frame == nil {
			return 0, fmt.Errorf("snapshot: empty frame")
		}
		keys = append(keys, sf.Chunks...)
	}
	var data [][]byte
	if len(keys) > 0 {
		if chunks == nil {
			return 0, fmt.Errorf("snapshot: names %d message chunks and no store to read them from", len(keys))
		}
		var err error
		if data, err = chunks(keys); err != nil {
			return 0, fmt.Errorf("snapshot chunks: %w", err)
		}
		if len(data) != len(keys) {
			return 0, fmt.Errorf("snapshot chunks: asked for %d, got %d", len(keys), len(data))
		}
	}
	size := 0
	st.Frames = make([]*Frame, len(stack))
	for i, sf := range stack {
		f := sf.Frame
		var msgs []model.Message
		for _, key := range sf.Chunks {
			b := data[0]
			data = data[1:]
			var run []model.Message
			if err := json.Unmarshal(b, &run); err != nil {
				return 0, fmt.Errorf("snapshot chunk %s: %w", key, err)
			}
			if len(run) == 0 {
				return 0, fmt.Errorf("snapshot chunk %s: no messages", key)
			}
			msgs = append(msgs, run...)
			f.sealed.bytes += len(b)
			size += len(b)
		}
		f.sealed.keys, f.sealed.msgs = sf.Chunks, len(msgs)
		f.Messages = append(msgs, f.Messages...)
		st.Frames[i] = f
	}
	return size, nil
}
