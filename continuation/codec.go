// Package continuation signs and verifies the tokens of stateless
// invocations (cairn.Runner.Invoke and Continue): a paused session's whole
// state, held by the client, that any server with the key can resume once.
package continuation

import (
	"bytes"
	"compress/flate"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/cairnhq/cairn/internal/tokens"
	"github.com/cairnhq/cairn/session"
)

// Token formats: "cairn.v2.<payload>.<mac>", both parts base64url without
// padding, mac = HMAC-SHA256(key, "cairn.v2.<payload>"), the payload
// compressed with DEFLATE: the Continuation's JSON (one line), a newline,
// then its Snapshot. Version 1 (issued before) was the Continuation's JSON
// with the whole event log, uncompressed; it still decodes.
const (
	tokenPrefix   = "cairn.v2."
	tokenPrefixV1 = "cairn.v1."
)

// maxContinuationJSON bounds what a token's payload may inflate to, so a
// small token cannot make the server allocate without limit.
const maxContinuationJSON = 64 << 20

// MaxBytes bounds the size of a token: the codec refuses to
// decode a longer one, and a stateless turn whose paused session would need
// a longer one fails with the code "too_large" instead of handing out a
// token no server would take (the HTTP API accepts a body of this size plus
// room for the decisions).
const MaxBytes = 4 << 20

// Continuation is the decoded content of a continuation token: a paused
// session's state, so any process holding the key can resume it.
type Continuation struct {
	// ID is unique per token; a token resumes once (see store.Ledger).
	ID string `json:"tid"`
	// KeyID names the key that signed it, for rotation.
	KeyID string `json:"kid"`
	Agent string `json:"agent"`
	// Snapshot is the paused session's state (the tokens Cairn issues). It
	// follows the JSON header in the payload, so it is neither re-encoded
	// nor scanned twice.
	Snapshot json.RawMessage `json:"-"`
	// Events is the paused session's whole log instead (version 1 tokens).
	Events []session.Event `json:"events,omitempty"`
}

// Codec signs and verifies continuation tokens with HMAC-SHA256. The first
// key signs; every key verifies, so keys can be rotated by putting the new
// one first. Tokens are authenticated, not encrypted: do not put secrets in
// what a client holds.
type Codec struct {
	keys [][]byte
	// Compressors cost about 1 MB each to make: Encode reuses them.
	writers sync.Pool // of *flate.Writer
}

// NewCodec returns a codec for keys (at least one, each at least 32 bytes).
func NewCodec(keys ...[]byte) (*Codec, error) {
	if len(keys) == 0 {
		return nil, errors.New("cairn: a continuation codec needs a key")
	}
	for i, k := range keys {
		if len(k) < 32 {
			return nil, fmt.Errorf("cairn: continuation key %d is %d bytes; use at least 32 random bytes", i, len(k))
		}
	}
	return &Codec{keys: keys}, nil
}

func keyID(key []byte) string {
	h := sha256.Sum256(append([]byte("cairn-kid:"), key...))
	return hex.EncodeToString(h[:4])
}

// Encode signs c with the first key, setting c.ID (if empty) and c.KeyID.
func (c *Codec) Encode(cont *Continuation) (string, error) {
	if cont.ID == "" {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", err
		}
		cont.ID = "tok_" + hex.EncodeToString(b[:])
	}
	cont.KeyID = keyID(c.keys[0])
	var payload bytes.Buffer
	zw, _ := c.writers.Get().(*flate.Writer)
	if zw == nil {
		var err error
		if zw, err = flate.NewWriter(&payload, flate.BestSpeed); err != nil {
			return "", err
		}
	} else {
		zw.Reset(&payload)
	}
	defer c.writers.Put(zw)
	if err := json.NewEncoder(zw).Encode(cont); err != nil { // a line: Encode ends it with '\n'
		return "", err
	}
	if _, err := zw.Write(cont.Snapshot); err != nil {
		return "", err
	}
	if err := zw.Close(); err != nil {
		return "", err
	}
	signed := tokenPrefix + base64.RawURLEncoding.EncodeToString(payload.Bytes())
	return signed + "." + base64.RawURLEncoding.EncodeToString(tokens.MAC(c.keys[0], signed)), nil
}

// invalid is an ErrInvalidContinuation; a %w in format makes that error
// its cause, reachable with errors.Is and errors.As.
func invalid(format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	return &session.Error{Code: session.CodeInvalidContinuation, Message: "invalid continuation: " + err.Error(), Err: errors.Unwrap(err)}
}

// Decode verifies a token and returns its content. Any defect gives an
// error that errors.Is ErrInvalidContinuation; it never panics.
func (c *Codec) Decode(token string) (*Continuation, error) {
	if len(token) > MaxBytes {
		return nil, invalid("token is larger than %d bytes", MaxBytes)
	}
	compressed := strings.HasPrefix(token, tokenPrefix)
	if !compressed && !strings.HasPrefix(token, tokenPrefixV1) {
		return nil, invalid("not a cairn token (it must start with %q)", tokenPrefix)
	}
	dot := strings.LastIndexByte(token, '.')
	if dot < len(tokenPrefix) {
		return nil, invalid("the signature is missing")
	}
	// Canonical form only: the base64 decoder skips '\r' and '\n', so a
	// token with inserted line breaks would otherwise verify.
	for i := len(tokenPrefix); i < len(token); i++ {
		if !tokens.IsTokenByte(token[i]) {
			return nil, invalid("byte %d (%q) is not part of a token: send the token exactly as it was issued", i, token[i])
		}
	}
	signed, sigText := token[:dot], token[dot+1:]
	if strings.IndexByte(signed[len(tokenPrefix):], '.') >= 0 {
		return nil, invalid("the token has more than two parts")
	}
	sig, err := base64.RawURLEncoding.Strict().DecodeString(sigText)
	if err != nil || len(sig) != sha256.Size {
		return nil, invalid("the signature is malformed")
	}
	var key []byte
	for _, k := range c.keys {
		if hmac.Equal(sig, tokens.MAC(k, signed)) {
			key = k
			break
		}
	}
	if key == nil {
		return nil, invalid("the signature does not match (modified, truncated, or signed by another server)")
	}
	payload, err := base64.RawURLEncoding.Strict().DecodeString(signed[len(tokenPrefix):])
	if err != nil {
		return nil, invalid("the payload is not base64url: %w", err)
	}
	var snapshot []byte
	if compressed {
		plain, err := io.ReadAll(io.LimitReader(flate.NewReader(bytes.NewReader(payload)), maxContinuationJSON+1))
		if err != nil {
			return nil, invalid("the payload does not inflate: %w", err)
		}
		if len(plain) > maxContinuationJSON {
			return nil, invalid("the payload inflates to more than %d bytes", maxContinuationJSON)
		}
		nl := bytes.IndexByte(plain, '\n')
		if nl < 0 {
			return nil, invalid("the payload has no header line")
		}
		payload, snapshot = plain[:nl], plain[nl+1:]
	}
	var cont Continuation
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cont); err != nil {
		return nil, invalid("the payload is not a continuation: %w", err)
	}
	if dec.More() {
		return nil, invalid("the payload has more than one header")
	}
	if len(snapshot) > 0 {
		cont.Snapshot = snapshot
	}
	if (cont.Snapshot == nil) == (cont.Events == nil) {
		return nil, invalid("the payload must hold a snapshot or events, not both or neither")
	}
	if cont.KeyID != keyID(key) || cont.ID == "" || cont.Agent == "" || len(cont.Snapshot)+len(cont.Events) == 0 {
		return nil, invalid("the payload is incomplete")
	}
	return &cont, nil
}
