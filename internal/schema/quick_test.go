package schema

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	validator "github.com/santhosh-tekuri/jsonschema/v6"
)

// reference is what Quick stands in for: decode with encoding/json, then
// the validator.
func reference(t testing.TB, doc []byte, raw string) bool {
	s, err := Compile(doc)
	if err != nil {
		t.Fatalf("schema %s does not compile: %v", doc, err)
	}
	return referenceWith(s, raw)
}

func referenceWith(s *validator.Schema, raw string) bool {
	var v any
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		return false
	}
	return Validate(s, v) == nil
}

var genNames = []string{"q", "n", "path", "mode", "tags", "ü", "a b", "x"}

// genSchema is a random schema of the shape Quick checks.
func genSchema(r *rand.Rand, depth int, root bool) map[string]any {
	m := map[string]any{}
	kinds := []string{"null", "boolean", "number", "integer", "string", "array", "object"}
	switch {
	case root:
		m["type"] = "object"
	case r.IntN(6) == 0: // no type: any
	case r.IntN(3) == 0:
		var ts []any
		for _, k := range kinds {
			if r.IntN(3) == 0 {
				ts = append(ts, k)
			}
		}
		if len(ts) == 0 {
			ts = []any{"string", "null"}
		}
		m["type"] = ts
	default:
		m["type"] = kinds[r.IntN(len(kinds))]
	}
	if r.IntN(4) == 0 {
		m["description"] = "d"
	}
	typ, _ := m["type"].(string)
	if typ == "string" && r.IntN(3) == 0 {
		m["enum"] = []any{"a", "b", "ü"}
	}
	if typ == "object" || root {
		props := map[string]any{}
		var required []any
		for _, n := range genNames[:r.IntN(len(genNames))] {
			if depth < 3 {
				props[n] = genSchema(r, depth+1, false)
			} else {
				props[n] = map[string]any{"type": "string"}
			}
			if r.IntN(2) == 0 {
				required = append(required, n)
			}
		}
		m["properties"] = props
		if len(required) > 0 {
			m["required"] = required
		}
		if r.IntN(2) == 0 {
			m["additionalProperties"] = r.IntN(3) == 0
		}
	}
	if typ == "array" && r.IntN(2) == 0 && depth < 3 {
		m["items"] = genSchema(r, depth+1, false)
	}
	return m
}

// genValue is a value for schema s: mostly one that fits, sometimes not.
func genValue(r *rand.Rand, s map[string]any, depth int) any {
	if r.IntN(12) == 0 || depth > 5 {
		return randomValue(r, depth)
	}
	var typ string
	switch t := s["type"].(type) {
	case string:
		typ = t
	case []any:
		typ = t[r.IntN(len(t))].(string)
	default:
		return randomValue(r, depth)
	}
	if e, ok := s["enum"].([]any); ok {
		return e[r.IntN(len(e))]
	}
	switch typ {
	case "null":
		return nil
	case "boolean":
		return r.IntN(2) == 0
	case "number":
		return []any{1.5, -0.25, 3.0, 1e21, 0}[r.IntN(5)]
	case "integer":
		return []any{1, -7, 1e3, 2.0, 9007199254740993.0}[r.IntN(5)]
	case "string":
		return []any{"x", "", "ünï", "a\"b"}[r.IntN(4)]
	case "array":
		items, _ := s["items"].(map[string]any)
		var out []any
		for range r.IntN(3) {
			if items != nil {
				out = append(out, genValue(r, items, depth+1))
			} else {
				out = append(out, randomValue(r, depth+1))
			}
		}
		return out
	}
	out := map[string]any{}
	props, _ := s["properties"].(map[string]any)
	for name, p := range props {
		if r.IntN(4) != 0 {
			out[name] = genValue(r, p.(map[string]any), depth+1)
		}
	}
	if r.IntN(5) == 0 {
		out["extra"] = randomValue(r, depth+1)
	}
	return out
}

func randomValue(r *rand.Rand, depth int) any {
	switch n := r.IntN(7); {
	case n == 0:
		return nil
	case n == 1:
		return r.IntN(2) == 0
	case n == 2:
		return r.Float64() * 100
	case n == 3:
		return r.IntN(100)
	case n == 4 || depth > 4:
		return "s"
	case n == 5:
		return []any{randomValue(r, depth+1)}
	}
	return map[string]any{"q": randomValue(r, depth+1)}
}

