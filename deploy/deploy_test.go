package deploy

import (
	"bufio"
	"bytes"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// root is the repository's root, where the Makefile and go.mod are.
const root = ".."

// unitFile reads a systemd unit: its settings by section, each key's
// values in order (a key may repeat).
func unitFile(t *testing.T, path string) map[string]map[string][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	unit := map[string]map[string][]string{}
	section := ""
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = strings.Trim(line, "[]")
			unit[section] = map[string][]string{}
		case section != "" && strings.Contains(line, "="):
			k, v, _ := strings.Cut(line, "=")
			unit[section][k] = append(unit[section][k], v)
		default:
			t.Fatalf("%s:%d: %q is no setting", path, n, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return unit
}

// The systemd unit reloads with SIGHUP, stops with SIGTERM (the hub's
// drain), runs the hub as a user of its own with little it may touch, and
// systemd-analyze finds nothing wrong with it where it is installed.
func TestSystemdUnit(t *testing.T) {
	unit := unitFile(t, "switchboard.service")
	svc := unit["Service"]
	for key, want := range map[string]string{
		"ExecStart":               "/usr/local/bin/hub -config /etc/switchboard/hub.yaml",
		"ExecStartPre":            "/usr/local/bin/hub check-config /etc/switchboard/hub.yaml",
		"ExecReload":              "/bin/kill -HUP $MAINPID",
		"DynamicUser":             "yes",
		"NoNewPrivileges":         "yes",
		"ProtectSystem":           "strict",
		"ProtectHome":             "yes",
		"PrivateTmp":              "yes",
		"CapabilityBoundingSet":   "",
		"RestrictAddressFamilies": "AF_INET AF_INET6 AF_UNIX",
		"SystemCallErrorNumber":   "EPERM",
	} {
		if got := svc[key]; len(got) != 1 || got[0] != want {
			t.Errorf("[Service] %s = %q, want %q", key, got, want)
		}
	}
	if k := svc["KillSignal"]; len(k) > 0 && k[0] != "SIGTERM" {
		t.Errorf("KillSignal %q: the hub drains on SIGTERM", k)
	}
	if got := unit["Install"]["WantedBy"]; len(got) != 1 || got[0] != "multi-user.target" {
		t.Errorf("[Install] WantedBy = %q", got)
	}

	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Log("systemd-analyze is not installed: the unit is checked by the parse above only")
		return
	}
	// verify wants the binaries to exist: any executable stands in for the hub.
	text, err := os.ReadFile("switchboard.service")
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "switchboard.service")
	if err := os.WriteFile(path, bytes.ReplaceAll(text, []byte("/usr/local/bin/hub"), []byte(self)), 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(analyze, "verify", "--man=no", path)
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil || stderr.Len() > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, stderr.String())
	}
	// The exposure systemd-analyze computes, 0 to 10: at most 2 ("OK").
	out, err := exec.Command(analyze, "security", "--offline=true", "--threshold=20", path).CombinedOutput()
	if err != nil {
		t.Errorf("systemd-analyze security: %v\n%s", err, out)
	}
	if i := bytes.Index(out, []byte("Overall exposure level")); i >= 0 {
		t.Logf("%s", bytes.TrimSpace(out[i:]))
	}
}

// instruction is one line of a Dockerfile, continuations joined.
type instruction struct{ op, args string }

// dockerfile reads a Dockerfile into its stages.
func dockerfile(t *testing.T, path string) [][]instruction {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var stages [][]instruction
	var global []instruction
	joined := strings.ReplaceAll(string(text), "\\\n", " ")
	for line := range strings.Lines(joined) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		op, args, _ := strings.Cut(line, " ")
		in := instruction{strings.ToUpper(op), strings.TrimSpace(args)}
		switch {
		case in.op == "FROM":
			stages = append(stages, []instruction{in})
		case len(stages) == 0:
			global = append(global, in) // ARGs before the first FROM
		default:
			stages[len(stages)-1] = append(stages[len(stages)-1], in)
		}
	}
	if len(global) > 0 && len(stages) > 0 {
		stages[0] = append(global, stages[0]...)
	}
	return stages
}

