package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/switchboard-rpc/switchboard/internal/hubtest"
)

// startNATS runs a NATS server on 127.0.0.1 that requires the user and
// password, or the token when user is "", until the test ends, and
// returns its host:port.
func startNATS(t *testing.T, user, password, token string) string {
	t.Helper()
	ns := hubtest.StartNATS(t, &natsserver.Options{Username: user, Password: password, Authorization: token})
	return ns.Addr().String()
}

// failedRun runs the hub as a process with args, which must make it exit
// with status 2, and returns what it wrote.
func failedRun(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "HUB_TEST_RUN_MAIN=1", "HUB_TEST_ARGS="+strings.Join(args, " "))
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
		t.Fatalf("hub %q: %v, want exit status 2\n%s", args, err, out)
	}
	return string(out)
}

// TestURLSecretsNeverLogged: the password or token of a NATS URL and the
// query of a JWKS URL appear nowhere in what the hub writes, joined or
// not, nor in check-config's output, nor in the error it exits with. The
// URLs are there, redacted, so the log still says where.
func TestURLSecretsNeverLogged(t *testing.T) {
	const secret = "s3cret-8b1f"
	withPassword := "nats://hub:" + secret + "@" + startNATS(t, "hub", secret, "")
	withToken := "nats://" + secret + "@" + startNATS(t, "", "", secret)
	nowhere := "nats://hub:" + secret + "@" + hubtest.DeadAddr(t)
	jwks := "http://" + hubtest.DeadAddr(t) + "/jwks.json?token=" + secret

	check := func(what, text string, want ...string) {
		t.Helper()
		if strings.Contains(text, secret) {
			t.Errorf("%s holds the secret:\n%s", what, text)
		}
		for _, w := range want {
			if !strings.Contains(text, w) {
				t.Errorf("%s lacks %q: the test does not see what it should\n%s", what, w, text)
			}
		}
	}
	p := startProc(t, "-nats", withPassword+","+withToken, "-node", "n1")
	p.Addr(t, "hub listening")
	check("the log of a hub that joined", p.Stop(t), `"msg":"joined cluster"`, `"nats":"nats://hub:REDACTED@`, `,nats://REDACTED@`, `"msg":"cluster link up"`)

	p = startProc(t, "-nats", withToken)
	p.Addr(t, "hub listening")
	check("the log of a hub that joined with a token", p.Stop(t), `"msg":"cluster link up"`, `"url":"nats://REDACTED@`)

	p = startProc(t, "-nats", nowhere, "-jwks", jwks)
	p.Addr(t, "hub listening")
	check("the log of a hub that has not joined", p.Stop(t), `"msg":"cluster not joined yet`, `"nats":"nats://hub:REDACTED@`,
		`"msg":"jwks fetch failed"`, `/jwks.json?token=REDACTED"`)

	check("the error of a hub that cannot reach NATS", failedRun(t, "-addr", "127.0.0.1:0", "-nats", nowhere, "-nats-jetstream", "-nats-timeout", "500ms"),
		"hub: natsbroker: NATS unreachable at nats://hub:REDACTED@")

	var out, stderr bytes.Buffer
	file := writeFile(t, "hub.yaml", "nats: "+withToken+","+withPassword+"\njwks: "+jwks+"\n")
	if err := checkConfig([]string{file}, &out, &stderr); err != nil {
		t.Fatal(err)
	}
	check("check-config's output", out.String()+stderr.String(), "nats: nats://REDACTED@", ",nats://hub:REDACTED@", "/jwks.json?token=REDACTED\n")
	bad := writeFile(t, "bad.yaml", "jwks: ftp://"+secret+"@login.example/jwks?token="+secret+"\n")
	if err := checkConfig([]string{bad}, io.Discard, io.Discard); err == nil {
		t.Error("an ftp:// JWKS URL passed")
	} else {
		check("check-config's error", err.Error(), "ftp://REDACTED@login.example/jwks?token=REDACTED")
	}
}
