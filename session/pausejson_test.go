package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
)

// fillRandom sets v, of any type a payload holds, to a random value: every
// exported field, slices and pointers sometimes nil, text of every kind
// (randomText), raw JSON valid and not (randomRaw), times any encoder may
// refuse (randomTime).
func fillRandom(r *rand.Rand, v reflect.Value, depth int) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(randomText(r))
	case reflect.Bool:
		v.SetBool(r.IntN(2) == 0)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(r.Int64N(1<<20) - 1<<19)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(r.Uint64N(1 << 20))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(r.NormFloat64() * 1e6)
	case reflect.Interface:
		if r.IntN(2) == 0 {
			v.Set(reflect.ValueOf(randomText(r)))
		}
	case reflect.Pointer:
		if depth < 4 && r.IntN(2) == 0 {
			p := reflect.New(v.Type().Elem())
			fillRandom(r, p.Elem(), depth+1)
			v.Set(p)
		}
	case reflect.Slice:
		switch {
		case v.Type() == reflect.TypeFor[json.RawMessage]():
			if r.IntN(4) > 0 {
				v.Set(reflect.ValueOf(randomRaw(r)))
			}
		case depth < 4 && r.IntN(4) > 0:
			n := r.IntN(3)
			s := reflect.MakeSlice(v.Type(), n, n)
			for i := range n {
				fillRandom(r, s.Index(i), depth+1)
			}
			v.Set(s)
		}
	case reflect.Map:
		if depth < 4 && r.IntN(3) == 0 && v.Type().Key().Kind() == reflect.String {
			m := reflect.MakeMap(v.Type())
			for range r.IntN(3) {
				k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
				fillRandom(r, k, depth+1)
				fillRandom(r, e, depth+1)
				m.SetMapIndex(k, e)
			}
			v.Set(m)
		}
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(randomTime(r)))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() && r.IntN(4) > 0 {
				fillRandom(r, v.Field(i), depth+1)
			}
		}
	}
}

// agrees fails t unless got is encoding/json's want (and one errs when the
// other does), but for a time encoding/json refuses (a year past 9999, a
// zone offset of a day or more), which segmentio writes, as the reflective
// fallback of every payload did already (see TestAppendSimpleAgrees). The
// engine's times are its clock's, never such.
func agrees(t *testing.T, what string, got []byte, gotErr error, want []byte, wantErr error) {
	t.Helper()
	switch {
	case wantErr != nil && strings.Contains(wantErr.Error(), "Time.MarshalJSON"):
	case (gotErr != nil) != (wantErr != nil):
		t.Fatalf("%s: error %v, encoding/json's %v", what, gotErr, wantErr)
	case gotErr == nil && !bytes.Equal(got, want):
		t.Fatalf("%s:\n got: %s\nwant: %s", what, got, want)
	}
}

// The two pause payloads, encoded as encoding/json encodes their shape (an
// interrupt without its Ask): the reference their MarshalJSON must write.
func stdlibInterruptRequested(p InterruptRequested) ([]byte, error) {
	type plain InterruptRequested
	return json.Marshal(struct {
		plain
		Interrupt recorded `json:"interrupt"`
	}{plain(p), recorded(p.Interrupt)})
}

func stdlibTurnPaused(p TurnPaused) ([]byte, error) {
	type plain TurnPaused
	return json.Marshal(struct {
		plain
		Interrupts []recorded `json:"interrupts"`
	}{plain(p), recordedAll(p.Interrupts)})
}

// InterruptRequested and TurnPaused, recorded at every pause, are written
// by segmentio/encoding/json; for 10,000 random payloads of each the bytes
// are encoding/json's, and a payload one refuses the other refuses too
// (agrees).
func TestPausePayloadsEncodeAsEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(47, 11))
	for range 10_000 {
		var ir InterruptRequested
		fillRandom(r, reflect.ValueOf(&ir).Elem(), 0)
		got, err := ir.MarshalJSON()
		want, wantErr := stdlibInterruptRequested(ir)
		agrees(t, "InterruptRequested", got, err, want, wantErr)

		var tp TurnPaused
		fillRandom(r, reflect.ValueOf(&tp).Elem(), 0)
		got, err = tp.MarshalJSON()
		want, wantErr = stdlibTurnPaused(tp)
		agrees(t, "TurnPaused", got, err, want, wantErr)
	}
}

