package postgres_test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/postgres"
	"github.com/cairnhq/cairn/store/storetest"
)

// PostgresURL returns the test server's URL; .ci/run starts a throwaway
// cluster and sets CAIRN_TEST_POSTGRES.
func postgresURL(t *testing.T) string {
	url := os.Getenv("CAIRN_TEST_POSTGRES")
	if url == "" {
		t.Skip("CAIRN_TEST_POSTGRES is not set; .ci/run starts a PostgreSQL server and sets it (see .ci/postgres)")
	}
	return url
}

var dbCounter atomic.Int64

// freshDatabase creates an empty database for one subtest.
func freshDatabase(t *testing.T, url string) string {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	name := fmt.Sprintf("cairn_t%d_%d", os.Getpid(), dbCounter.Add(1))
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(ctx, url)
		if err == nil {
			c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
			c.Close(ctx)
		}
	})
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("postgres://%s@%s:%d/%s?sslmode=disable", cfg.User, cfg.Host, cfg.Port, name)
}

func TestPostgresConformance(t *testing.T) {
	url := postgresURL(t)
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := postgres.Open(context.Background(), freshDatabase(t, url))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

func TestPostgresShared(t *testing.T) {
	url := postgresURL(t)
	storetest.RunShared(t, func(t *testing.T) (store.Store, store.Store) {
		db := freshDatabase(t, url)
		var out [2]store.Store
		for i := range out {
			s, err := postgres.Open(context.Background(), db)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			out[i] = s
		}
		return out[0], out[1]
	})
}