// The Dockerfile builds in one stage and runs in another, as a user
// without privileges; its build steps, run here as a script, make a
// static binary that says the version it was given.
func TestDockerfile(t *testing.T) {
	stages := dockerfile(t, "Dockerfile")
	if len(stages) < 2 {
		t.Fatalf("%d stages, want a build stage and a run stage", len(stages))
	}
	final := stages[len(stages)-1]
	var user, entry string
	for _, in := range final {
		switch in.op {
		case "USER":
			user = in.args
		case "ENTRYPOINT":
			entry = in.args
		case "RUN":
			t.Errorf("the run stage runs %q: it has no shell", in.args)
		}
	}
	if user == "" || strings.HasPrefix(user, "root") || strings.HasPrefix(user, "0") {
		t.Errorf("the image runs as %q, want a user without privileges", user)
	}
	if entry != `["/usr/local/bin/hub"]` {
		t.Errorf("ENTRYPOINT %s", entry)
	}

	// The build stage's RUN steps, as a script in the repository's root,
	// its /out a directory of the test's; ARGs keep their defaults but
	// VERSION.
	out := t.TempDir()
	const version = "v0.0.0-dockerfile-test"
	env := append(os.Environ(), "VERSION="+version)
	var script []string
	for _, in := range stages[0] {
		switch in.op {
		case "ARG":
			if name, def, ok := strings.Cut(in.args, "="); ok && name != "VERSION" {
				env = append(env, name+"="+def)
			}
		case "RUN":
			script = append(script, strings.ReplaceAll(in.args, "/out/", out+"/"))
		}
	}
	if len(script) == 0 {
		t.Fatal("the build stage runs nothing")
	}
	cmd := exec.Command("sh", "-ec", strings.Join(script, "\n"))
	cmd.Dir = root
	cmd.Env = env
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the build steps: %v\n%s", err, b)
	} else if !strings.Contains(string(b), "hub "+version+" (") {
		t.Errorf("the build's hub version said %q, want %s", b, version)
	}
	bin := filepath.Join(out, "hub")
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the hub is linked dynamically (it has an interpreter): the distroless static image has no libc")
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("the hub needs %q", libs)
	}
}

// make dist builds a release archive per target with the version stamped
// into the hub (here only the machine's own target, which it can run).
func TestDist(t *testing.T) {
	dist := t.TempDir()
	const version = "v0.0.0-dist-test"
	target := runtime.GOOS + "/" + runtime.GOARCH
	cmd := exec.Command("make", "-s", "dist", "VERSION="+version, "TARGETS="+target)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "DIST="+dist)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make dist: %v\n%s", err, b)
	}
	name := "switchboard-" + version + "-" + runtime.GOOS + "-" + runtime.GOARCH
	archive := filepath.Join(dist, name+".tar.gz")
	if runtime.GOOS == "windows" {
		t.Fatal("this test extracts a tar.gz")
	}
	sums, err := os.ReadFile(filepath.Join(dist, "SHA256SUMS"))
	if err != nil || !strings.Contains(string(sums), name+".tar.gz") {
		t.Errorf("SHA256SUMS: %q, %v", sums, err)
	}
	unpacked := t.TempDir()
	if b, err := exec.Command("tar", "-xzf", archive, "-C", unpacked).CombinedOutput(); err != nil {
		t.Fatalf("tar: %v\n%s", err, b)
	}
	for _, f := range []string{"hub", "rpc", "README.md", "LICENSE", "hub.example.yaml", "switchboard.service"} {
		if _, err := os.Stat(filepath.Join(unpacked, name, f)); err != nil {
			t.Errorf("the archive has no %s: %v", f, err)
		}
	}
	b, err := exec.Command(filepath.Join(unpacked, name, "hub"), "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(b), "hub "+version+" (") {
		t.Errorf("hub version: %q, %v; want %s", b, err, version)
	}
}