// commonInterrupt is a random interrupt, most often in the common form
// appendRecorded writes (random text, arguments and times all the same).
func commonInterrupt(r *rand.Rand) Interrupt {
	var in Interrupt
	fillRandom(r, reflect.ValueOf(&in).Elem(), 0)
	if r.IntN(5) > 0 {
		in = Interrupt{ID: in.ID, Kind: in.Kind, Path: in.Path, Tool: in.Tool, Arguments: in.Arguments, Message: in.Message,
			InDoubt: in.InDoubt, IdempotencyKey: in.IdempotencyKey, ExpiresAt: in.ExpiresAt}
	}
	return in
}

// AppendPayload writes the pause payloads, and MarshalStored the summary
// of a paused session, by hand when their interrupts are in the common
// form: byte for byte encoding/json's, for 10,000 random payloads and
// sessions, most of them on the hand-written path.
func TestPauseWrittenByHandAgrees(t *testing.T) {
	r := rand.New(rand.NewPCG(47, 12))
	byHand, stored := 0, 0
	for i := range 10_000 {
		ir := &InterruptRequested{CallID: randomText(r), Interrupt: commonInterrupt(r), Held: r.IntN(3) == 0}
		tp := &TurnPaused{}
		if r.IntN(4) > 0 {
			tp.Interrupts = []Interrupt{}
			for range r.IntN(4) {
				tp.Interrupts = append(tp.Interrupts, commonInterrupt(r))
			}
		}
		if r.IntN(2) == 0 {
			tp.Created = []string{randomText(r)}
		}
		for _, c := range []struct {
			p    Payload
			want func() ([]byte, error)
		}{{ir, func() ([]byte, error) { return stdlibInterruptRequested(*ir) }}, {tp, func() ([]byte, error) { return stdlibTurnPaused(*tp) }}} {
			prefix := []byte("xyz")
			got, ok := AppendPayload(prefix, c.p)
			if !bytes.HasPrefix(got, prefix) {
				t.Fatalf("%d: AppendPayload lost what came before: %q", i, got)
			}
			if !ok {
				if len(got) != len(prefix) {
					t.Fatalf("%d: %T not written by hand, yet b grew: %q", i, c.p, got)
				}
				continue
			}
			byHand++
			want, err := c.want()
			if err != nil || !bytes.Equal(got[len(prefix):], want) {
				t.Fatalf("%d: %T\n got: %s\nwant: %s (%v)", i, c.p, got[len(prefix):], want, err)
			}
		}

		s := Session{ID: randomText(r), Agent: "main", Status: StatusPaused, Seq: int64(i), Stack: []StackFrame{{Agent: "main", Mode: ModeMain}},
			Remembered: []Remembered{}, Interrupts: tp.Interrupts, CreatedAt: randomTime(r), UpdatedAt: randomTime(r)}
		if _, ok := s.marshalSimple(true); ok {
			stored++
		}
		got, gotErr := s.MarshalStored()
		want, wantErr := stdlibStored(s)
		agrees(t, fmt.Sprintf("%d: MarshalStored", i), got, gotErr, want, wantErr)
	}
	if byHand < 6_000 || stored < 3_000 {
		t.Fatalf("only %d of 20,000 payloads and %d of 10,000 summaries were written by hand", byHand, stored)
	}
}

// stdlibInterrupt is what Interrupt.MarshalJSON writes, as encoding/json
// writes its shape: the interrupt and its Ask.
func stdlibInterrupt(in Interrupt) ([]byte, error) {
	type plain Interrupt
	return json.Marshal(struct {
		plain
		Ask Ask `json:"ask"`
	}{plain(in), in.Ask()})
}

