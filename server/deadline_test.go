package server

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/model"
	"github.com/cairnhq/cairn/model/scripted"
)

// An event stream outlives the server's whole-request read and write
// timeouts (which otherwise cancel its context and close it), while a
// plain request still gets them.
func TestStreamOutlivesRequestTimeouts(t *testing.T) {
	ctx := context.Background()
	r, err := cairn.NewRunner([]*cairn.Agent{
		{Name: "main", Model: scripted.New(scripted.Reply{Text: "hi"})},
		{Name: "slow", Model: slowModel{}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	sess, err := r.Start(ctx, "main", "hello", nil)
	if err != nil {
		t.Fatal(err)
	}
	s := New(r, nil)
	s.heartbeat, s.readTimeout, s.writeTimeout = 100*time.Millisecond, 300*time.Millisecond, 300*time.Millisecond
	srv := s.HTTPServer()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }() // ends with the test
	defer srv.Close()
	req, _ := http.NewRequest("GET", "http://"+ln.Addr().String()+"/v1/sessions/"+sess.ID+"/events", nil)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	start := time.Now()
	beats := 0
	for time.Since(start) < 1500*time.Millisecond {
		if !sc.Scan() {
			t.Fatalf("the stream ended after %s (%d heartbeats): %v", time.Since(start), beats, sc.Err())
		}
		if strings.HasPrefix(sc.Text(), ": keep-alive") && time.Since(start) > 600*time.Millisecond {
			beats++
		}
	}
	if beats == 0 {
		t.Fatal("no heartbeat after the request timeouts passed")
	}
	// A turn longer than the write timeout still gets its answer.
	resp2, err := http.Post("http://"+ln.Addr().String()+"/v1/sessions", "application/json", strings.NewReader(`{"agent":"slow","input":"hi"}`))
	if err != nil {
		t.Fatalf("a turn longer than the write timeout: %v", err)
	}
	resp2.Body.Close()
	if resp2.StatusCode != 201 {
		t.Fatalf("a turn longer than the write timeout: %d", resp2.StatusCode)
	}
}

// slowModel answers after 600 ms, twice the test's write timeout.
type slowModel struct{}

func (slowModel) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	time.Sleep(600 * time.Millisecond) // elapsed time: a model slower than the write timeout
	return &model.Response{Message: model.Message{Role: model.RoleAssistant, Content: "done"}}, nil
}
