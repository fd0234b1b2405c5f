package local

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/cairnhq/cairn/internal/tokens"
	"github.com/cairnhq/cairn/store"
)

// tokenSigner signs small JSON claims into URL-safe tokens with a key kept
// in the store, so every runner on it checks the tokens of the others:
// "<prefix><payload>.<mac>", base64url without padding, where mac =
// HMAC-SHA256(key, "<prefix><payload>"). Action links and callback URLs
// each have their own key and prefix.
type tokenSigner struct {
	secrets store.Secrets
	keyName string // where the key is kept in the store
	prefix  string // versions the format, and tells one kind of token from another
	mu      sync.Mutex
	k       []byte // read once
}

// maxSignedToken bounds what open reads.
const maxSignedToken = 2048

func (s *tokenSigner) key(ctx context.Context) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.k != nil {
		return s.k, nil
	}
	k, err := sharedKey(ctx, s.secrets, s.keyName)
	if err != nil {
		return nil, fmt.Errorf("%s key: %w", s.keyName, err)
	}
	s.k = k
	return k, nil
}

// seal signs claims.
func (s *tokenSigner) seal(ctx context.Context, claims any) (string, error) {
	key, err := s.key(ctx)
	if err != nil {
		return "", err
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	signed := s.prefix + base64.RawURLEncoding.EncodeToString(payload)
	return signed + "." + base64.RawURLEncoding.EncodeToString(tokens.MAC(key, signed)), nil
}

// open checks token's signature and decodes its claims into v. A token
// that is not one of this signer's (notOurs), altered or malformed is
// bad(why); an error reading the key is returned as is.
func (s *tokenSigner) open(ctx context.Context, token string, v any, bad func(why string) error, notOurs string) error {
	if len(token) > maxSignedToken || !strings.HasPrefix(token, s.prefix) {
		return bad(notOurs)
	}
	for i := range len(token) {
		if !tokens.IsTokenByte(token[i]) {
			return bad(fmt.Sprintf("byte %d (%q) is not part of a token", i, token[i]))
		}
	}
	payloadText, sigText, ok := strings.Cut(token[len(s.prefix):], ".")
	ok = ok && !strings.Contains(sigText, ".")
	signed := s.prefix + payloadText
	sig, err := base64.RawURLEncoding.Strict().DecodeString(sigText)
	if !ok || err != nil || len(sig) != sha256.Size {
		return bad("the signature is missing or malformed")
	}
	key, err := s.key(ctx)
	if err != nil {
		return err
	}
	if !hmac.Equal(sig, tokens.MAC(key, signed)) {
		return bad("the signature does not match (altered, or signed by another server)")
	}
	payload, err := base64.RawURLEncoding.Strict().DecodeString(payloadText)
	if err != nil || json.Unmarshal(payload, v) != nil {
		return bad("the payload is malformed")
	}
	return nil
}
