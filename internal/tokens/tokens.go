// Package tokens holds what the two kinds of signed token Cairn hands out
// (continuation tokens and action links) share: their MAC and their
// alphabet.
package tokens

import (
	"crypto/hmac"
	"crypto/sha256"
)

// MAC is HMAC-SHA256 of s under key.
func MAC(key []byte, s string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(s))
	return m.Sum(nil)
}

// IsTokenByte reports whether b may appear after a token's prefix: the
// base64url alphabet and the dots between its parts.
func IsTokenByte(b byte) bool {
	return 'A' <= b && b <= 'Z' || 'a' <= b && b <= 'z' || '0' <= b && b <= '9' || b == '-' || b == '_' || b == '.'
}
