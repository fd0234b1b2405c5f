package server

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"
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

// A number a field cannot hold and a lone surrogate get errors that say
// what is wrong; neither is stored changed.
func TestNumberAndSurrogateErrors(t *testing.T) {
	cases := []struct{ body, want string }{
		{`{"seq":` + strings.Repeat("9", 100000) + `,"decisions":[]}`, `seq: 99999999999999999999… (100000 characters) is out of range: expected a whole number that fits in 64 bits`},
		{`{"seq":1.5,"decisions":[]}`, `seq: expected a whole number, got 1.5`},
		{`{"seq":1,"decisions":[{"interrupt_id":"i","action":"reject","reason":"a\ud800b"}]}`, `lone UTF-16 surrogate escape \ud800 at byte 71`},
		{`{"seq":1,"decisions":[{"interrupt_id":"i","action":"reject","reason":"\udc00"}]}`, `lone UTF-16 surrogate escape \udc00`},
	}
	for _, c := range cases {
		w := httptest.NewRecorder()
		r := httptest.NewRequest("POST", "/", strings.NewReader(c.body))
		r.Header.Set("Content-Type", "application/json")
		var req decisionsRequest
		decoded := decodeBody(w, r, &req)
		var answer struct{ Error struct{ Message string } }
		if err := json.Unmarshal(w.Body.Bytes(), &answer); err != nil {
			t.Fatal(err)
		}
		if decoded || w.Code != 400 || !strings.Contains(answer.Error.Message, c.want) {
			t.Errorf("%.60s: %d %s\nwant %q", c.body, w.Code, w.Body, c.want)
		}
	}
	// A pair, an escaped backslash before a u, and plain UTF-8 pass.
	for _, ok := range []string{`"\ud83d\ude00"`, `"\\ud800"`, `"é😀"`} {
		if at, lone := loneSurrogate([]byte(ok)); lone {
			t.Errorf("%s: lone surrogate at %d", ok, at)
		}
	}
}

func FuzzLoneSurrogate(f *testing.F) {
	for _, s := range []string{`"\ud800"`, `"\ud83d\ude00"`, `"\\ud800"`, `"\u00e9"`, `\`, `"\ud800\u"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		at, lone := loneSurrogate([]byte(s))
		if lone && (at+6 > len(s) || s[at:at+2] != `\u`) {
			t.Fatalf("%q: offset %d", s, at)
		}
		// Agreement with encoding/json: a valid JSON string without a lone
		// surrogate decodes without U+FFFD unless it holds one itself.
		var v string
		if !lone && json.Unmarshal([]byte(s), &v) == nil && strings.ContainsRune(v, utf8.RuneError) && !strings.Contains(s, "\\ufffd") && !strings.Contains(s, "\\uFFFD") && !strings.ContainsRune(s, utf8.RuneError) {
			t.Fatalf("%q decodes to %q with U+FFFD, but no lone surrogate was found", s, v)
		}
	})
}
