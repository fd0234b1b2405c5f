// Package schema compiles the JSON Schemas of tool arguments and of
// questions' answers, and words their validation errors for a model or a
// person to read: one line per problem, with where it is.
package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	validator "github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Compile compiles a JSON Schema document once, for validating values.
func Compile(doc []byte) (*validator.Schema, error) {
	v, err := validator.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	c := validator.NewCompiler()
	if err := c.AddResource("tool.json", v); err != nil {
		return nil, err
	}
	return c.Compile("tool.json")
}

// Validate checks a decoded JSON value against s, with the error worded
// by Readable.
func Validate(s *validator.Schema, v any) error {
	if err := s.Validate(v); err != nil {
		return Readable(err)
	}
	return nil
}

// CheckValue compiles doc and validates content (a decoded JSON value)
// against it: how the answer to a question with a schema is checked.
func CheckValue(doc json.RawMessage, content any) error {
	s, err := Compile(doc)
	if err != nil {
		return err
	}
	return Validate(s, content)
}

// Readable flattens a validation error into one readable line per problem.
func Readable(err error) error {
	ve, ok := err.(*validator.ValidationError)
	if !ok {
		return err
	}
	p := message.NewPrinter(language.English)
	var leaves []string
	var walk func(e *validator.ValidationError)
	walk = func(e *validator.ValidationError) {
		if len(e.Causes) == 0 {
			loc := "/" + strings.Join(e.InstanceLocation, "/")
			leaves = append(leaves, fmt.Sprintf("at %s: %s", loc, e.ErrorKind.LocalizedString(p)))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	return fmt.Errorf("%s", strings.Join(leaves, "; "))
}
