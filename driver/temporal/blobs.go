package temporal

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"

	"github.com/cairnhq/cairn/store"
)

// DefaultBlobAbove is the payload size from which payloads go to Cairn's
// store and Temporal keeps a reference: well under Temporal's 2 MB limit
// per payload, so that long conversations (a model request holds the
// whole conversation) keep histories small.
const DefaultBlobAbove = 256 << 10

// blobEncoding marks a payload that is a reference to a stored blob.
const blobEncoding = "binary/cairn-blob-ref"

// blobCodec is the claim-check codec: a payload larger than above is
// stored in the blobs by its SHA-256 and replaced by a reference; the
// reference is read back on decode. Every client and worker of a cluster
// must share the store (they do: the store is the mirror).
type blobCodec struct {
	blobs store.Blobs
	above int
}

// NewBlobDataConverter returns the default data converter with payloads
// over above bytes (0: DefaultBlobAbove) kept in blobs and passed by
// reference. Dial sets it up when ClientOptions.Blobs is set.
func NewBlobDataConverter(blobs store.Blobs, above int) converter.DataConverter {
	if above <= 0 {
		above = DefaultBlobAbove
	}
	return converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), &blobCodec{blobs: blobs, above: above})
}

// Encode implements converter.PayloadCodec.
func (c *blobCodec) Encode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		if proto.Size(p) <= c.above {
			out[i] = p
			continue
		}
		b, err := proto.Marshal(p)
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(b)
		key := "sha256:" + hex.EncodeToString(sum[:])
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err = c.blobs.PutBlob(ctx, key, b)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("cairn: store a %d-byte payload: %w", len(b), err)
		}
		out[i] = &commonpb.Payload{Metadata: map[string][]byte{converter.MetadataEncoding: []byte(blobEncoding)}, Data: []byte(key)}
	}
	return out, nil
}

// Decode implements converter.PayloadCodec.
func (c *blobCodec) Decode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		if string(p.GetMetadata()[converter.MetadataEncoding]) != blobEncoding {
			out[i] = p
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		b, err := c.blobs.GetBlobs(ctx, []string{string(p.Data)})
		cancel()
		if err != nil {
			return nil, fmt.Errorf("cairn: read the payload %s: %w", p.Data, err)
		}
		var full commonpb.Payload
		if err := proto.Unmarshal(b[0], &full); err != nil {
			return nil, fmt.Errorf("cairn: payload %s: %w", p.Data, err)
		}
		out[i] = &full
	}
	return out, nil
}
