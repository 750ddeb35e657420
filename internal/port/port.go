// Package port picks local addresses for listeners that tests and the
// load generator stop and start again on the same port: a hub restarted,
// a NATS server brought back.
package port

import (
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// Restartable returns a free 127.0.0.1:port outside the kernel's range
// of ephemeral ports, so that no outgoing connection takes the port while
// its listener is down: a thousand clients reconnecting to a restarted
// hub took its admin port so, in a port of that range that the kernel
// had picked. Where the range leaves no room below it, any free port.
func Restartable() (string, error) {
	low := 32768 // Linux's default start of the ephemeral range
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				low = n
			}
		}
	}
	const from = 10000 // above the ports of common services
	if low > from+1000 {
		for range 100 {
			if a, err := free("127.0.0.1:" + strconv.Itoa(from+rand.IntN(low-from))); err == nil {
				return a, nil
			}
		}
	}
	return free("127.0.0.1:0")
}

// free listens on addr and closes at once, returning the address.
func free(addr string) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
