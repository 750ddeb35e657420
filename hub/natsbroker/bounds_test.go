package natsbroker_test

import (
	"testing"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/hub/natsbroker"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// Nodes started with different history flags: the last to start sets the
// stream's bounds for all, and says so at warn, with the old and new
// bounds; a node with the same flags says nothing.
func TestStreamBoundsChangedWarns(t *testing.T) {
	url := startNATS(t)
	start := func(name string, events int) *observer.ObservedLogs {
		core, logs := observer.New(zap.WarnLevel)
		startNodeWith(t, &natsbroker.Options{URLs: url, Node: name, JetStream: true,
			Retention: hub.Retention{Events: events}, Logger: zap.New(core)})
		return logs
	}
	if logs := start("a", 10); logs.Len() != 0 {
		t.Fatalf("the node creating the stream warned: %v", logs.All())
	}
	if logs := start("b", 10); logs.Len() != 0 {
		t.Fatalf("a node with the same flags warned: %v", logs.All())
	}
	logs := start("c", 20)
	changed := logs.FilterMessageSnippet("cluster stream bounds changed").All()
	if len(changed) != 1 {
		t.Fatalf("a node with other flags logged %v, want one warning", logs.All())
	}
	f := changed[0].ContextMap()
	if f["events_per_topic_was"] != int64(10) || f["events_per_topic"] != int64(20) || f["stream"] != "SWITCHBOARD" {
		t.Fatalf("warning's fields %v", f)
	}
}
