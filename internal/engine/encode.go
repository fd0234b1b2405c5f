package engine

import (
	"encoding/json"
	"reflect"
	"strings"
	"sync"

	segjson "github.com/segmentio/encoding/json"

	"github.com/cairnhq/cairn/session"
)

// payloadEncoding encodes event payloads. Every turn encodes several: the
// ones every turn records are written by hand (session.AppendPayload), the
// others with github.com/segmentio/encoding/json (also what the MCP Go SDK encodes
// with), which writes the bytes encoding/json writes in about half the time
// (FuzzInputSequences compares every event it records). That encoder does
// not know the omitzero option, so a payload type with an omitzero field
// anywhere inside goes to encoding/json; which types do is found once per
// type. Decoding stays with encoding/json.
type payloadEncoding struct {
	fast sync.Map // reflect.Type → bool: no omitzero inside
}

func (e *payloadEncoding) marshal(payload any) ([]byte, error) {
	if p, ok := payload.(session.Payload); ok {
		var scratch [512]byte
		if b, ok := session.AppendPayload(scratch[:0], p); ok {
			return append([]byte(nil), b...), nil // the event's, of its size
		}
	}
	t := reflect.TypeOf(payload)
	if t == nil {
		return json.Marshal(payload)
	}
	fast, ok := e.fast.Load(t)
	if !ok {
		fast = !hasOmitZero(t, map[reflect.Type]bool{})
		e.fast.Store(t, fast)
	}
	if fast.(bool) {
		return segjson.Marshal(payload)
	}
	return json.Marshal(payload)
}

// hasOmitZero reports whether t, or a type it holds, has a struct field
// tagged omitzero. seen breaks cycles.
func hasOmitZero(t reflect.Type, seen map[reflect.Type]bool) bool {
	if seen[t] {
		return false
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return hasOmitZero(t.Elem(), seen)
	case reflect.Map:
		return hasOmitZero(t.Key(), seen) || hasOmitZero(t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			if _, opts, _ := strings.Cut(f.Tag.Get("json"), ","); hasOption(opts, "omitzero") {
				return true
			}
			if hasOmitZero(f.Type, seen) {
				return true
			}
		}
	}
	return false
}

func hasOption(opts, name string) bool {
	for opts != "" {
		var o string
		o, opts, _ = strings.Cut(opts, ",")
		if o == name {
			return true
		}
	}
	return false
}
