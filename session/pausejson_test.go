package session

import (
	"bytes"
	"encoding/json"
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
// are encoding/json's, and a payload one refuses the other refuses too,
// except a time encoding/json refuses (a year past 9999, a zone offset of
// a day or more), which segmentio writes, as the reflective fallback of
// every payload did already (see TestAppendSimpleAgrees). The engine's
// times are its clock's, never such.
func TestPausePayloadsEncodeAsEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(47, 11))
	check := func(what string, got []byte, gotErr error, want []byte, wantErr error) {
		t.Helper()
		switch {
		case wantErr != nil && strings.Contains(wantErr.Error(), "Time.MarshalJSON"):
		case (gotErr != nil) != (wantErr != nil):
			t.Fatalf("%s: error %v, encoding/json's %v", what, gotErr, wantErr)
		case gotErr == nil && !bytes.Equal(got, want):
			t.Fatalf("%s:\n got: %s\nwant: %s", what, got, want)
		}
	}
	for range 10_000 {
		var ir InterruptRequested
		fillRandom(r, reflect.ValueOf(&ir).Elem(), 0)
		got, err := ir.MarshalJSON()
		want, wantErr := stdlibInterruptRequested(ir)
		check("InterruptRequested", got, err, want, wantErr)

		var tp TurnPaused
		fillRandom(r, reflect.ValueOf(&tp).Elem(), 0)
		got, err = tp.MarshalJSON()
		want, wantErr = stdlibTurnPaused(tp)
		check("TurnPaused", got, err, want, wantErr)
	}
}
