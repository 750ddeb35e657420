package main

import (
	"encoding/pem"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboard-rpc/switchboard/internal/hubtest"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
)

// TestCA: -ca, or $RPC_CA, names the CA file that makes the hub's
// self-signed certificate trusted, over https:// and wss://.
func TestCA(t *testing.T) {
	h := hubtest.Start(t, &hubtest.Options{TLS: true})
	dir := t.TempDir()
	ca := testkit.WriteFile(t, filepath.Join(dir, "ca.pem"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: h.Certificate().Raw}))
	for _, url := range []string{h.HTTP(), h.WS()} {
		t.Run(url[:strings.Index(url, ":")], func(t *testing.T) {
			rpc(t, "", "call", "-ca", ca, url, "add", "1", "2").check(t, 0, "3\n")
			rpcEnv(t, []string{"RPC_CA=" + ca}, "", "call", url, "add", "1", "2").check(t, 0, "3\n")
			r := rpc(t, "", "call", url, "add", "1", "2")
			r.check(t, exitConn, "")
			if !strings.Contains(r.stderr, "certificate") {
				t.Errorf("without the CA: stderr %q", r.stderr)
			}
		})
	}
	notPEM := testkit.WriteFile(t, filepath.Join(dir, "not.pem"), []byte("hello\n"))
	for _, file := range []string{notPEM, filepath.Join(dir, "missing.pem")} {
		if r := rpc(t, "", "call", "-ca", file, h.HTTP(), "add", "1", "2"); r.code != exitUsage || !strings.Contains(r.stderr, "-ca") {
			t.Errorf("-ca %s: exit %d, stderr %q", filepath.Base(file), r.code, r.stderr)
		}
	}
}
