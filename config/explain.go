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
// adds to errs each mistake in the file's own terms (up to
// maxConfigErrors): the key path, its line, what was expected and what
// came, with a "did you mean" for an unknown key. The YAML decoder's own
// errors name Go types instead ("field max_iteration not found in type
// config.AgentConfig"), and stop at the first; a file with four typos is
// told all four at once. errs stays empty when the walk finds nothing
// (then the decoder's error stands).
func (l *loader) explain(n *yaml.Node, t reflect.Type, path string, errs *[]*Error) {
	if len(*errs) >= maxConfigErrors {
		return
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) > 0 {
			l.explain(n.Content[0], t, path, errs)
		}
		return
	}
	if n.Kind == yaml.AliasNode || t.Kind() == reflect.Interface || (n.Kind == yaml.ScalarNode && n.Tag == "!!null") {
		return
	}
	if n.Kind == yaml.MappingNode {
		if e := l.duplicateKey(n, path); e != nil {
			*errs = append(*errs, e)
			return
		}
	}
	wrong := func(expected string) {
		*errs = append(*errs, &Error{File: l.path, Line: n.Line, Path: path, Msg: fmt.Sprintf("expected %s, got %s", expected, describe(n))})
	}
	if n.Kind == yaml.ScalarNode && reflect.PointerTo(t).Implements(reflect.TypeFor[yaml.Unmarshaler]()) {
		return // the type reads a scalar its own way (handoffs: [billing])
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			wrong("a mapping (key: value lines)")
			return
		}
		fields := yamlFields(t)
		known := sortedKeys(fields)
		for i := 0; i+1 < len(n.Content) && len(*errs) < maxConfigErrors; i += 2 {
			key, val := n.Content[i], n.Content[i+1]
			ft, ok := fields[key.Value]
			if !ok {
				msg := fmt.Sprintf("unknown key %q (known here: %s)%s", key.Value, strings.Join(known, ", "), suggest.Hint(key.Value, known))
				*errs = append(*errs, &Error{File: l.path, Line: key.Line, Path: join(path, key.Value), Msg: msg})
				continue
			}
			l.explain(val, ft, join(path, key.Value), errs)
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			wrong("a mapping (name: value lines)")
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			l.explain(n.Content[i+1], t.Elem(), join(path, n.Content[i].Value), errs)
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			wrong("a list ([a, b] or - lines)")
			return
		}
		for i, el := range n.Content {
			l.explain(el, t.Elem(), fmt.Sprintf("%s[%d]", path, i), errs)
		}
	default:
		if expected := scalarMismatch(n, t); expected != "" {
			wrong(expected)
		}
	}
}

// maxConfigErrors bounds how many mistakes of a file are told at once.
const maxConfigErrors = 10

// Errors are several mistakes of one file, in file order, told at once.
type Errors []*Error

// Error is one line per mistake.
func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap gives each mistake, for errors.As.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
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
