package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"sync"
)

// The wire system is what the cycle costs with nothing but the wire: a
// relay written with net/http and encoding/json that answers Cairn's two
// requests of a cycle, calling the fake model once for each, and keeps
// nothing but the pending call of each session in a map — no engine, no
// log, no store. No server built on net/http does the cycle for less on
// this machine, so its ratio to ADK bounds what any Cairn ratio can reach
// (docs/performance.md: the one-client rows).

// serveWireFlag, as the first argument, makes this binary the relay.
const serveWireFlag = "-serve-wire"

// wireModelRequest is the Responses request the relay sends.
type wireModelRequest struct {
	Model        string          `json:"model"`
	Instructions string          `json:"instructions"`
	Input        []wireInputItem `json:"input"`
	Tools        json.RawMessage `json:"tools"`
}

type wireInputItem struct {
	Type      string `json:"type,omitempty"`
	Role      string `json:"role,omitempty"`
	Content   string `json:"content,omitempty"`
	CallID    string `json:"call_id,omitempty"`
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments,omitempty"`
	Output    string `json:"output,omitempty"`
}

// wireModelReply is what the relay reads of a Response.
type wireModelReply struct {
	Output []struct {
		Type      string `json:"type"`
		CallID    string `json:"call_id"`
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
		Content   []struct {
			Text string `json:"text"`
		} `json:"content"`
	} `json:"output"`
}

var wireTools = json.RawMessage(`[{"type":"function","name":"lookup","description":"Look up.","parameters":{"type":"object","properties":{"q":{"type":"string"}}},"strict":false}]`)

// wireRelay is the relay's state: each paused session's call.
type wireRelay struct {
	modelURL string
	client   *http.Client
	mu       sync.Mutex
	pending  map[string]wireInputItem
}

// serveWire runs the relay until the process is killed.
func serveWire(modelURL string) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 256
	r := &wireRelay{modelURL: modelURL, client: &http.Client{Transport: tr}, pending: map[string]wireInputItem{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/sessions", r.create)
	mux.HandleFunc("POST /v1/sessions/{id}/decisions", r.decide)
	mux.HandleFunc("/debug/pprof/", pprof.Index) // -profile compares it with Cairn's
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	fmt.Fprintf(os.Stderr, "listening on http://%s\n", ln.Addr())
	return http.Serve(ln, mux)
}

func (r *wireRelay) model(items []wireInputItem) (*wireModelReply, error) {
	body, err := json.Marshal(wireModelRequest{Model: "bench-model", Instructions: "be brief", Input: items, Tools: wireTools})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequest("POST", r.modelURL+"/responses", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer bench")
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	var reply wireModelReply
	if err := json.Unmarshal(raw, &reply); err != nil {
		return nil, err
	}
	if len(reply.Output) == 0 {
		return nil, fmt.Errorf("the model answered no output")
	}
	return &reply, nil
}

func (r *wireRelay) create(w http.ResponseWriter, req *http.Request) {
	var in struct{ Agent, Input string }
	if err := json.NewDecoder(req.Body).Decode(&in); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	reply, err := r.model([]wireInputItem{{Role: "user", Content: in.Input}})
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	call := reply.Output[0]
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	id := hex.EncodeToString(b[:])
	r.mu.Lock()
	r.pending[id] = wireInputItem{Type: "function_call", CallID: call.CallID, Name: call.Name, Arguments: call.Arguments}
	r.mu.Unlock()
	answer(w, map[string]any{"id": id, "seq": 5, "status": "paused", "interrupts": []map[string]any{
		{"id": "int_" + call.CallID, "kind": "approval", "tool": call.Name, "args": json.RawMessage(call.Arguments)},
	}})
}

func (r *wireRelay) decide(w http.ResponseWriter, req *http.Request) {
	var in struct {
		Seq       int64
		Decisions []struct{ InterruptID, Action string } `json:"decisions"`
	}
	if err := json.NewDecoder(req.Body).Decode(&in); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	id := req.PathValue("id")
	r.mu.Lock()
	call, ok := r.pending[id]
	delete(r.pending, id)
	r.mu.Unlock()
	if !ok || len(in.Decisions) != 1 {
		http.Error(w, "no such pause", http.StatusConflict)
		return
	}
	reply, err := r.model([]wireInputItem{{Role: "user", Content: "go"}, call, {Type: "function_call_output", CallID: call.CallID, Output: call.Arguments}})
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	out := ""
	if c := reply.Output[0].Content; len(c) > 0 {
		out = c[0].Text
	}
	answer(w, map[string]any{"id": id, "seq": 9, "status": "completed", "output": out})
}

func answer(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v) // the client hung up: nothing to do
}
