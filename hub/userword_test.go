package hub_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
)

// The policy sees the user of an rpc.call as one word, UserWord's: "*"
// asks for the user named "*", not for every user, and "a.b" is not a
// user "a" with more words. rpc.whoami gives the word too.
func TestAddressUserIsAName(t *testing.T) {
	var mu sync.Mutex
	var asked []string
	rh := startHub(t, &hub.Options{Policy: func(_ context.Context, a hub.Action, target string) error {
		if a == hub.Address {
			mu.Lock()
			asked = append(asked, target)
			mu.Unlock()
		}
		return nil
	}})
	for _, user := range []string{"*", "a.b", "john.doe@example.com", "alice"} {
		got := rh.post(t, fmt.Sprintf(`{"jsonrpc":"2.0","method":"rpc.call","params":{"user":%q,"method":"echo"},"id":1}`, user))
		testkit.JSONEqual(t, `{"jsonrpc":"2.0","id":1,"result":{"results":[]}}`, got)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := "[user.:2a user.a:2eb user.john:2edoe:40example:2ecom user.alice]"; fmt.Sprint(asked) != want {
		t.Fatalf("the policy was asked about %v, want %s", asked, want)
	}
}

func TestWhoAmIUserWord(t *testing.T) {
	rh := userHub(t)
	c := rh.dialAs(t, "john.doe@example.com", nil)
	var me struct{ ID, User, UserWord string }
	if err := c.Call(ctx(t), "rpc.whoami", nil, &me); err != nil {
		t.Fatal(err)
	}
	if me.User != "john.doe@example.com" || me.UserWord != "john:2edoe:40example:2ecom" || me.ID == "" {
		t.Fatalf("rpc.whoami = %+v", me)
	}
	anon := startHub(t, nil)
	got := anon.post(t, `{"jsonrpc":"2.0","method":"rpc.whoami","id":1}`)
	if strings.Contains(got, "userWord") {
		t.Fatalf("an anonymous caller got a word: %s", got)
	}
}

func ExampleUserWord() {
	fmt.Println(hub.UserWord("alice"))
	fmt.Println(hub.UserWord("*"))
	fmt.Println(hub.UserWord("john.doe@example.com"))
	fmt.Println("user." + hub.UserWord("auth0|abc") + ".inbox")
	// Output:
	// alice
	// :2a
	// john:2edoe:40example:2ecom
	// user.auth0:7cabc.inbox
}
