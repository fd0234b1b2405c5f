// Package cond compiles and evaluates CEL conditions over one JSON value
// (a call's arguments, an answer): the approval policies of the
// configuration and the conditions of standing rules, which people write
// at run time and are therefore bounded (length, cost) and cached.
package cond

import (
	"encoding/json"
	"fmt"
	"sync"

	"cel.dev/cel-go/cel"
)

// Condition is a compiled CEL expression that gives a bool.
type Condition struct {
	expr string
	name string
	prg  cel.Program
}

// costLimit bounds one evaluation: a condition a person typed cannot spin
// (a comprehension over a large list stops with an error).
const costLimit = 100_000

// Compile compiles expr over the variable name (the decoded JSON value a
// condition is asked about); it must give a bool.
func Compile(name, expr string) (*Condition, error) {
	env, err := cel.NewEnv(cel.Variable(name, cel.DynType))
	if err != nil {
		return nil, err
	}
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		return nil, iss.Err()
	}
	if ast.OutputType() != cel.BoolType {
		return nil, fmt.Errorf("the expression gives %s, not bool", ast.OutputType())
	}
	prg, err := env.Program(ast, cel.CostLimit(costLimit))
	if err != nil {
		return nil, err
	}
	return &Condition{expr: expr, name: name, prg: prg}, nil
}

// Eval evaluates the condition on v, a decoded JSON value.
func (c *Condition) Eval(v any) (bool, error) {
	out, _, err := c.prg.Eval(map[string]any{c.name: v})
	if err != nil {
		return false, fmt.Errorf("expression %q: %w", c.expr, err)
	}
	b, ok := out.Value().(bool)
	if !ok {
		return false, fmt.Errorf("expression %q gave %v, not a bool", c.expr, out.Value())
	}
	return b, nil
}

// EvalJSON evaluates the condition on raw JSON.
func (c *Condition) EvalJSON(raw json.RawMessage) (bool, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return false, err
	}
	return c.Eval(v)
}

// Cache keeps compiled conditions over one variable by their text: a
// standing rule's condition is compiled once per process, not per call.
// Its size is bounded (it starts over when full). The zero Cache is not
// usable: use NewCache.
type Cache struct {
	name string
	max  int
	mu   sync.Mutex
	m    map[string]cached
}

type cached struct {
	c   *Condition
	err error
}

// NewCache returns a cache of conditions over the variable name, holding
// at most max of them.
func NewCache(name string, max int) *Cache {
	return &Cache{name: name, max: max, m: make(map[string]cached)}
}

// Get compiles expr, or returns it compiled before.
func (k *Cache) Get(expr string) (*Condition, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if c, ok := k.m[expr]; ok {
		return c.c, c.err
	}
	c, err := Compile(k.name, expr)
	if len(k.m) >= k.max {
		clear(k.m)
	}
	k.m[expr] = cached{c, err}
	return c, err
}

// Eval compiles expr (once) and evaluates it on v.
func (k *Cache) Eval(expr string, v any) (bool, error) {
	c, err := k.Get(expr)
	if err != nil {
		return false, err
	}
	return c.Eval(v)
}
