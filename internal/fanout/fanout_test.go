package fanout_test

import (
	"context"
	"testing"

	"github.com/cairnhq/cairn/internal/fanout"
)

func TestEverySubscriberGetsEveryValueInOrder(t *testing.T) {
	f := fanout.New(8, -1)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	a, b := f.Subscribe(ctx), f.Subscribe(ctx)
	for i := range 5 {
		f.Publish(i)
	}
	for _, ch := range []<-chan int{a, b} {
		for want := range 5 {
			if got := <-ch; got != want {
				t.Fatalf("got %d, want %d", got, want)
			}
		}
	}
}

func TestASubscriberThatFellBehindGetsResyncBeforeNewerValues(t *testing.T) {
	f := fanout.New(2, -1)
	ch := f.Subscribe(t.Context())
	for i := range 5 { // 0 and 1 fit; 2, 3, 4 are missed
		f.Publish(i)
	}
	if got := []int{<-ch, <-ch}; got[0] != 0 || got[1] != 1 {
		t.Fatalf("got %v, want the first two values", got)
	}
	f.Publish(5)
	if got := <-ch; got != -1 {
		t.Fatalf("got %d after missing values, want the resync value -1", got)
	}
	if got := <-ch; got != 5 {
		t.Fatalf("got %d, want 5 after the resync", got)
	}
}

func TestTheChannelClosesWhenTheContextEnds(t *testing.T) {
	f := fanout.New(0, "")
	ctx, cancel := context.WithCancel(t.Context())
	ch := f.Subscribe(ctx)
	if !f.Subscribed() {
		t.Fatal("Subscribed() = false with a subscriber")
	}
	cancel()
	if _, open := <-ch; open {
		t.Fatal("the channel is open after its context ended")
	}
	if f.Subscribed() {
		t.Fatal("Subscribed() = true after the only subscriber left")
	}
	f.Publish("after") // must not panic on a closed channel
}

// A subscriber with a filter gets only what it wants, and the values it
// skips neither fill its buffer nor count as missed.
func TestAFilteredSubscriberGetsOnlyWhatItWants(t *testing.T) {
	f := fanout.New(2, -1)
	even := f.SubscribeFunc(t.Context(), func(v int) bool { return v%2 == 0 })
	for i := range 4 { // 1 and 3 are skipped, so 0 and 2 fit
		f.Publish(i)
	}
	if got := []int{<-even, <-even}; got[0] != 0 || got[1] != 2 {
		t.Fatalf("got %v, want 0 and 2", got)
	}
	f.Publish(4)
	if got := <-even; got != 4 {
		t.Fatalf("got %d, want 4 (nothing was missed, so no resync)", got)
	}
	for i := 5; i < 10; i++ { // 6 and 8 fit; nothing else is wanted
		f.Publish(i)
	}
	f.Publish(10) // does not fit: missed
	if got := []int{<-even, <-even}; got[0] != 6 || got[1] != 8 {
		t.Fatalf("got %v, want 6 and 8", got)
	}
	f.Publish(11) // not wanted, but the resync for 10 goes out
	if got := <-even; got != -1 {
		t.Fatalf("got %d after a missed value, want the resync value -1", got)
	}
}
