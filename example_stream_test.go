package cairn_test

import (
	"context"
	"fmt"
	"log"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/model/scripted"
)

// Stream yields a turn's events as they are recorded (and, for a model that
// streams, its text deltas).
func ExampleStream() {
	ctx := context.Background()
	model := &scripted.Model{Replies: []scripted.Reply{{Text: "Hello there!"}}, Stream: true}
	runner, err := cairn.NewRunner([]*cairn.Agent{{Name: "greeter", Model: model}}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer runner.Close()
	for ev, err := range cairn.Stream(func(observe func(cairn.Event)) (*cairn.Session, error) {
		return runner.Start(ctx, "greeter", "hi", &cairn.StartOptions{Observe: observe})
	}) {
		if err != nil {
			fmt.Println(err)
			return
		}
		if ev.Type == cairn.EventModelDelta {
			fmt.Println(ev.Seq, ev.Type, string(ev.Data))
		} else {
			fmt.Println(ev.Seq, ev.Type)
		}
	}
	// Output:
	// 1 session_started
	// 2 user_message
	// 0 model_delta {"text":"Hello "}
	// 0 model_delta {"text":"there!"}
	// 3 model_response
	// 4 turn_completed
}
