package store_test

import (
	"testing"

	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/storetest"
)

func TestMemoryConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) store.Store { return store.NewMemory() })
}

func TestMemoryShared(t *testing.T) {
	t.Parallel()
	storetest.RunShared(t, func(t *testing.T) (store.Store, store.Store) {
		m := store.NewMemory()
		return m, m
	})
}
