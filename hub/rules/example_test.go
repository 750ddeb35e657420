package rules_test

import (
	"fmt"
	"log"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/hub/rules"
)

func ExampleCompile() {
	set, err := rules.Compile([]rules.Rule{
		{Allow: []string{"subscribe"}, To: []string{"user.{user}.>"}, Who: "authenticated"},
		{Allow: []string{"publish"}, To: []string{">"}, Who: "role=backend"},
	})
	if err != nil {
		log.Fatal(err)
	}
	alice := rules.NewIdentity(&rules.Token{Subject: "alice"})
	backend := rules.NewIdentity(&rules.Token{Subject: "orders", Claims: map[string]any{"role": "backend"}})

	fmt.Println(set.Allow(alice, hub.Subscribe, "user.alice.inbox"))
	fmt.Println(set.Allow(alice, hub.Subscribe, "user.bob.inbox"))
	fmt.Println(set.Allow(alice, hub.Publish, "user.alice.inbox"))
	fmt.Println(set.Allow(backend, hub.Publish, "user.alice.inbox"))
	fmt.Println(set.Allow(nil, hub.Subscribe, "user.alice.inbox"))
	// Output:
	// true
	// false
	// false
	// true
	// false
}
