package testwait_test

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/testkit/testwait"
)

func TestForWaitsUntilTheConditionHolds(t *testing.T) {
	var n atomic.Int32
	go func() {
		for range 3 {
			time.Sleep(5 * time.Millisecond) // elapsed time: the condition comes true later
			n.Add(1)
		}
	}()
	testwait.For(t, time.Minute, "three ticks", func() bool { return n.Load() == 3 })
}

// fatal records a failure and ends its goroutine, as testing.T does.
type fatal struct {
	testing.TB
	msg string
}

func (f *fatal) Helper() {}
func (f *fatal) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestForFailsNamingWhatDidNotHappen(t *testing.T) {
	f := &fatal{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		testwait.For(f, time.Millisecond, "the moon", func() bool { return false })
	}()
	<-done
	if f.msg != "waited 1ms for the moon" {
		t.Fatalf("For failed with %q", f.msg)
	}
}
