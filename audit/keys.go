package audit

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/store"
)

// Key signs checkpoints (session.Checkpoint) with an Ed25519 private key
// under an id that each checkpoint names, so that a verifier holding
// several public keys (after a rotation) knows which one to use. It is
// what cairn.RunnerOptions.Signer takes.
type Key struct {
	id      string
	private ed25519.PrivateKey
}

// NewKey returns a Key signing with private under id ("" names it by its
// public key: KeyID).
func NewKey(id string, private ed25519.PrivateKey) (*Key, error) {
	if len(private) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("audit: an Ed25519 private key is %d bytes, not %d", ed25519.PrivateKeySize, len(private))
	}
	pub := private.Public().(ed25519.PublicKey)
	if id == "" {
		id = KeyID(pub)
	}
	if err := checkKeyID(id); err != nil {
		return nil, err
	}
	return &Key{id: id, private: private}, nil
}

// ID is the id each checkpoint the key signs names.
func (k *Key) ID() string { return k.id }

// Public is the key's public half: what verifiers need.
func (k *Key) Public() ed25519.PublicKey { return k.private.Public().(ed25519.PublicKey) }

// Sign signs a checkpoint of session id: its log up to seq ends in the
// event whose hash is hash; at is when (kept to the microsecond, as
// signed).
func (k *Key) Sign(id string, seq int64, hash string, at time.Time) session.Checkpoint {
	cp := session.Checkpoint{Seq: seq, Hash: hash, At: at.UTC().Truncate(time.Microsecond), Key: k.id}
	cp.Sig = base64.StdEncoding.EncodeToString(ed25519.Sign(k.private, session.CheckpointMessage(id, cp)))
	return cp
}

// KeyID names a public key when its config gives it no id: "k" and the
// first 16 hex digits of its SHA-256.
func KeyID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return "k" + hex.EncodeToString(sum[:8])
}

// checkKeyID refuses ids that would not survive a round trip through a
// config file and a JSON lines export.
func checkKeyID(id string) error {
	if id == "" || len(id) > 64 || strings.ContainsFunc(id, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.')
	}) {
		return fmt.Errorf("audit: key id %q: use 1 to 64 letters, digits, '-', '_' or '.'", id)
	}
	return nil
}

// Keys are the public keys a verifier trusts, by key id.
type Keys map[string]ed25519.PublicKey

// Add trusts pub under id; a second, different key under the same id is
// an error (a checkpoint names one key).
func (ks Keys) Add(id string, pub ed25519.PublicKey) error {
	if err := checkKeyID(id); err != nil {
		return err
	}
	if len(pub) != ed25519.PublicKeySize {
		return fmt.Errorf("audit: key %s: an Ed25519 public key is %d bytes, not %d", id, ed25519.PublicKeySize, len(pub))
	}
	if have, ok := ks[id]; ok && !have.Equal(pub) {
		return fmt.Errorf("audit: key id %s names two different public keys: give each key an id of its own", id)
	}
	ks[id] = pub
	return nil
}

// Check verifies cp's signature as a checkpoint of session id: nil, or
// what is wrong, in words.
func (ks Keys) Check(id string, cp session.Checkpoint) error {
	pub, ok := ks[cp.Key]
	if !ok {
		return fmt.Errorf("it is signed by key %q, which is not among the keys trusted (%s)", cp.Key, ks.names())
	}
	sig, err := base64.StdEncoding.DecodeString(cp.Sig)
	if err != nil || !ed25519.Verify(pub, session.CheckpointMessage(id, cp), sig) {
		return fmt.Errorf("its signature by key %s does not verify: the checkpoint was changed, or made without the key", cp.Key)
	}
	return nil
}

func (ks Keys) names() string {
	if len(ks) == 0 {
		return "none"
	}
	var names []string
	for id := range ks {
		names = append(names, id)
	}
	return strings.Join(names, ", ")
}

// ParsePrivateKey reads an Ed25519 private key: PEM (PKCS #8, what
// `openssl genpkey -algorithm ed25519` writes) or the standard base64 of
// its 32-byte seed or 64-byte key.
func ParsePrivateKey(text string) (ed25519.PrivateKey, error) {
	if block, _ := pem.Decode([]byte(strings.TrimSpace(text))); block != nil {
		k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("audit: the PEM private key: %w", err)
		}
		priv, ok := k.(ed25519.PrivateKey)
		if !ok {
			return nil, fmt.Errorf("audit: the PEM private key is a %T, not Ed25519 (make one with `openssl genpkey -algorithm ed25519`)", k)
		}
		return priv, nil
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(text))
	switch {
	case err != nil:
		return nil, errors.New("audit: a private key is PEM or base64 (make one with `openssl genpkey -algorithm ed25519` or `cairn audit keygen`)")
	case len(raw) == ed25519.SeedSize:
		return ed25519.NewKeyFromSeed(raw), nil
	case len(raw) == ed25519.PrivateKeySize:
		return ed25519.NewKeyFromSeed(raw[:ed25519.SeedSize]), nil
	}
	return nil, fmt.Errorf("audit: a base64 private key is a %d-byte seed, not %d bytes", ed25519.SeedSize, len(raw))
}

// ParsePublicKey reads an Ed25519 public key: PEM (PKIX, what `openssl
// pkey -pubout` writes) or the standard base64 of its 32 bytes.
func ParsePublicKey(text string) (ed25519.PublicKey, error) {
	if block, _ := pem.Decode([]byte(strings.TrimSpace(text))); block != nil {
		k, err := x509.ParsePKIXPublicKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("audit: the PEM public key: %w", err)
		}
		pub, ok := k.(ed25519.PublicKey)
		if !ok {
			return nil, fmt.Errorf("audit: the PEM public key is a %T, not Ed25519", k)
		}
		return pub, nil
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(text))
	if err != nil || len(raw) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("audit: a public key is PEM or the base64 of %d bytes", ed25519.PublicKeySize)
	}
	return ed25519.PublicKey(raw), nil
}

// EncodePublicKey is the standard base64 of pub: how exports and configs
// write public keys.
func EncodePublicKey(pub ed25519.PublicKey) string { return base64.StdEncoding.EncodeToString(pub) }

// storeKeyName is the secret the store's own signing key is kept under.
const storeKeyName = "audit.signing-key.v1"

// StoreKey returns the signing key kept in the store's secrets, making it
// the first time (every process sharing the store gets the same key).
// A key kept in the store proves nothing against someone who can read the
// store: docs/operations.md says when to give the config a key instead.
func StoreKey(ctx context.Context, secrets store.Secrets) (*Key, error) {
	seed := make([]byte, ed25519.SeedSize)
	if _, err := rand.Read(seed); err != nil {
		return nil, err
	}
	kept, err := secrets.Secret(ctx, storeKeyName, seed)
	if err != nil {
		return nil, fmt.Errorf("audit: the store's signing key: %w", err)
	}
	if len(kept) != ed25519.SeedSize {
		return nil, fmt.Errorf("audit: the store's signing key (secret %s) is %d bytes, not %d: it was changed", storeKeyName, len(kept), ed25519.SeedSize)
	}
	return NewKey("", ed25519.NewKeyFromSeed(kept))
}
