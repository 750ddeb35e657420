package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

var discoverCmd = &command{
	name:    "discover",
	args:    "URL",
	summary: "list the server's methods and their parameters (rpc.discover)",
	help: `Prints one line per method: its name, its parameters with their types
(a "?" marks an optional one) and its result type, from the OpenRPC
document the server returns for rpc.discover. -json prints that document.

Examples:
  rpc discover http://127.0.0.1:8080/rpc
  rpc discover -json http://127.0.0.1:8080/rpc | jq '.methods[].name'
`,
	setup: func(o *cli) {
		o.fs.BoolVar(&o.rawJSON, "json", false, "print the OpenRPC document itself")
	},
	run: func(ctx context.Context, o *cli, args []string) error {
		if len(args) != 1 {
			return usagef("want URL")
		}
		raw, err := o.callOnce(ctx, args[0], "rpc.discover", nil)
		if err != nil {
			return err
		}
		if o.rawJSON {
			return o.printJSON(raw)
		}
		doc, err := decodeOpenRPC(raw)
		if err != nil {
			return err
		}
		_, err = fmt.Fprint(o.stdout, doc.text())
		return err
	},
}

// openRPC is the part of an OpenRPC document that discover, gen-ts and
// gen-py read.
type openRPC struct {
	OpenRPC string `json:"openrpc"`
	Info    struct {
		Title   string `json:"title"`
		Version string `json:"version"`
	} `json:"info"`
	Methods []struct {
		Name           string       `json:"name"`
		Summary        string       `json:"summary"`
		Description    string       `json:"description"`
		Deprecated     bool         `json:"deprecated"`
		ParamStructure string       `json:"paramStructure"`
		Params         []descriptor `json:"params"`
		Result         *descriptor  `json:"result"`
	} `json:"methods"`
	Components struct {
		Schemas map[string]schema `json:"schemas"`
	} `json:"components"`
}

type descriptor struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Required    bool   `json:"required"`
	Schema      schema `json:"schema"`
}

// decodeOpenRPC decodes the result of rpc.discover.
func decodeOpenRPC(raw json.RawMessage) (*openRPC, error) {
	var doc openRPC
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("rpc.discover returned no OpenRPC document: %w", err)
	}
	return &doc, nil
}

// discover calls rpc.discover on url and decodes the document.
func (o *cli) discover(ctx context.Context, url string) (*openRPC, error) {
	raw, err := o.callOnce(ctx, url, "rpc.discover", nil)
	if err != nil {
		return nil, err
	}
	return decodeOpenRPC(raw)
}

func (d *openRPC) text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s (OpenRPC %s), %d methods\n\n", d.Info.Title, d.Info.Version, d.OpenRPC, len(d.Methods))
	for _, m := range d.Methods {
		var ps []string
		for _, p := range m.Params {
			name := p.Name
			if !p.Required && m.ParamStructure != "by-position" {
				name += "?"
			}
			t := typeOf(p.Schema)
			if m.ParamStructure == "by-position" && p.Name == "params" {
				t = "..." + t // a slice: any number of values
			}
			ps = append(ps, name+" "+t)
		}
		fmt.Fprintf(&b, "%s(%s)", m.Name, strings.Join(ps, ", "))
		if m.Result != nil {
			fmt.Fprintf(&b, " -> %s", typeOf(m.Result.Schema))
		}
		b.WriteByte('\n')
		if m.Summary != "" {
			fmt.Fprintf(&b, "    %s\n", m.Summary)
		}
	}
	return b.String()
}

// typeOf renders a JSON Schema as a short type: number, string[],
// {a: number, b?: string}, map[string]number, any.
func typeOf(s map[string]any) string {
	t, _ := s["type"].(string)
	switch t {
	case "":
		return "any"
	case "array":
		items, _ := s["items"].(map[string]any)
		return typeOf(items) + "[]"
	case "object":
		props, _ := s["properties"].(map[string]any)
		if len(props) == 0 {
			if ap, ok := s["additionalProperties"].(map[string]any); ok {
				return "map[string]" + typeOf(ap)
			}
			return "object"
		}
		var fields []string
		eachProperty(s, func(name string, ps map[string]any, required bool) {
			opt := "?"
			if required {
				opt = ""
			}
			fields = append(fields, name+opt+": "+typeOf(ps))
		})
		return "{" + strings.Join(fields, ", ") + "}"
	}
	if f, ok := s["format"].(string); ok {
		return t + " (" + f + ")"
	}
	return t
}

// eachProperty calls fn for each property of the object schema s, in name
// order, with its schema and whether s lists it as required.
func eachProperty(s map[string]any, fn func(name string, ps map[string]any, required bool)) {
	props, _ := s["properties"].(map[string]any)
	required := map[string]bool{}
	if rs, ok := s["required"].([]any); ok {
		for _, r := range rs {
			if name, ok := r.(string); ok {
				required[name] = true
			}
		}
	}
	names := make([]string, 0, len(props))
	for name := range props {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		ps, _ := props[name].(map[string]any)
		fn(name, ps, required[name])
	}
}
