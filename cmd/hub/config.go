package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/switchboard-rpc/switchboard/hub/rules"
	"github.com/switchboard-rpc/switchboard/internal/redact"
	"go.yaml.in/yaml/v3"
)

// A config file (-config FILE, YAML or JSON) holds the flags as keys of
// the same names, plus "rules". Each flag takes, in order of precedence:
// the command line, the SWITCHBOARD_<NAME> environment variable (the name
// upper case, "-" as "_"), the file, its default. The mapping walks the
// FlagSet, so every flag is covered, whoever adds it.

// envPrefix starts the environment variable of each flag.
const envPrefix = "SWITCHBOARD_"

// envName returns the environment variable of a flag.
func envName(flagName string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// fileConfig is what a config file says beyond the flags, and what the
// environment holds that the hub ignores.
type fileConfig struct {
	rules    []rules.Rule
	hasRules bool
	ignored  []ignoredVar
	// origin says where each flag set other than on the command line got
	// its value: "FILE:LINE" or the environment variable.
	origin map[string]string
}

// ignoredVar is a SWITCHBOARD_ environment variable that sets nothing:
// an empty one, or one that names no flag. The hub logs each at start and
// check-config prints them.
type ignoredVar struct{ name, reason string }

// applyConfig sets the flags of fs not given on the command line from the
// environment and from the config file, if any (-config, or
// SWITCHBOARD_CONFIG). fs has been parsed.
//
// An empty value, in the environment or the file, counts as unset: the
// next source down holds. "SWITCHBOARD_JWT_AUDIENCE=", which a template
// writes when its variable is unset, must not clear the audience the file
// requires, nor an empty SWITCHBOARD_ADDR bind every interface.
func applyConfig(fs *flag.FlagSet) (*fileConfig, error) {
	onCommandLine := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { onCommandLine[f.Name] = true })
	fromEnv := map[string]bool{}
	fc := &fileConfig{ignored: unknownVars(fs), origin: map[string]string{}}
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		v, ok := os.LookupEnv(envName(f.Name))
		if !ok || onCommandLine[f.Name] || err != nil {
			return
		}
		if strings.TrimSpace(v) == "" {
			fc.ignored = append(fc.ignored, ignoredVar{envName(f.Name), "empty: counts as unset"})
			return
		}
		fromEnv[f.Name] = true
		fc.origin[f.Name] = envName(f.Name)
		if e := fs.Set(f.Name, v); e != nil {
			err = fmt.Errorf("%s: %w", envName(f.Name), wantForm(f, v, e))
		}
	})
	if err != nil {
		return nil, err
	}
	path := fs.Lookup("config").Value.String()
	if path == "" {
		return fc, nil
	}
	data, err := readConfigFile(path)
	if err != nil {
		return nil, err
	}
	values, file, err := parseConfig(data, fs)
	if err != nil {
		return nil, fmt.Errorf("%s:%w", path, err)
	}
	fc.rules, fc.hasRules = file.rules, file.hasRules
	for _, kv := range values {
		if onCommandLine[kv.name] || fromEnv[kv.name] || strings.TrimSpace(kv.value) == "" {
			continue
		}
		fc.origin[kv.name] = fmt.Sprintf("%s:%d", path, kv.line)
		if err := fs.Set(kv.name, kv.value); err != nil {
			return nil, fmt.Errorf("%s:%d: %s: %w", path, kv.line, kv.name, wantForm(fs.Lookup(kv.name), kv.value, err))
		}
	}
	return fc, nil
}

