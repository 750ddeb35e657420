package port

import (
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
)

// The address is free, on 127.0.0.1, and below the ephemeral range when
// the kernel says where that range starts.
func TestRestartable(t *testing.T) {
	low := 0
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		low, _ = strconv.Atoi(strings.Fields(string(b))[0])
	}
	for range 20 {
		addr, err := Restartable()
		if err != nil {
			t.Fatal(err)
		}
		host, p, _ := net.SplitHostPort(addr)
		n, _ := strconv.Atoi(p)
		if host != "127.0.0.1" || n <= 0 || low > 11000 && (n < 10000 || n >= low) {
			t.Fatalf("%s: want 127.0.0.1 and a port in [10000, %d)", addr, low)
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("%s is not free: %v", addr, err)
		}
		ln.Close()
	}
}
