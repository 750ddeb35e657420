package main

import (
	"context"
	"flag"
	"time"

	"github.com/switchboard-rpc/switchboard/hub"
)

// routeFlags are the flags of the methods peers provide to each other.
type routeFlags struct {
	allowProvide   bool
	forwardTimeout time.Duration
	maxForwards    int
}

func (r *routeFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&r.allowProvide, "allow-provide", false, "let any peer provide methods to the others (rpc.provide; on with -demo); use -token-file to keep strangers out")
	fs.DurationVar(&r.forwardTimeout, "forward-timeout", hub.DefaultForwardTimeout, "how long a call forwarded to a peer may `take` (over it, -32003; negative: no bound)")
	fs.IntVar(&r.maxForwards, "max-forwards", hub.DefaultMaxForwards, "most forwarded `calls` waiting for one provider (more wait for one to end, up to -forward-timeout)")
}

// apply sets the hub options of the flags. -allow-provide is the
// policy's (see newState).
func (r *routeFlags) apply(o *hub.Options) {
	o.ForwardTimeout = r.forwardTimeout
	o.MaxForwards = r.maxForwards
}

// allowProvide is the default policy, except that any peer may provide
// methods.
func allowProvide(ctx context.Context, a hub.Action, name string) error {
	if a == hub.Provide {
		return nil
	}
	return hub.DefaultPolicy(ctx, a, name)
}