// Over 10,000 random schemas of the shape Quick checks, and values for
// them (without escaped names, repeated names or out-of-range numbers,
// where Quick says "not sure"), Quick says exactly what the validator
// says: never yes where it says no (the promise), and yes wherever it
// does (so the quick path is the one taken).
func TestQuickAgreesWithTheValidator(t *testing.T) {
	r := rand.New(rand.NewPCG(46, 46))
	yes, no := 0, 0
	for i := range 10000 {
		s := genSchema(r, 0, true)
		doc, _ := json.Marshal(s)
		quick := Quick(doc)
		if quick == nil {
			t.Fatalf("schema %d: Quick gave up on %s", i, doc)
		}
		compiled, err := Compile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			raw, _ := json.Marshal(genValue(r, s, 0))
			got, want := quick(string(raw)), referenceWith(compiled, string(raw))
			if got != want {
				t.Fatalf("schema %s, arguments %s: Quick says %v, the validator %v", doc, raw, got, want)
			}
			if want {
				yes++
			} else {
				no++
			}
		}
	}
	if yes < 5000 || no < 5000 {
		t.Fatalf("the generated cases are lopsided: %d valid, %d not", yes, no)
	}
}

// What Quick does not check, it leaves to the validator: schemas with
// other keywords get no quick check, and arguments it cannot read as
// written get "not sure".
func TestQuickKnowsItsLimits(t *testing.T) {
	for _, doc := range []string{
		`{"type":"object","properties":{"n":{"type":"integer","minimum":1}}}`,
		`{"type":"object","properties":{"s":{"type":"string","pattern":"^a"}}}`,
		`{"type":"object","$ref":"#/$defs/x","$defs":{"x":{}}}`,
		`{"type":"object","properties":{"n":{"enum":[1,2]}}}`,
		`{"type":"object","additionalProperties":{"type":"string"}}`,
		`{"type":"array"}`,
		`{"type":"object","properties":{"a":true}}`,
		`{"type":"object","oneOf":[{}]}`,
		`not json`,
	} {
		if Quick([]byte(doc)) != nil {
			t.Errorf("Quick checks %s", doc)
		}
	}
	doc := []byte(`{"type":"object","properties":{"q":{"type":"string"},"n":{"type":"integer"}},"required":["q"],"additionalProperties":false}`)
	quick := Quick(doc)
	for _, c := range []struct {
		raw  string
		want bool
	}{
		{`{"q":"x"}`, true},
		{` {"q":"x","n":3} `, true},
		{`{"q":"x","n":3.0}`, true},
		{`{"q":"x","n":3.5}`, false},
		{`{"n":3}`, false},
		{`{"q":1}`, false},
		{`{"q":"x","z":1}`, false},
		{`{"\u0071":"x"}`, false},    // valid, but the name is escaped: not sure
		{`{"q":"x","q":"y"}`, false}, // valid, but encoding/json keeps the last: not sure
		{`{"q":"x","n":1e400}`, false},
		{`{"q":"x"`, false},
		{`["q"]`, false},
		{`null`, false},
	} {
		if got := quick(c.raw); got != c.want {
			t.Errorf("%s: Quick says %v, want %v", c.raw, got, c.want)
		}
		if c.want && !reference(t, doc, c.raw) {
			t.Errorf("%s: the validator refuses what Quick accepts", c.raw)
		}
	}
}

// Whatever the schema and the text, Quick never accepts what encoding/json
// and the validator refuse.
func FuzzQuickAgrees(f *testing.F) {
	f.Add(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"],"additionalProperties":false}`, `{"q":"x"}`)
	f.Add(`{"type":"object","properties":{"n":{"type":["integer","null"]},"l":{"type":"array","items":{"type":"string","enum":["a"]}}}}`, `{"n":1e2,"l":["a"]}`)
	f.Add(`{"type":"object"}`, `{"a":[1,{"b":1e308}]}`)
	f.Add(`{"type":"object","properties":{"o":{"type":"object","properties":{"x":{"type":"boolean"}},"required":["x"]}}}`, `{"o":{"x":true}}`)
	f.Fuzz(func(t *testing.T, doc, raw string) {
		quick := Quick([]byte(doc))
		if quick == nil || !quick(raw) {
			return
		}
		if _, err := Compile([]byte(doc)); err != nil {
			return // not a schema the validator takes: a tool with it is refused at compile
		}
		if !reference(t, []byte(doc), raw) {
			t.Fatalf("schema %s, arguments %s: Quick accepts what the validator refuses", doc, raw)
		}
	})
}

func ExampleQuick() {
	quick := Quick([]byte(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`))
	fmt.Println(quick(`{"q":"weather"}`), quick(`{"q":7}`))
	// Output: true false
}