// unknownVars lists the SWITCHBOARD_ environment variables that name no
// flag, each with the one it most likely meant.
func unknownVars(fs *flag.FlagSet) []ignoredVar {
	var out []ignoredVar
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, envPrefix) {
			continue
		}
		flagName := strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(name, envPrefix), "_", "-"))
		if fs.Lookup(flagName) != nil && envName(flagName) == name {
			continue
		}
		reason := "names no setting of the hub"
		if s := suggest(flagName, fs); s != "" {
			reason += fmt.Sprintf(" (did you mean %s?)", envName(s))
		}
		out = append(out, ignoredVar{name, reason})
	}
	slices.SortFunc(out, func(a, b ignoredVar) int { return strings.Compare(a.name, b.name) })
	return out
}

// The bounds of a config file, which the hub and check-config share by
// loading a file the same way: its size, checked before it is parsed, and
// its rules, checked before aliases are expanded and rules compiled. A
// YAML alias lets a few bytes stand for a long list; each (action,
// pattern) pair is an entry the hub holds and looks through when it
// decides.
const (
	maxConfigBytes  = 1 << 20 // 1 MiB
	maxRules        = 10_000
	maxRulePatterns = 100_000 // pairs of an action and a pattern, over all rules, aliases expanded
)

// readConfigFile reads a config file of at most maxConfigBytes.
func readConfigFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxConfigBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxConfigBytes {
		return nil, fmt.Errorf("%s: more than %d bytes (1 MiB), the most a config file may hold", path, maxConfigBytes)
	}
	return data, nil
}

type keyValue struct {
	name, value string
	line        int
}

// parseConfig reads a config file: a mapping whose keys are flag names or
// "rules". An unknown key is an error naming it and its line; so is a
// value that is neither a scalar nor a list of scalars (a list becomes a
// comma-separated value).
func parseConfig(data []byte, fs *flag.FlagSet) ([]keyValue, *fileConfig, error) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &fileConfig{}, nil // an empty file
		}
		return nil, nil, fmt.Errorf(" %w", err)
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind != yaml.MappingNode {
		return nil, nil, fmt.Errorf("%d: the config is a mapping of keys to values", root.Line)
	}
	fc := &fileConfig{}
	var values []keyValue
	seen := map[string]int{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if prev, dup := seen[k.Value]; dup {
			return nil, nil, fmt.Errorf("%d: key %q again (first on line %d)", k.Line, k.Value, prev)
		}
		seen[k.Value] = k.Line
		if k.Value == "rules" {
			rs, err := parseRules(v)
			if err != nil {
				return nil, nil, err
			}
			fc.rules, fc.hasRules = rs, true
			continue
		}
		if k.Value == "config" || fs.Lookup(k.Value) == nil {
			hint := ""
			if s := suggest(k.Value, fs); s != "" {
				hint = fmt.Sprintf(" (did you mean %q?)", s)
			}
			return nil, nil, fmt.Errorf("%d: unknown key %q%s", k.Line, k.Value, hint)
		}
		var value string
		switch v.Kind {
		case yaml.ScalarNode:
			value = v.Value
		case yaml.SequenceNode:
			parts := make([]string, 0, len(v.Content))
			for _, e := range v.Content {
				if e.Kind != yaml.ScalarNode {
					return nil, nil, fmt.Errorf("%d: %s: a list of plain values", e.Line, k.Value)
				}
				parts = append(parts, e.Value)
			}
			value = strings.Join(parts, ",")
		default:
			return nil, nil, fmt.Errorf("%d: %s: want a value or a list, not a mapping", v.Line, k.Value)
		}
		values = append(values, keyValue{k.Value, value, k.Line})
	}
	return values, fc, nil
}

