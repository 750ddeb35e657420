package main

import (
	"context"
	"flag"
	"time"

	"github.com/switchboard-rpc/switchboard/hub"
	"go.uber.org/zap"
)

// routeFlags are the flags of the methods peers provide to each other.
type routeFlags struct {
	allowProvide   bool
	forwardTimeout time.Duration
	maxForwards    int
}

func (r *routeFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&r.allowProvide, "allow-provide", false, "let any peer provide methods to the others (rpc.provide; on with -demo); use -token-file to keep strangers out")
	fs.DurationVar(&r.forwardTimeout, "forward-timeout", hub.DefaultForwardTimeout, "the longest `duration` a call forwarded to a peer may take (over it, -32003; negative: no bound)")
	fs.IntVar(&r.maxForwards, "max-forwards", hub.DefaultMaxForwards, "most forwarded `calls` waiting for one provider (more wait for one to end, up to -forward-timeout)")
}

// apply sets the hub options of the flags (-allow-provide is the policy's:
// see newState). With rules (hasRules), -allow-provide has no effect: the
// rules say who may provide, and log is told so.
func (r *routeFlags) apply(o *hub.Options, hasRules bool, log *zap.Logger) {
	o.ForwardTimeout = r.forwardTimeout
	o.MaxForwards = r.maxForwards
	if msg := r.ignored(hasRules); msg != "" {
		log.Warn(msg)
	}
}

// ignored says why -allow-provide is ignored, "" when it is not.
func (r *routeFlags) ignored(hasRules bool) string {
	if r.allowProvide && hasRules {
		return "allow-provide is ignored: the config file has rules, and only they say who may provide (allow: [provide])"
	}
	return ""
}

// allowProvide is the default policy, except that any peer may provide
// methods.
func allowProvide(ctx context.Context, a hub.Action, name string) error {
	if a == hub.Provide {
		return nil
	}
	return hub.DefaultPolicy(ctx, a, name)
}
