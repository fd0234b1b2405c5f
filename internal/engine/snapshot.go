package engine

import (
	"encoding/json"
	"fmt"

	"github.com/cairnhq/cairn/session"
)

// snapshotVersion is bumped when the snapshot layout changes; an unknown
// version is an error, and the driver falls back to replaying the log.
const snapshotVersion = 1

type snapshot struct {
	V      int    `json:"v"`
	Frames int    `json:"frames"`
	State  *State `json:"state"`
}

// Snapshot encodes a state so that Restore, with the events after it,
// rebuilds exactly what replaying the whole log would.
func Snapshot(st *State) ([]byte, error) {
	return json.Marshal(snapshot{V: snapshotVersion, Frames: st.frames, State: st})
}

// Restore decodes a snapshot and applies the events that follow it.
func Restore(data []byte, tail []session.Event) (*State, error) {
	var snap snapshot
	if err := json.Unmarshal(data, &snap); err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	if snap.V != snapshotVersion || snap.State == nil || snap.State.Seq < 1 {
		return nil, fmt.Errorf("snapshot: unsupported version %d or empty state", snap.V)
	}
	st := snap.State
	st.frames = snap.Frames
	if err := applyLog(st, tail); err != nil {
		return nil, fmt.Errorf("after snapshot at seq %d: %w", snap.State.Seq, err)
	}
	return st, nil
}
