package audit

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/store"
)

// An export is JSON lines, one record per line, each with a "kind":
//
//	{"kind":"key","id":"k1","public_key":"<base64 of 32 bytes>"}
//	{"kind":"session","id":"ses_…","seq":12,"status":"completed","updated_at":"…","checkpoint":{…}}
//	{"kind":"event","session":"ses_…","seq":1,"type":"…","time":"…","time_us":…,"frame":"","agent":"main","data":"<the event's JSON, as stored>","hash":"…","prev":"…"}
//	{"kind":"tombstone","id":"ses_…","seq":12,"purged_at":"…","checkpoint":{…}}
//
// Keys come first, then each session followed by its events in order, then
// the tombstones. An event's data is the stored JSON as a string (or, when
// it is not UTF-8, its base64 in "data_base64"), so that a reader hashes the
// very bytes the runtime hashed; time_us is the time as hashed (Unix
// microseconds). A checkpoint is {"seq","hash","at","at_us","key","sig"}.
// docs/audit.md shows how to check one without Cairn.

// record is one line of an export.
type record struct {
	Kind string `json:"kind"`
	// key
	PublicKey string `json:"public_key,omitempty"`
	// session, tombstone (ID), event (Session)
	ID        string     `json:"id,omitempty"`
	Session   string     `json:"session,omitempty"`
	Seq       int64      `json:"seq,omitempty"`
	Status    string     `json:"status,omitempty"`
	UpdatedAt *time.Time `json:"updated_at,omitempty"`
	PurgedAt  *time.Time `json:"purged_at,omitempty"`
	Signed    *signed    `json:"checkpoint,omitempty"`
	// event
	Type       string     `json:"type,omitempty"`
	Time       *time.Time `json:"time,omitempty"`
	TimeUS     *int64     `json:"time_us,omitempty"`
	Frame      *string    `json:"frame,omitempty"`
	Agent      *string    `json:"agent,omitempty"`
	Data       *string    `json:"data,omitempty"`
	DataBase64 []byte     `json:"data_base64,omitempty"`
	Hash       string     `json:"hash,omitempty"`
	Prev       *string    `json:"prev,omitempty"`
}

// signed is a checkpoint as an export writes it: with its time in Unix
// microseconds too, as signed.
type signed struct {
	Seq  int64     `json:"seq"`
	Hash string    `json:"hash"`
	At   time.Time `json:"at"`
	AtUS int64     `json:"at_us"`
	Key  string    `json:"key"`
	Sig  string    `json:"sig"`
}

func signedOf(cp *session.Checkpoint) *signed {
	if cp == nil {
		return nil
	}
	return &signed{Seq: cp.Seq, Hash: cp.Hash, At: cp.At.UTC(), AtUS: cp.At.UnixMicro(), Key: cp.Key, Sig: cp.Sig}
}

func (s *signed) checkpoint() session.Checkpoint {
	return session.Checkpoint{Seq: s.Seq, Hash: s.Hash, At: time.UnixMicro(s.AtUS).UTC(), Key: s.Key, Sig: s.Sig}
}

// ExportOptions narrow Export.
type ExportOptions struct {
	// Since, when set, keeps the sessions last updated at or after it
	// (whole: every event of each), and the tombstones of purges since.
	Since time.Time
	// Keys are the public keys written first, for the verifier.
	Keys Keys
}

// Export writes the store's sessions, their events and last signed
// checkpoints, and the tombstones, as JSON lines (see record), a page of
// sessions at a time. It returns how many sessions and events it wrote.
func Export(ctx context.Context, st store.Store, w io.Writer, opts ExportOptions) (Report, error) {
	var r Report
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	ids := make([]string, 0, len(opts.Keys))
	for id := range opts.Keys {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if err := enc.Encode(record{Kind: "key", ID: id, PublicKey: EncodePublicKey(opts.Keys[id])}); err != nil {
			return r, err
		}
	}
	err := eachSession(ctx, st, opts.Since, func(h store.Head) error {
		rec := record{Kind: "session", ID: h.ID, Status: string(h.Status), UpdatedAt: &h.UpdatedAt}
		cp, _, err := checkpointOf(ctx, st, h.ID) // one that cannot be read is left out: the verifier finds it unsigned
		if err != nil {
			return err
		}
		rec.Signed = signedOf(cp)
		evs, err := st.Events(ctx, h.ID, 0)
		if err != nil {
			return fmt.Errorf("audit: read the events of %s: %w", h.ID, err)
		}
		rec.Seq = h.Seq
		if n := len(evs); n > 0 && evs[n-1].Seq > rec.Seq {
			rec.Seq = evs[n-1].Seq // a turn committed since the head was read
		}
		if err := enc.Encode(rec); err != nil {
			return err
		}
		prev := ""
		for i := range evs {
			if err := enc.Encode(eventRecord(h.ID, &evs[i], prev)); err != nil {
				return err
			}
			prev = evs[i].Hash
		}
		r.Sessions++
		r.Events += len(evs)
		return nil
	})
	if err != nil {
		return r, err
	}
	err = eachTombstone(ctx, st, func(t store.Tombstone) error {
		if !opts.Since.IsZero() && t.PurgedAt.Before(opts.Since) {
			return nil
		}
		r.Tombstones++
		return enc.Encode(record{Kind: "tombstone", ID: t.ID, Seq: t.Seq, PurgedAt: &t.PurgedAt, Signed: signedOf(t.Checkpoint)})
	})
	if err != nil {
		return r, err
	}
	return r, bw.Flush()
}

