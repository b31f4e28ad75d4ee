package slotlane

// The spec's conformance cases (bindings/conformance/commands/*.json) through the typed
// methods: every case's calls are made through the rendered Go methods (found by
// Methods and reflection, their arguments built from the calls' JSON by the parameters'
// Go types) -- once queued on one Pipeline (the case's batch, read through Reply.Result),
// once on the Client -- and each value is compared with the recorded reply as the method's
// reply type shapes it (bindings/spec/README.md). Against standalone Redis and Redis
// Cluster, RESP2 and RESP3.

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
)

type specParam struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Optional bool   `json:"optional"`
	List     bool   `json:"list"`
}

type specMethod struct {
	Method string      `json:"method"`
	Reply  string      `json:"reply"`
	Params []specParam `json:"params"`
}

type specCall struct {
	Method string         `json:"method"`
	Args   map[string]any `json:"args"`
}

type specCase struct {
	Name     string                       `json:"name"`
	Mode     string                       `json:"mode"`
	Resp     []int                        `json:"resp"`
	Setup    [][]json.RawMessage          `json:"setup"`
	Calls    []specCall                   `json:"calls"`
	Expected map[string][]json.RawMessage `json:"expected"`
}

func loadSpec(t *testing.T) (map[string]specMethod, map[string][]specCase) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "bindings", "spec", "commands.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Methods []specMethod `json:"methods"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	methods := map[string]specMethod{}
	for _, m := range doc.Methods {
		methods[m.Method] = m
	}
	files, _ := filepath.Glob(filepath.Join(repoRoot, "bindings", "conformance", "commands", "*.json"))
	if len(files) == 0 {
		t.Fatal("no spec cases in bindings/conformance/commands")
	}
	cases := map[string][]specCase{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var cf struct {
			Cases []specCase `json:"cases"`
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		if err := dec.Decode(&cf); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		cases[filepath.Base(f)] = cf.Cases
	}
	return methods, cases
}

// ------------------------------------------------------------------ arguments

func goField(name string) string {
	parts := strings.Split(name, "_")
	for i, p := range parts {
		if p != "" {
			parts[i] = strings.ToUpper(p[:1]) + p[1:]
		}
	}
	return strings.Join(parts, "")
}

func buildArg(t reflect.Type, v any) (reflect.Value, error) {
	switch t.Kind() {
	case reflect.String:
		s, ok := v.(string)
		if !ok {
			return reflect.Value{}, fmt.Errorf("want a string, got %v", v)
		}
		return reflect.ValueOf(s).Convert(t), nil
	case reflect.Int64:
		n, ok := v.(json.Number)
		if !ok {
			return reflect.Value{}, fmt.Errorf("want an integer, got %v", v)
		}
		i, err := n.Int64()
		return reflect.ValueOf(i), err
	case reflect.Float64:
		n, ok := v.(json.Number)
		if !ok {
			return reflect.Value{}, fmt.Errorf("want a number, got %v", v)
		}
		f, err := n.Float64()
		return reflect.ValueOf(f), err
	case reflect.Bool:
		b, ok := v.(bool)
		if !ok {
			return reflect.Value{}, fmt.Errorf("want a bool, got %v", v)
		}
		return reflect.ValueOf(b), nil
	case reflect.Interface:
		var x any
		switch a := v.(type) {
		case string:
			x = a
		case json.Number:
			if i, err := a.Int64(); err == nil {
				x = i
			} else {
				f, _ := a.Float64()
				x = f
			}
		case map[string]any:
			b, err := hex.DecodeString(a["hex"].(string))
			if err != nil {
				return reflect.Value{}, err
			}
			x = b
		default:
			return reflect.Value{}, fmt.Errorf("cannot pass %v as any", v)
		}
		out := reflect.New(t).Elem()
		out.Set(reflect.ValueOf(x))
		return out, nil
	case reflect.Pointer:
		e, err := buildArg(t.Elem(), v)
		if err != nil {
			return e, err
		}
		p := reflect.New(t.Elem())
		p.Elem().Set(e)
		return p, nil
	case reflect.Slice:
		items, ok := v.([]any)
		if !ok {
			return reflect.Value{}, fmt.Errorf("want a list, got %v", v)
		}
		out := reflect.MakeSlice(t, len(items), len(items))
		for i, x := range items {
			e, err := buildArg(t.Elem(), x)
			if err != nil {
				return e, err
			}
			out.Index(i).Set(e)
		}
		return out, nil
	case reflect.Struct: // Pair, Tuple3: from [a, b(, c)]
		items, ok := v.([]any)
		if !ok || len(items) != t.NumField() {
			return reflect.Value{}, fmt.Errorf("want a %d-tuple, got %v", t.NumField(), v)
		}
		out := reflect.New(t).Elem()
		for i, x := range items {
			e, err := buildArg(t.Field(i).Type, x)
			if err != nil {
				return e, err
			}
			out.Field(i).Set(e)
		}
		return out, nil
	}
	return reflect.Value{}, fmt.Errorf("cannot build a %v", t)
}