// An interrupt as answers show it (with its Ask and the caller's
// may_decide), and a session holding such interrupts, are written by hand
// in the common form: byte for byte encoding/json's, for 10,000 random
// interrupts of every kind and as many sessions.
func TestInterruptViewWrittenByHandAgrees(t *testing.T) {
	r := rand.New(rand.NewPCG(47, 13))
	kinds := AllKinds()
	byHand, sessions := 0, 0
	for i := range 10_000 {
		in := commonInterrupt(r)
		if r.IntN(4) > 0 {
			in.Kind = kinds[r.IntN(len(kinds))]
		}
		if r.IntN(2) == 0 {
			may := r.IntN(2) == 0
			in.MayDecide = &may
		}
		if _, ok := appendInterrupt(nil, &in, true); ok {
			byHand++
		}
		got, gotErr := in.MarshalJSON()
		want, wantErr := stdlibInterrupt(in)
		agrees(t, fmt.Sprintf("%d: Interrupt.MarshalJSON", i), got, gotErr, want, wantErr)

		s := Session{ID: randomText(r), Agent: "main", Status: StatusPaused, Seq: int64(i), Output: randomText(r),
			Stack: []StackFrame{{Agent: "main", Mode: ModeMain}}, Remembered: []Remembered{}, Interrupts: []Interrupt{in, commonInterrupt(r)},
			CreatedAt: randomTime(r), UpdatedAt: randomTime(r)}
		if _, ok := s.appendSimple(nil, false); ok {
			sessions++
		}
		got, gotErr = s.MarshalJSON()
		want, wantErr = stdlibJSON(s)
		agrees(t, fmt.Sprintf("%d: Session.MarshalJSON", i), got, gotErr, want, wantErr)
	}
	if byHand < 5_000 || sessions < 2_000 {
		t.Fatalf("only %d of 10,000 interrupts and %d sessions were written by hand", byHand, sessions)
	}
}

// FuzzInterruptJSON: the comparison of TestInterruptViewWrittenByHandAgrees
// and TestPauseWrittenByHandAgrees with fuzzed text, arguments and times.
func FuzzInterruptJSON(f *testing.F) {
	f.Add("int_1", "deploy <prod>", "Deploy \u2028?", []byte(`{"env":"prod"}`), int64(1764300000), 3600, true, false)
	f.Add("", "", "", []byte(`{"a": 1}`), int64(253402300800), 0, false, true)
	f.Add("\xff", "é", "&", []byte(`null`), int64(-62135596800), -150, false, false)
	f.Fuzz(func(t *testing.T, id, tool, message string, args []byte, sec int64, offset int, may, inDoubt bool) {
		at := time.Unix(sec, 0).In(time.FixedZone("", offset))
		in := Interrupt{ID: id, Kind: KindApproval, Path: []PathStep{{Agent: tool, Tool: message, CallID: id}}, Tool: tool,
			Arguments: args, Message: message, InDoubt: inDoubt, IdempotencyKey: id, ExpiresAt: &at, MayDecide: &may}
		got, gotErr := in.MarshalJSON()
		want, wantErr := stdlibInterrupt(in)
		if wantErr != nil {
			return // what encoding/json refuses (bad arguments, times) is the reflective encoder's
		}
		if gotErr != nil || !bytes.Equal(got, want) {
			t.Fatalf("view: %v\n got: %s\nwant: %s", gotErr, got, want)
		}
		in.MayDecide = nil
		p := &InterruptRequested{CallID: id, Interrupt: in}
		if b, ok := AppendPayload(nil, p); ok {
			want, err := stdlibInterruptRequested(*p)
			if err != nil || !bytes.Equal(b, want) {
				t.Fatalf("recorded: %v\n got: %s\nwant: %s", err, b, want)
			}
		}
	})
}
