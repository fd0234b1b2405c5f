package main

import (
	"testing"
)

// Forms come from MCP servers: any schema is read without a panic, required
// fields come first, and any typed value converts or says why not.
func FuzzFormFields(f *testing.F) {
	f.Add([]byte(`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer","default":3}},"required":["b"]}`), "7")
	f.Add([]byte(`{"properties":{"x":{"type":"boolean"}}}`), "y")
	f.Add([]byte(`{"properties":[1,2]}`), "")
	f.Add([]byte(`not json`), "x")
	f.Fuzz(func(t *testing.T, schema []byte, typed string) {
		fields, err := formFields(schema)
		if err != nil {
			return
		}
		seenOptional := false
		for _, fl := range fields {
			if !fl.Required {
				seenOptional = true
			} else if seenOptional {
				t.Fatalf("a required field after an optional one: %+v", fields)
			}
			_ = fl.prompt()
			if v, set, err := fl.value(typed); err == nil && set && v == nil && fl.Default == nil {
				t.Fatalf("%q set to nil for %+v", typed, fl)
			}
		}
	})
}
