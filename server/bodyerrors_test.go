package server

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzDecodeBody: any body decodes or gets a 400 with a message; never a
// panic (the error explainer walks the body a second time).
func FuzzDecodeBody(f *testing.F) {
	f.Add(`{"seq":3,"decisions":[{"interrupt_id":"i","actoin":"approve"}]}`)
	f.Add(`{"seq":"3"}`)
	f.Add(`[[[[{"x":1}]]]]`)
	f.Add(`{"decisions":[1,{"y":2}]}`)
	f.Fuzz(func(t *testing.T, body string) {
		w := httptest.NewRecorder()
		r := httptest.NewRequest("POST", "/", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		var req decisionsRequest
		if !decodeBody(w, r, &req) && (w.Code != 400 || !strings.Contains(w.Body.String(), `"message"`)) {
			t.Fatalf("body %q: %d %s", body, w.Code, w.Body)
		}
	})
}