// callArgs builds the reflect arguments of a typed method (after ctx for the client).
func callArgs(ft reflect.Type, first int, m specMethod, args map[string]any) ([]reflect.Value, error) {
	var out []reflect.Value
	pi := first
	for _, p := range m.Params {
		if p.Optional {
			continue
		}
		v, ok := args[p.Name]
		if !ok {
			return nil, fmt.Errorf("%s: no argument %s", m.Method, p.Name)
		}
		if ft.IsVariadic() && pi == ft.NumIn()-1 {
			items, _ := v.([]any)
			for _, x := range items {
				e, err := buildArg(ft.In(pi).Elem(), x)
				if err != nil {
					return nil, fmt.Errorf("%s %s: %v", m.Method, p.Name, err)
				}
				out = append(out, e)
			}
			pi++
			continue
		}
		e, err := buildArg(ft.In(pi), v)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %v", m.Method, p.Name, err)
		}
		out = append(out, e)
		pi++
	}
	if pi < ft.NumIn() { // the options struct
		ot := ft.In(pi)
		opts := reflect.New(ot.Elem())
		any := false
		for _, p := range m.Params {
			if !p.Optional {
				continue
			}
			v, ok := args[p.Name]
			if !ok {
				continue
			}
			f := opts.Elem().FieldByName(goField(p.Name))
			if !f.IsValid() {
				return nil, fmt.Errorf("%s: no option field %s", m.Method, goField(p.Name))
			}
			e, err := buildArg(f.Type(), v)
			if err != nil {
				return nil, fmt.Errorf("%s %s: %v", m.Method, p.Name, err)
			}
			f.Set(e)
			any = true
		}
		if any {
			out = append(out, opts)
		} else {
			out = append(out, reflect.Zero(ot))
		}
	}
	return out, nil
}

// ------------------------------------------------------------------ replies

type tnode struct {
	t    string
	of   []*tnode
	null bool
}

func parseType(s string) *tnode {
	pos := 0
	var one func() *tnode
	one = func() *tnode {
		j := pos
		for j < len(s) && s[j] >= 'a' && s[j] <= 'z' {
			j++
		}
		n := &tnode{t: s[pos:j]}
		pos = j
		if pos < len(s) && s[pos] == '<' {
			pos++
			n.of = append(n.of, one())
			for s[pos] == ',' {
				pos++
				n.of = append(n.of, one())
			}
			pos++
		}
		if pos < len(s) && s[pos] == '?' {
			pos++
			n.null = true
		}
		return n
	}
	return one()
}

func expBytes(e confExpect) []byte {
	if e.Hex != nil {
		b, _ := hex.DecodeString(*e.Hex)
		return b
	}
	var s string
	_ = json.Unmarshal(e.Value, &s)
	return []byte(s)
}

func flatPairs(e confExpect) ([]json.RawMessage, error) {
	if e.Type == "array" && len(e.Children) > 0 {
		var first confExpect
		_ = json.Unmarshal(e.Children[0], &first)
		if first.Type == "array" {
			var flat []json.RawMessage
			for _, c := range e.Children {
				var p confExpect
				_ = json.Unmarshal(c, &p)
				flat = append(flat, p.Children...)
			}
			return flat, nil
		}
	}
	if len(e.Children)%2 != 0 {
		return nil, fmt.Errorf("odd pairs")
	}
	return e.Children, nil
}

func deref(v reflect.Value) reflect.Value {
	if v.Kind() == reflect.Pointer {
		return v.Elem()
	}
	return v
}

