package rules_test

import (
	"strings"
	"testing"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/hub/rules"
)

// FuzzAllow compiles any pattern into a rule and checks any target
// against it: never a panic, and a pattern always covers itself and is
// covered by ">".
func FuzzAllow(f *testing.F) {
	for _, s := range [][2]string{
		{"user.{user}.>", "user.alice.inbox"}, {"news.*", "news.today"}, {">", "a"},
		{"a.*.c", "a.>"}, {"{user}", "alice"}, {"a..b", "a.b"}, {"", ""}, {"*", "*"},
	} {
		f.Add(s[0], s[1], "alice")
	}
	own, err := rules.Compile([]rules.Rule{{Allow: []string{"subscribe"}, To: []string{"user.{user}.>"}, Who: "anyone"}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, pattern, target, user string) {
		// An identity is a name: its own word only, never a wildcard.
		if got := own.Allow(user, hub.Subscribe, "user."+hub.UserWord(user)+".x"); got != (user != "") {
			t.Errorf("user %q on its own topic: %v", user, got)
		}
		if own.Allow(user, hub.Subscribe, "user.*.x") || own.Allow(user, hub.Subscribe, "user.>") {
			t.Errorf("user %q reaches a wildcard", user)
		}
		set, err := rules.Compile([]rules.Rule{{Allow: []string{"publish"}, To: []string{pattern}, Who: "anyone"}})
		if err != nil {
			return
		}
		set.Allow(user, hub.Publish, target)
		if !strings.Contains(pattern, "{user}") && !set.Allow(nil, hub.Publish, pattern) {
			t.Errorf("%q does not cover itself", pattern)
		}
		all := rules.Demo()
		if target != "" && !all.Allow(nil, hub.Publish, target) && !strings.HasPrefix(target, ".") && !strings.Contains(target, "..") {
			t.Errorf("> does not cover %q", target)
		}
	})
}