// eventRecord is ev of session id as an export writes it; prev is the
// hash of the event before it, as written.
func eventRecord(id string, ev *session.Event, prev string) record {
	at, us := time.UnixMicro(ev.Time.UnixMicro()).UTC(), ev.Time.UnixMicro() // as hashed
	rec := record{Kind: "event", Session: id, Seq: ev.Seq, Type: string(ev.Type), Time: &at, TimeUS: &us,
		Frame: &ev.Frame, Agent: &ev.Agent, Hash: ev.Hash, Prev: &prev}
	if utf8.Valid(ev.Data) {
		data := string(ev.Data)
		rec.Data = &data
	} else {
		rec.DataBase64 = ev.Data
	}
	return rec
}

// maxLine bounds one line of an export: an event's data is bounded by the
// runtime far below it.
const maxLine = 64 << 20

// VerifyExport checks an export read from r as Verify checks a store:
// every session's chain, its last signed checkpoint and the tombstones,
// against trusted keys, or, when trusted is empty, against the keys the
// export carries (returned, so that the caller can show which it
// trusted). A line it cannot read is an error naming the line.
func VerifyExport(r io.Reader, trusted Keys) (Report, Keys, error) {
	var rep Report
	carried := Keys{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	var cur *record // the session being read
	var evs []session.Event
	keys := func() Keys {
		if len(trusted) > 0 {
			return trusted
		}
		return carried
	}
	finish := func() {
		if cur == nil {
			return
		}
		rep.Sessions++
		rep.Events += len(evs)
		for i := range evs {
			if evs[i].Hash == "" {
				rep.Unchained++
			}
		}
		b := Chain(cur.ID, evs, cur.Seq)
		switch {
		case b != nil:
		case cur.Signed == nil:
			rep.Unsigned++
		default:
			cp := cur.Signed.checkpoint()
			if b = Signed(cur.ID, evs, cp, keys()); b == nil {
				rep.signed(cur.ID, cp, int64(len(evs)))
			}
		}
		if b != nil {
			rep.Breaks = append(rep.Breaks, *b)
		}
		cur, evs = nil, evs[:0]
	}
	for line := 1; sc.Scan(); line++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var rec record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return rep, carried, fmt.Errorf("audit: export line %d: %w", line, err)
		}
		switch rec.Kind {
		case "key":
			pub, err := ParsePublicKey(rec.PublicKey)
			if err == nil {
				err = carried.Add(rec.ID, pub)
			}
			if err != nil {
				return rep, carried, fmt.Errorf("audit: export line %d: %w", line, err)
			}
		case "session":
			finish()
			cur = &rec
		case "event":
			ev, err := rec.event()
			if err != nil || cur == nil || rec.Session != cur.ID {
				return rep, carried, fmt.Errorf("audit: export line %d: an event of session %q %s", line, rec.Session, cmpOr(err, "outside its session's lines"))
			}
			evs = append(evs, ev)
		case "tombstone":
			finish()
			if rec.PurgedAt == nil {
				return rep, carried, fmt.Errorf("audit: export line %d: a tombstone without purged_at", line)
			}
			t := store.Tombstone{ID: rec.ID, Seq: rec.Seq, PurgedAt: *rec.PurgedAt}
			if rec.Signed != nil {
				cp := rec.Signed.checkpoint()
				t.Checkpoint = &cp
			}
			rep.tombstone(t, keys())
		default:
			return rep, carried, fmt.Errorf("audit: export line %d: kind %q is none of key, session, event, tombstone", line, rec.Kind)
		}
	}
	if err := sc.Err(); err != nil {
		return rep, carried, fmt.Errorf("audit: read the export: %w", err)
	}
	finish()
	return rep, carried, nil
}

// event is an event record as the session.Event it was.
func (rec *record) event() (session.Event, error) {
	if rec.TimeUS == nil || rec.Frame == nil || rec.Agent == nil || (rec.Data == nil && rec.DataBase64 == nil) || rec.Prev == nil {
		return session.Event{}, errors.New("lacks one of time_us, frame, agent, data, prev")
	}
	ev := session.Event{Seq: rec.Seq, Type: session.EventType(rec.Type), Time: time.UnixMicro(*rec.TimeUS).UTC(),
		Frame: *rec.Frame, Agent: *rec.Agent, Hash: rec.Hash, Prev: *rec.Prev, Data: rec.DataBase64}
	if rec.Data != nil {
		ev.Data = []byte(*rec.Data)
	}
	if rec.Time != nil && !rec.Time.Equal(ev.Time) {
		return session.Event{}, fmt.Errorf("says time %s and time_us %d, which differ", rec.Time.Format(time.RFC3339Nano), *rec.TimeUS)
	}
	return ev, nil
}

// cmpOr is err's text, or else what.
func cmpOr(err error, what string) string {
	if err != nil {
		return err.Error()
	}
	return what
}
