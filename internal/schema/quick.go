package schema

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// Quick returns a check that tells, from the JSON text of tool arguments
// and without decoding them, that they are valid against the schema doc:
// true means Validate would pass them (decoded by encoding/json); false
// means only "not sure", and the caller decodes and validates as before.
// It is nil when doc uses anything beyond the common shape of a tool's
// parameters (what jsonschema.For writes for a Go struct): "type",
// "properties", "required", "additionalProperties" as a boolean, "items",
// string "enum"s, and annotations.
//
// Why: every tool call's arguments were decoded into any and walked by
// the validator, about fifteen allocations of a turn's 127 in
// BenchmarkTurn. The validator stays the reference: FuzzQuickAgrees and
// TestQuickAgreesWithTheValidator check every answer Quick gives against it.
func Quick(doc []byte) func(raw string) bool {
	var root map[string]any
	if err := json.Unmarshal(doc, &root); err != nil {
		return nil
	}
	n, ok := quickNode(root, 0)
	if !ok || n.types != 1<<jsonObject {
		return nil
	}
	return func(raw string) bool {
		// gjson.Valid reads a string (encoding/json's Valid would copy it
		// to bytes); a text it passed that encoding/json refuses would
		// fail the differential tests.
		return gjson.Valid(raw) && n.accepts(gjson.Parse(raw))
	}
}

// The JSON kinds a "type" names, as bits of quickSchema.types.
const (
	jsonNull = iota
	jsonBoolean
	jsonNumber
	jsonInteger
	jsonString
	jsonArray
	jsonObject
)

// typeBit is the json* kind a "type" names.
func typeBit(name string) (uint8, bool) {
	i := slices.Index([]string{"null", "boolean", "number", "integer", "string", "array", "object"}, name) // in json* order
	return uint8(i), i >= 0
}

// quickSchema is a schema Quick can check: the kinds it allows, and for
// objects their properties, for arrays their items.
type quickSchema struct {
	types    uint8 // bits of the json* kinds; 0: any
	enum     []string
	props    []quickProp
	required []string
	closed   bool         // additionalProperties: false
	items    *quickSchema // nil: any
}

type quickProp struct {
	name   string
	schema quickSchema
}

// isAnnotation reports whether a keyword asserts nothing.
func isAnnotation(key string) bool {
	switch key {
	case "title", "description", "default", "examples", "$comment", "deprecated", "readOnly", "writeOnly":
		return true
	}
	return false
}

// quickNode reads a schema object into a quickSchema, or reports that it
// holds a keyword (or a form of one) Quick does not check.
func quickNode(m map[string]any, depth int) (quickSchema, bool) {
	var q quickSchema
	if depth > 8 {
		return q, false
	}
	for key, v := range m {
		switch key {
		case "type":
			switch t := v.(type) {
			case string:
				bit, ok := typeBit(t)
				if !ok {
					return q, false
				}
				q.types |= 1 << bit
			case []any:
				if len(t) == 0 {
					return q, false
				}
				for _, e := range t {
					s, _ := e.(string)
					bit, ok := typeBit(s)
					if !ok {
						return q, false
					}
					q.types |= 1 << bit
				}
			default:
				return q, false
			}
		case "enum":
			list, ok := stringList(v)
			if !ok || len(list) == 0 {
				return q, false
			}
			q.enum = list
		case "properties":
			props, ok := v.(map[string]any)
			if !ok {
				return q, false
			}
			for name, p := range props {
				ps, ok := subschema(p, depth)
				if !ok {
					return q, false
				}
				q.props = append(q.props, quickProp{name: name, schema: ps})
			}
		case "required":
			list, ok := stringList(v)
			if !ok {
				return q, false
			}
			q.required = list
		case "additionalProperties":
			b, ok := v.(bool)
			if !ok {
				return q, false
			}
			q.closed = !b
		case "items":
			is, ok := subschema(v, depth)
			if !ok {
				return q, false
			}
			q.items = &is
		default:
			if !isAnnotation(key) {
				return q, false
			}
		}
	}
	slices.SortFunc(q.props, func(a, b quickProp) int { return strings.Compare(a.name, b.name) })
	// An "integer" beside a "number" adds nothing to it.
	if q.types&(1<<jsonInteger) != 0 && q.types&(1<<jsonNumber) != 0 {
		q.types &^= 1 << jsonInteger
	}
	return q, true
}