func checkTyped(tn *tnode, raw json.RawMessage, got reflect.Value, path string) error {
	var e confExpect
	if err := json.Unmarshal(raw, &e); err != nil {
		return err
	}
	bad := func(what string) error {
		return fmt.Errorf("%s: expected %s as %s, got %s", path, strings.TrimSpace(string(raw))[:min(len(raw), 200)], tn.t, what)
	}
	show := func() string { return fmt.Sprintf("%#v", got.Interface()) }
	loose := len(e.Value) == 0 && e.Hex == nil && e.Children == nil
	if e.Type == "nil" {
		if tn.t == "ok" {
			if got.Bool() {
				return bad(show())
			}
			return nil
		}
		if tn.t == "any" {
			if got.Interface().(Value).IsNil() {
				return nil
			}
			return bad(show())
		}
		switch got.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Map:
			if got.IsNil() {
				return nil
			}
		}
		return bad(show())
	}
	if (got.Kind() == reflect.Pointer) && got.IsNil() {
		return bad("nil")
	}
	g := deref(got)
	switch tn.t {
	case "any":
		if loose {
			return nil
		}
		return matchValue(raw, g.Interface().(Value), path)
	case "ok":
		if !g.Bool() {
			return bad(show())
		}
	case "status", "string":
		if !loose && g.String() != string(expBytes(e)) {
			return bad(show())
		}
	case "int":
		if !loose {
			w, err := strconv.ParseInt(string(e.Value), 10, 64)
			if err != nil || g.Int() != w {
				return bad(show())
			}
		}
	case "bool":
		if !loose {
			s := string(e.Value)
			if g.Bool() != (s == "true" || s == "1") {
				return bad(show())
			}
		}
	case "double":
		if !loose {
			s := strings.Trim(string(e.Value), `"`)
			w, err := strconv.ParseFloat(s, 64)
			if s == "inf" {
				w, err = math.Inf(1), nil
			} else if s == "-inf" {
				w, err = math.Inf(-1), nil
			}
			if err != nil || !(g.Float() == w || (math.IsNaN(w) && math.IsNaN(g.Float()))) {
				return bad(show())
			}
		}
	case "cursor":
		if !loose {
			w, err := strconv.ParseUint(string(expBytes(e)), 10, 64)
			if err != nil || g.Uint() != w {
				return bad(show())
			}
		}
	case "array", "set":
		if g.Kind() != reflect.Slice {
			return bad(show())
		}
		if loose {
			return nil
		}
		if g.Len() != len(e.Children) {
			return bad(fmt.Sprintf("%d elements: %s", g.Len(), show()))
		}
		unordered := tn.t == "set" || e.Unordered
		used := make([]bool, g.Len())
		for i, c := range e.Children {
			if !unordered {
				if err := checkTyped(tn.of[0], c, g.Index(i), fmt.Sprintf("%s[%d]", path, i)); err != nil {
					return err
				}
				continue
			}
			found := false
			for j := 0; j < g.Len() && !found; j++ {
				if !used[j] && checkTyped(tn.of[0], c, g.Index(j), path) == nil {
					used[j], found = true, true
				}
			}
			if !found {
				return bad("no element for " + string(c))
			}
		}
	case "map", "pairs":
		if loose {
			return nil
		}
		flat, err := flatPairs(e)
		if err != nil {
			return bad(err.Error())
		}
		var items [][2]reflect.Value
		if tn.t == "map" {
			if g.Kind() != reflect.Map {
				return bad(show())
			}
			iter := g.MapRange()
			for iter.Next() {
				items = append(items, [2]reflect.Value{iter.Key(), iter.Value()})
			}
		} else {
			if g.Kind() != reflect.Slice {
				return bad(show())
			}
			for i := 0; i < g.Len(); i++ {
				items = append(items, [2]reflect.Value{g.Index(i).Field(0), g.Index(i).Field(1)})
			}
		}
		if len(items)*2 != len(flat) {
			return bad(fmt.Sprintf("%d pairs: %s", len(items), show()))
		}
		unordered := tn.t == "map" || e.Unordered
		used := make([]bool, len(items))
		for i := 0; i < len(flat); i += 2 {
			found := false
			for j := range items {
				if used[j] || (!unordered && j != i/2) {
					continue
				}
				if checkTyped(tn.of[0], flat[i], items[j][0], path) == nil && checkTyped(tn.of[1], flat[i+1], items[j][1], path) == nil {
					used[j], found = true, true
					break
				}
			}
			if !found {
				return bad(fmt.Sprintf("no pair for %s, %s", flat[i], flat[i+1]))
			}
		}
	case "tuple":
		if loose {
			return nil
		}
		if g.Kind() != reflect.Struct || len(e.Children) != g.NumField() {
			return bad(show())
		}
		for i, c := range e.Children {
			if err := checkTyped(tn.of[i], c, g.Field(i), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("%s: unknown type %s", path, tn.t)
	}
	return nil
}

func checkOutcome(tn *tnode, raw json.RawMessage, val reflect.Value, err error, path string) error {
	var e confExpect
	_ = json.Unmarshal(raw, &e)
	if e.Type == "error" {
		if err == nil {
			return fmt.Errorf("%s: expected an error %s, got %#v", path, raw, val.Interface())
		}
		var re *ResponseError
		if !errors.As(err, &re) || (e.Prefix != nil && !strings.HasPrefix(re.Msg, *e.Prefix)) || (e.Kind != nil && re.Kind.String() != *e.Kind) {
			return fmt.Errorf("%s: expected error %s, got %v", path, raw, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	return checkTyped(tn, raw, val, path)
}

func runSpecCase(c *Client, methods map[string]specMethod, cs *specCase, resp int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20e9)
	defer cancel()
	want := cs.Expected[strconv.Itoa(resp)]
	prepare := func() error {
		if _, err := c.Flushall(ctx, nil); err != nil {
			return err
		}
		if len(cs.Setup) == 0 {
			return nil
		}
		p := c.Pipeline()
		for _, cmd := range cs.Setup {
			args, err := confArgs(cmd)
			if err != nil {
				return err
			}
			p.Do(args...)
		}
		res, err := p.Exec(ctx)
		if err != nil {
			return err
		}
		for i, r := range res {
			if r.Err != nil {
				return fmt.Errorf("setup #%d: %v", i, r.Err)
			}
		}
		return nil
	}
	// 1. the calls queued on one pipeline
	if err := prepare(); err != nil {
		return err
	}
	p := c.Pipeline()
	replies := make([]reflect.Value, len(cs.Calls))
	for i, call := range cs.Calls {
		m := methods[call.Method]
		fn := reflect.ValueOf(p).MethodByName(Methods[call.Method])
		if !fn.IsValid() {
			return fmt.Errorf("no Pipeline method %s", Methods[call.Method])
		}
		args, err := callArgs(fn.Type(), 0, m, call.Args)
		if err != nil {
			return err
		}
		replies[i] = fn.Call(args)[0]
	}
	if _, err := p.Exec(ctx); err != nil {
		return fmt.Errorf("Exec: %v", err)
	}
	for i, call := range cs.Calls {
		out := replies[i].MethodByName("Result").Call(nil)
		err, _ := out[1].Interface().(error)
		if e := checkOutcome(parseType(methods[call.Method].Reply), want[i], out[0], err, fmt.Sprintf("pipeline call %d %s", i, call.Method)); e != nil {
			return e
		}
	}
	// 2. one by one on the client
	if err := prepare(); err != nil {
		return err
	}
	for i, call := range cs.Calls {
		m := methods[call.Method]
		fn := reflect.ValueOf(c).MethodByName(Methods[call.Method])
		args, err := callArgs(fn.Type(), 1, m, call.Args)
		if err != nil {
			return err
		}
		out := fn.Call(append([]reflect.Value{reflect.ValueOf(ctx)}, args...))
		cerr, _ := out[1].Interface().(error)
		if e := checkOutcome(parseType(m.Reply), want[i], out[0], cerr, fmt.Sprintf("client call %d %s", i, call.Method)); e != nil {
			return e
		}
	}
	return nil
}

func runSpecConformance(t *testing.T, url string) {
	methods, cases := loadSpec(t)
	clients := map[int]*Client{}
	names := make([]string, 0, len(cases))
	for f := range cases {
		names = append(names, f)
	}
	sort.Strings(names)
	ran := 0
	for _, f := range names {
		for i := range cases[f] {
			cs := &cases[f][i]
			for _, resp := range cs.Resp {
				c := clients[resp]
				if c == nil {
					c = newTestClient(t, url, &Options{Protocol: resp, CommandTimeout: 10e9})
					clients[resp] = c
				}
				cluster := c.Mode() == ModeCluster
				if (cs.Mode == "cluster" && !cluster) || (cs.Mode == "plain" && cluster) {
					continue
				}
				ran++
				if err := runSpecCase(c, methods, cs, resp); err != nil {
					t.Errorf("%s %s (resp%d): %v", f, cs.Name, resp, err)
				}
			}
		}
	}
	if ran < 200 {
		t.Fatalf("only %d case runs", ran)
	}
}

func TestSpecConformanceRedisPlain(t *testing.T)   { runSpecConformance(t, plainURL) }
func TestSpecConformanceRedisCluster(t *testing.T) { runSpecConformance(t, clusterURL) }

func TestSpecEveryMethodHasACase(t *testing.T) {
	methods, cases := loadSpec(t)
	called := map[string]bool{}
	for _, cs := range cases {
		for _, c := range cs {
			for _, call := range c.Calls {
				called[call.Method] = true
			}
		}
	}
	for m := range methods {
		if !called[m] {
			t.Errorf("method %s has no case", m)
		}
		if _, ok := Methods[m]; !ok {
			t.Errorf("method %s is not rendered", m)
		}
		if !reflect.ValueOf(&Client{}).MethodByName(Methods[m]).IsValid() || !reflect.ValueOf(&Pipeline{}).MethodByName(Methods[m]).IsValid() {
			t.Errorf("method %s: no Client or Pipeline method %s", m, Methods[m])
		}
	}
}
