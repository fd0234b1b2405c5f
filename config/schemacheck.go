package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"cel.dev/cel-go/cel"
	celast "cel.dev/cel-go/common/ast"

	"github.com/cairnhq/cairn/internal/suggest"
)

// checkRequired refuses a schema (at key path p) whose required list
// names a property its properties do not define, at any depth: every call
// of the tool would be refused for an argument the model is never told of
// (a typo, most often).
func (l *loader) checkRequired(p string, schema map[string]any) error {
	props, hasProps := schema["properties"].(map[string]any)
	if req, ok := schema["required"].([]any); ok && hasProps {
		names := slices.Sorted(maps.Keys(props))
		for i, r := range req {
			name, _ := r.(string)
			if _, ok := props[name]; !ok {
				return l.errf(fmt.Sprintf("%s.required", p), "required[%d] %q is not one of the properties (%s): every call would be refused for it; name a property, or add it under properties%s",
					i, name, strings.Join(names, ", "), suggest.Hint(name, names))
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(props)) {
		if sub, ok := props[name].(map[string]any); ok {
			if err := l.checkRequired(p+".properties."+name, sub); err != nil {
				return err
			}
		}
	}
	if items, ok := schema["items"].(map[string]any); ok {
		return l.checkRequired(p+".items", items)
	}
	return nil
}

// ruleReadsUnknownArgs warns (returns one warning per name) when the CEL
// rule at key path p reads an argument (args.x, args["x"], has(args.x))
// that the tool's parameters, whose properties are props, do not have: the
// rule never sees a value there, which is a typo more often than not.
func ruleReadsUnknownArgs(p, rule string, props map[string]any) []string {
	if props == nil {
		return nil
	}
	var out []string
	names := slices.Sorted(maps.Keys(props))
	for _, name := range argsRead(rule) {
		if _, ok := props[name]; !ok {
			out = append(out, fmt.Sprintf("%s: the rule reads args.%s, which the tool's parameters do not have (%s)%s; it never sees a value there",
				p, name, strings.Join(names, ", "), suggest.Hint(name, names)))
		}
	}
	return out
}

// argsRead lists, in order and once each, the top-level arguments a CEL
// rule over args reads; none when it does not parse (load refuses it).
func argsRead(rule string) []string {
	env, err := cel.NewEnv(cel.Variable("args", cel.DynType))
	if err != nil {
		return nil
	}
	ast, iss := env.Parse(rule)
	if iss.Err() != nil {
		return nil
	}
	var out []string
	add := func(name string) {
		if name != "" && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	isArgs := func(e celast.Expr) bool { return e.Kind() == celast.IdentKind && e.AsIdent() == "args" }
	root := celast.NavigateAST(ast.NativeRep())
	for _, e := range celast.MatchDescendants(root, func(e celast.NavigableExpr) bool {
		return e.Kind() == celast.SelectKind || e.Kind() == celast.CallKind
	}) {
		switch e.Kind() {
		case celast.SelectKind:
			if sel := e.AsSelect(); isArgs(sel.Operand()) {
				add(sel.FieldName())
			}
		case celast.CallKind:
			call := e.AsCall()
			if args := call.Args(); call.FunctionName() == "_[_]" && len(args) == 2 && isArgs(args[0]) && args[1].Kind() == celast.LiteralKind {
				if s, ok := args[1].AsLiteral().Value().(string); ok {
					add(s)
				}
			}
		default:
		}
	}
	return out
}
