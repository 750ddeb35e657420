package hub_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/switchboard-rpc/switchboard/hub"
)

func TestWatch(t *testing.T) {
	h := hub.New(&hub.Options{Policy: hub.AllowAll})
	ctx := context.Background()
	var mu sync.Mutex
	var seen []uint64
	stop, err := h.Watch("news.sport", func(seq uint64) {
		mu.Lock()
		seen = append(seen, seq)
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = h.Publish(ctx, "news.sport", 1)
	_, _ = h.Publish(ctx, "news.weather", 2) // another topic
	_, _ = h.Publish(ctx, "news.sport", 3)
	if p, _ := h.Presence("news.sport"); len(p) != 0 {
		t.Errorf("a watch is present: %v", p)
	}
	stop()
	_, _ = h.Publish(ctx, "news.sport", 4)
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 || seen[0] != 1 || seen[1] != 3 {
		t.Errorf("watched positions %v, want [1 3]", seen)
	}
	if _, err := h.Watch("news.*", func(uint64) {}); !errors.Is(err, hub.ErrInvalidTopic) {
		t.Errorf("Watch of a pattern: %v, want ErrInvalidTopic", err)
	}
}

func TestAllow(t *testing.T) {
	h := hub.New(nil) // DefaultPolicy: anyone subscribes, nobody publishes
	ctx := context.Background()
	if err := h.Allow(ctx, hub.Subscribe, "news"); err != nil {
		t.Errorf("subscribe: %v", err)
	}
	if err := h.Allow(ctx, hub.Publish, "news"); err == nil {
		t.Error("publish allowed by the default policy")
	}
}
