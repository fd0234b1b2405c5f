package local

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A turn's model-call deadline: a call past its timeout ends with the
// cause; the next call gets a fresh context, which the fired timer
// cannot reach; a call that ends in time leaves the context for the next.
func TestModelDeadlineArmsOneCallAtATime(t *testing.T) {
	var d modelDeadline
	defer d.close()
	parent := t.Context()
	first := errors.New("first call timed out")
	ctx := d.begin(parent, 10*time.Millisecond, first)
	<-ctx.Done() // elapsed time: the 10 ms timeout fires
	if !errors.Is(context.Cause(ctx), first) {
		t.Fatalf("cause %v, want the first call's", context.Cause(ctx))
	}
	d.end()
	second := d.begin(parent, time.Hour, errors.New("second"))
	if second == ctx || second.Err() != nil {
		t.Fatal("the call after a timeout got the spent context")
	}
	d.end()
	if third := d.begin(parent, time.Hour, errors.New("third")); third != second {
		t.Fatal("a call after one that ended in time got a new context: one a call, not one a turn")
	}
	d.end()
	d.close()
	if second.Err() == nil {
		t.Fatal("the turn's end left its call context open")
	}
}

// valueContext is a context type == cannot compare.
type valueContext struct {
	context.Context
	tags []string
}

// A caller's context of a type that == cannot compare is used as a parent
// without comparing it (which would panic).
func TestModelDeadlineTakesAnyParent(t *testing.T) {
	var d modelDeadline
	defer d.close()
	parent := valueContext{Context: t.Context(), tags: []string{"a"}}
	for range 2 {
		ctx := d.begin(parent, time.Hour, errors.New("late"))
		if ctx.Err() != nil {
			t.Fatal("a fresh call context is done")
		}
		d.end()
	}
}