// subschema reads v, a schema inside one at depth.
func subschema(v any, depth int) (quickSchema, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return quickSchema{}, false
	}
	return quickNode(m, depth+1)
}

// stringList is v as a JSON array of strings.
func stringList(v any) ([]string, bool) {
	list, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]string, 0, len(list))
	for _, e := range list {
		s, ok := e.(string)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

// accepts reports that v surely satisfies q (false: not sure).
func (q *quickSchema) accepts(v gjson.Result) bool {
	kind := kindOf(v)
	if kind < 0 {
		return false
	}
	if q.types != 0 && q.types&(1<<kind) == 0 {
		if kind != jsonNumber || q.types&(1<<jsonInteger) == 0 || !isWhole(v.Raw) {
			return false
		}
	}
	if len(q.enum) > 0 && (kind != jsonString || !q.inEnum(v.Raw)) {
		return false
	}
	switch kind {
	case jsonNumber:
		if _, err := strconv.ParseFloat(v.Raw, 64); err != nil { // out of range: encoding/json refuses it
			return false
		}
	case jsonObject:
		return q.acceptsObject(v)
	case jsonArray:
		ok := true
		v.ForEach(func(_, e gjson.Result) bool {
			if q.items != nil {
				ok = q.items.accepts(e)
			} else {
				ok = decodable(e)
			}
			return ok
		})
		return ok
	}
	return true
}

// acceptsObject checks an object's members against the properties, the
// required names and additionalProperties.
func (q *quickSchema) acceptsObject(v gjson.Result) bool {
	if len(q.props) > 64 {
		return false
	}
	var seen uint64 // of q.props, by index
	ok := true
	v.ForEach(func(k, e gjson.Result) bool {
		name := k.Raw
		if len(name) < 2 || strings.IndexByte(name, '\\') >= 0 {
			ok = false // an escaped name: not compared here
			return false
		}
		name = name[1 : len(name)-1]
		i, found := slices.BinarySearchFunc(q.props, name, func(p quickProp, n string) int { return strings.Compare(p.name, n) })
		switch {
		case !found && q.closed:
			ok = false
		case !found:
			ok = decodable(e) // any value, but one encoding/json decodes
		case seen&(1<<i) != 0:
			ok = false // a name twice: encoding/json keeps the last one
		default:
			seen |= 1 << i
			ok = q.props[i].schema.accepts(e)
		}
		return ok
	})
	if !ok {
		return false
	}
	for _, r := range q.required {
		i, found := slices.BinarySearchFunc(q.props, r, func(p quickProp, n string) int { return strings.Compare(p.name, n) })
		if !found || seen&(1<<i) == 0 {
			return false // required, and (as far as Quick knows) absent
		}
	}
	return true
}

// inEnum reports whether the JSON string raw is one of q.enum, compared
// as written when it has no escapes and is valid UTF-8 (else not sure).
func (q *quickSchema) inEnum(raw string) bool {
	if len(raw) < 2 || strings.IndexByte(raw, '\\') >= 0 || !utf8.ValidString(raw) {
		return false
	}
	return slices.Contains(q.enum, raw[1:len(raw)-1])
}

// decodable reports that encoding/json decodes v into an any: every
// number in it fits a float64 (the syntax was checked whole).
func decodable(v gjson.Result) bool {
	switch kindOf(v) {
	case jsonNumber:
		_, err := strconv.ParseFloat(v.Raw, 64)
		return err == nil
	case jsonObject, jsonArray:
		ok := true
		v.ForEach(func(_, e gjson.Result) bool {
			ok = decodable(e)
			return ok
		})
		return ok
	case -1:
		return false
	}
	return true
}

// kindOf is v's JSON kind, -1 when gjson cannot tell.
func kindOf(v gjson.Result) int {
	switch v.Type {
	case gjson.Null:
		return jsonNull
	case gjson.False, gjson.True:
		return jsonBoolean
	case gjson.Number:
		return jsonNumber
	case gjson.String:
		return jsonString
	case gjson.JSON:
		switch {
		case v.IsObject():
			return jsonObject
		case v.IsArray():
			return jsonArray
		}
	}
	return -1
}

// isWhole reports whether the JSON number raw decodes (as encoding/json
// decodes it, to a float64) to a whole number: the validator's "integer".
func isWhole(raw string) bool {
	f, err := strconv.ParseFloat(raw, 64)
	return err == nil && !math.IsInf(f, 0) && f == math.Trunc(f)
}