// parseRules reads the "rules" list, refusing unknown keys by line, and
// compiles it to check it.
func parseRules(n *yaml.Node) ([]rules.Rule, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("%d: rules is a list", n.Line)
	}
	if len(n.Content) > maxRules {
		return nil, fmt.Errorf("%d: %d rules, more than the %d a config file may hold", n.Line, len(n.Content), maxRules)
	}
	known := []string{"allow", "to", "who"}
	out := make([]rules.Rule, 0, len(n.Content))
	patterns := 0
	for _, r := range n.Content {
		if r.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("%d: a rule is a mapping of allow, to and who", r.Line)
		}
		lens := map[string]int{}
		for i := 0; i+1 < len(r.Content); i += 2 {
			k := r.Content[i]
			if !slices.Contains(known, k.Value) {
				return nil, fmt.Errorf("%d: unknown key %q in a rule (want allow, to, who)", k.Line, k.Value)
			}
			lens[k.Value] = listLen(r.Content[i+1])
		}
		if patterns += lens["allow"] * lens["to"]; patterns > maxRulePatterns {
			return nil, fmt.Errorf("%d: the rules so far make more than %d pairs of an action and a pattern (aliases expanded), the most a config file may hold", r.Line, maxRulePatterns)
		}
		var rule rules.Rule
		if err := r.Decode(&rule); err != nil {
			return nil, fmt.Errorf("%d: %w", r.Line, err)
		}
		if _, err := rules.Compile([]rules.Rule{rule}); err != nil {
			return nil, fmt.Errorf("%d: %s", r.Line, strings.TrimPrefix(err.Error(), "rule 1: "))
		}
		out = append(out, rule)
	}
	return out, nil
}

// listLen returns the number of elements of a list, following an alias,
// without expanding anything: 1 for what is not a list.
func listLen(n *yaml.Node) int {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind != yaml.SequenceNode {
		return 1
	}
	return len(n.Content)
}

// suggest returns the flag a mistyped key most likely meant, or "".
func suggest(key string, fs *flag.FlagSet) string {
	best, bestDist := "", 3
	fs.VisitAll(func(f *flag.Flag) {
		if d := editDistance(key, f.Name); d < bestDist {
			best, bestDist = f.Name, d
		}
	})
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// printConfig writes the effective configuration as a config file would
// hold it: every flag, then the rules. Secrets are redacted.
func printConfig(w io.Writer, fs *flag.FlagSet, fc *fileConfig) error {
	var root yaml.Node
	root.Kind = yaml.MappingNode
	fs.VisitAll(func(f *flag.Flag) {
		if f.Name == "config" {
			return
		}
		k := &yaml.Node{Kind: yaml.ScalarNode, Value: f.Name}
		v := &yaml.Node{Kind: yaml.ScalarNode, Value: redactFlag(f.Name, f.Value.String())}
		root.Content = append(root.Content, k, v)
	})
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(&root); err != nil {
		return err
	}
	if err := enc.Close(); err != nil {
		return err
	}
	if !fc.hasRules {
		return nil
	}
	return printRules(w, fc.rules)
}

// printRules writes the rules list one rule at a time, so that what it
// holds is one rule's YAML, not the whole list's.
func printRules(w io.Writer, rs []rules.Rule) error {
	if len(rs) == 0 {
		_, err := io.WriteString(w, "rules: []\n")
		return err
	}
	bw := bufio.NewWriter(w)
	bw.WriteString("rules:\n")
	var one bytes.Buffer
	for i := range rs {
		one.Reset()
		enc := yaml.NewEncoder(&one)
		enc.SetIndent(2)
		if err := enc.Encode(rs[i : i+1]); err != nil {
			return err
		}
		if err := enc.Close(); err != nil {
			return err
		}
		for line := range strings.Lines(one.String()) {
			bw.WriteString("  " + line)
		}
	}
	return bw.Flush()
}

// redactFlag hides secrets: the value of a flag named for one (a
// password, a secret, a token itself rather than its file), and those of
// every URL in a value ("nats://user:pass@host", "nats://token@host",
// "https://login.example/jwks?token=...").
func redactFlag(name, value string) string {
	if value == "" {
		return value
	}
	for _, s := range []string{"password", "secret", "-token"} {
		if strings.HasSuffix(name, s) || name == strings.TrimPrefix(s, "-") {
			return redact.Mark
		}
	}
	return redact.Text(value)
}
