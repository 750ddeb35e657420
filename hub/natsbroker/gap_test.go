package natsbroker_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
)

// A node names the topics of its recent events to a node that missed
// them, says it does not know those of another run or not sent yet, and
// sends its latest number at once when asked for it (as a node whose
// link is back asks).
func TestGapAnswersAndMarks(t *testing.T) {
	url := startNATS(t)
	a := startNode(t, url, "a", false)
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	subjects := make(chan string, 100)
	if _, err := nc.Subscribe("switchboard.ev.a.>", func(m *nats.Msg) { subjects <- m.Subject }); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	for _, topic := range []string{"g.x", "g.y", "g.x"} {
		if _, err := a.h.Publish(t.Context(), topic, 1); err != nil {
			t.Fatal(err)
		}
	}
	var run string
	for i := 0; i < 3; {
		s := testkit.Recv(t, subjects, "a's events")
		parts := strings.Split(s, ".")
		if len(parts) > 5 { // an event, not a mark
			run = parts[3]
			i++
		}
	}
	ask := func(run string, from, to uint64) string {
		t.Helper()
		msg, err := nc.Request("switchboard.gap.a", fmt.Appendf(nil, `{"run":%q,"from":%d,"to":%d}`, run, from, to), testkit.Wait)
		if err != nil {
			t.Fatal(err)
		}
		var a struct {
			Topics []string
			All    bool
		}
		if err := json.Unmarshal(msg.Data, &a); err != nil {
			t.Fatal(err)
		}
		if a.All {
			return "all"
		}
		slices.Sort(a.Topics)
		return strings.Join(a.Topics, ",")
	}
	for _, tc := range []struct {
		run      string
		from, to uint64
		want     string
	}{
		{run, 2, 3, "g.x,g.y"},
		{run, 1, 1, "g.x"},
		{run, 2, 2, "g.y"},
		{"other", 1, 1, "all"},
		{run, 3, 4, "all"},
	} {
		if got := ask(tc.run, tc.from, tc.to); got != tc.want {
			t.Errorf("topics of %s %d-%d: %s, want %s", tc.run, tc.from, tc.to, got, tc.want)
		}
	}
	// Asked for marks, a sends its latest number, though it did already.
	mark := "switchboard.ev.a." + run + ".3"
	deadline := time.After(testkit.Wait)
	for seen := 0; seen < 2; {
		if err := nc.Publish("switchboard.marks", nil); err != nil {
			t.Fatal(err)
		}
		select {
		case s := <-subjects:
			if s == mark {
				seen++
			}
		case <-deadline:
			t.Fatalf("no mark %s twice within %v", mark, testkit.Wait)
		}
	}
}
