package temporal

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"os"

	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"

	"github.com/cairnhq/cairn/store"
)

// ClientOptions say how to reach a Temporal cluster.
type ClientOptions struct {
	HostPort, Namespace string
	// CertFile and KeyFile are a client certificate (mTLS); CAFile the CA
	// of the server's certificate; ServerName the name to check it
	// against. TLS is on when any is set, or with an APIKey.
	CertFile, KeyFile, CAFile, ServerName string
	// APIKey authenticates to Temporal Cloud.
	APIKey string
	// Logger receives the SDK's logs; nil means slog.Default().
	Logger *slog.Logger
	// Blobs, when set, keeps payloads over BlobAbove bytes (0:
	// DefaultBlobAbove) and Temporal a reference (see
	// NewBlobDataConverter). The API and every worker must use the same.
	Blobs     store.Blobs
	BlobAbove int
}

// Dial connects to Temporal and checks that the namespace answers.
func Dial(ctx context.Context, o ClientOptions) (client.Client, error) {
	opts := client.Options{HostPort: o.HostPort, Namespace: o.Namespace, Logger: tlog.NewStructuredLogger(o.Logger)}
	if o.Logger == nil {
		opts.Logger = tlog.NewStructuredLogger(slog.Default())
	}
	if o.CertFile != "" || o.CAFile != "" || o.ServerName != "" || o.APIKey != "" {
		cfg := &tls.Config{ServerName: o.ServerName, MinVersion: tls.VersionTLS12}
		if o.CertFile != "" {
			cert, err := tls.LoadX509KeyPair(o.CertFile, o.KeyFile)
			if err != nil {
				return nil, fmt.Errorf("temporal tls: %w", err)
			}
			cfg.Certificates = []tls.Certificate{cert}
		}
		if o.CAFile != "" {
			pem, err := os.ReadFile(o.CAFile)
			if err != nil {
				return nil, fmt.Errorf("temporal tls: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("temporal tls: %s holds no PEM certificate", o.CAFile)
			}
			cfg.RootCAs = pool
		}
		opts.ConnectionOptions.TLS = cfg
	}
	if o.Blobs != nil {
		opts.DataConverter = NewBlobDataConverter(o.Blobs, o.BlobAbove)
	}
	if o.APIKey != "" {
		opts.Credentials = client.NewAPIKeyStaticCredentials(o.APIKey)
	}
	c, err := client.DialContext(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("temporal at %s (namespace %s): %w", o.HostPort, o.Namespace, err)
	}
	return c, nil
}
