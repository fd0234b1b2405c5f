package config

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/cairnhq/cairn/internal/suggest"
)

// explain walks the YAML tree alongside the Go type it decodes into and
// returns the first mistake in the file's own terms: the key path, its
// line, what was expected and what came, with a "did you mean" for an
// unknown key. The YAML decoder's own errors name Go types instead
// ("field max_iteration not found in type config.AgentConfig"); nil when
// the walk finds nothing (then the decoder's error stands).
func (l *loader) explain(n *yaml.Node, t reflect.Type, path string) *Error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return nil
		}
		return l.explain(n.Content[0], t, path)
	}
	if n.Kind == yaml.AliasNode || t.Kind() == reflect.Interface || (n.Kind == yaml.ScalarNode && n.Tag == "!!null") {
		return nil
	}
	if n.Kind == yaml.MappingNode {
		if e := l.duplicateKey(n, path); e != nil {
			return e
		}
	}
	wrong := func(expected string) *Error {
		return &Error{File: l.path, Line: n.Line, Path: path, Msg: fmt.Sprintf("expected %s, got %s", expected, describe(n))}
	}
	if n.Kind == yaml.ScalarNode && reflect.PointerTo(t).Implements(reflect.TypeFor[yaml.Unmarshaler]()) {
		return nil // the type reads a scalar its own way (handoffs: [billing])
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return wrong("a mapping (key: value lines)")
		}
		fields := yamlFields(t)
		known := sortedKeys(fields)
		for i := 0; i+1 < len(n.Content); i += 2 {
			key, val := n.Content[i], n.Content[i+1]
			ft, ok := fields[key.Value]
			if !ok {
				msg := fmt.Sprintf("unknown key %q (known here: %s)%s", key.Value, strings.Join(known, ", "), didYouMean(key.Value, known))
				return &Error{File: l.path, Line: key.Line, Path: join(path, key.Value), Msg: msg}
			}
			if e := l.explain(val, ft, join(path, key.Value)); e != nil {
				return e
			}
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return wrong("a mapping (name: value lines)")
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if e := l.explain(n.Content[i+1], t.Elem(), join(path, n.Content[i].Value)); e != nil {
				return e
			}
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return wrong("a list ([a, b] or - lines)")
		}
		for i, el := range n.Content {
			if e := l.explain(el, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); e != nil {
				return e
			}
		}
	default:
		if expected := scalarMismatch(n, t); expected != "" {
			return wrong(expected)
		}
	}
	return nil
}

// duplicateKey reports a key given twice in one mapping, at the second,
// naming the line of the first; nil when every key is given once.
func (l *loader) duplicateKey(n *yaml.Node, path string) *Error {
	first := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key := n.Content[i]
		if line, seen := first[key.Value]; seen {
			return &Error{File: l.path, Line: key.Line, Path: join(path, key.Value),
				Msg: fmt.Sprintf("%q is given twice in this mapping (first at line %d); keep one", key.Value, line)}
		}
		first[key.Value] = key.Line
	}
	return nil
}

// scalarMismatch says what a scalar field of kind t expected when n does
// not fit it; "" when it fits (or t is not a scalar).
func scalarMismatch(n *yaml.Node, t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			return "a string"
		}
	case reflect.Bool:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
			return "true or false"
		}
	case reflect.Int, reflect.Int64, reflect.Int32:
		if _, err := strconv.ParseInt(n.Value, 0, 64); n.Kind != yaml.ScalarNode || err != nil {
			return "a whole number"
		}
	}
	return ""
}

// describe says what a YAML node is, for an error message.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return fmt.Sprintf("%q", n.Value)
}

// yamlFields maps a struct's YAML keys to their field types.
func yamlFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = f.Type
	}
	return out
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// didYouMean is "; did you mean "x"?" for the known value closest to v, or "".
func didYouMean(v string, known []string) string {
	if best := suggest.Closest(v, known); best != "" {
		return fmt.Sprintf("; did you mean %q?", best)
	}
	return ""
}
