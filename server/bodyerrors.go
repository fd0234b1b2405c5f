package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/cairnhq/cairn/internal/suggest"
)

// explainJSONError turns encoding/json's decode errors, which name Go types
// ("cannot unmarshal number into Go struct field createRequest.input of
// type string"), into what a client can act on: the body field, what was
// expected and what came, or the unknown field with the known ones and the
// closest match.
func explainJSONError(err error, body []byte, v any) string {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		field := typeErr.Field
		if field == "" {
			field = "the body"
		}
		if msg, ok := numberMismatch(typeErr.Type, typeErr.Value); ok {
			return field + ": " + msg
		}
		return fmt.Sprintf("%s: expected %s, got %s", field, jsonKind(typeErr.Type), article(typeErr.Value))
	case errors.As(err, &syntaxErr):
		return fmt.Sprintf("the body is not valid JSON at byte %d: %s", syntaxErr.Offset, strings.TrimPrefix(syntaxErr.Error(), "json: "))
	}
	msg := err.Error()
	if strings.HasPrefix(msg, `json: unknown field "`) {
		var raw any
		if json.Unmarshal(body, &raw) == nil {
			if at, name, known, ok := findUnknown(raw, reflect.TypeOf(v), ""); ok {
				out := fmt.Sprintf("unknown field %q (known: %s)", at+name, strings.Join(known, ", "))
				return out + suggest.Hint(name, known)
			}
		}
	}
	return "the body is not valid JSON: " + strings.TrimPrefix(msg, "json: ")
}

// findUnknown walks a decoded body alongside the Go type it was meant for
// and returns the first object key the type has no field for: the path of
// its object ("decisions[0]."), the key and the known fields there.
func findUnknown(raw any, t reflect.Type, path string) (at, name string, known []string, ok bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch raw := raw.(type) {
	case map[string]any:
		if t.Kind() != reflect.Struct {
			return "", "", nil, false
		}
		fields := jsonFields(t)
		byLower := make(map[string]reflect.Type, len(fields))
		for n, ft := range fields {
			byLower[strings.ToLower(n)] = ft // encoding/json matches keys case-insensitively
		}
		keys := make([]string, 0, len(raw))
		for k := range raw {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			ft, found := byLower[strings.ToLower(k)]
			if !found {
				return path, k, sortedNames(fields), true
			}
			if at, name, known, ok := findUnknown(raw[k], ft, path+k+"."); ok {
				return at, name, known, true
			}
		}
	case []any:
		if t.Kind() != reflect.Slice && t.Kind() != reflect.Array {
			return "", "", nil, false
		}
		for i, el := range raw {
			if at, name, known, ok := findUnknown(el, t.Elem(), fmt.Sprintf("%s[%d].", strings.TrimSuffix(path, "."), i)); ok {
				return at, name, known, true
			}
		}
	}
	return "", "", nil, false
}

// jsonKind names a Go type as JSON: "a string", "an array", …
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "a JSON value"
}

// numberMismatch explains a number that a numeric field cannot hold: a
// fraction for an integer, or a number out of range (encoding/json reports
// both as "number", so "expected a number, got a number" would say nothing).
func numberMismatch(t reflect.Type, value string) (string, bool) {
	num, ok := strings.CutPrefix(value, "number ")
	if !ok {
		return "", false
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	shown := num
	if len(shown) > 24 {
		shown = fmt.Sprintf("%s… (%d characters)", shown[:20], len(num))
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if strings.ContainsAny(num, ".eE") {
			return fmt.Sprintf("expected a whole number, got %s", shown), true
		}
		return fmt.Sprintf("%s is out of range: expected a whole number that fits in %d bits", shown, t.Bits()), true
	case reflect.Float32, reflect.Float64:
		return fmt.Sprintf("%s is out of range: expected a number that fits in a %d-bit float", shown, t.Bits()), true
	}
	return "", false
}

// loneSurrogate returns the offset of the first \u escape of a UTF-16
// surrogate that has no partner: valid JSON syntax that encoding/json
// would quietly turn into U+FFFD, so the stored text would differ from
// the text sent. ok is false when there is none.
func loneSurrogate(body []byte) (offset int, ok bool) {
	hex := func(i int) (rune, bool) {
		if i+6 > len(body) || body[i] != '\\' || body[i+1] != 'u' {
			return 0, false
		}
		var r rune
		for _, c := range body[i+2 : i+6] {
			switch {
			case c >= '0' && c <= '9':
				r = r<<4 | rune(c-'0')
			case c >= 'a' && c <= 'f':
				r = r<<4 | rune(c-'a'+10)
			case c >= 'A' && c <= 'F':
				r = r<<4 | rune(c-'A'+10)
			default:
				return 0, false
			}
		}
		return r, true
	}
	for i := 0; i < len(body); i++ {
		if body[i] != '\\' { // outside strings a backslash is a syntax error anyway
			continue
		}
		r, isU := hex(i)
		if !isU {
			i++ // an escape of two characters: \\, \", \n…
			continue
		}
		switch {
		case r >= 0xD800 && r <= 0xDBFF:
			if low, ok := hex(i + 6); ok && low >= 0xDC00 && low <= 0xDFFF {
				i += 11
				continue
			}
			return i, true
		case r >= 0xDC00 && r <= 0xDFFF:
			return i, true
		}
		i += 5
	}
	return 0, false
}

// article reads a JSON kind as encoding/json reports it ("number",
// "string", "array", "object", "bool") with its article.
func article(kind string) string {
	switch {
	case kind == "bool":
		return "true or false"
	case strings.HasPrefix(kind, "number"):
		return "a number"
	case kind == "array" || kind == "object":
		return "an " + kind
	}
	return "a " + kind
}

// jsonFields maps the JSON names of a struct's fields to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

func sortedNames(m map[string]reflect.Type) []string {
	out := make([]string, 0, len(m))
	for n := range m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
