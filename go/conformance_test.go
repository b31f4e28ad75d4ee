package slotlane

// The language-neutral cases of bindings/conformance/cases/*.json, run through this
// binding: every case's commands as one Pipeline, the Results compared with the
// recorded replies. Against Redis (standalone and cluster) every case must pass.
// Against the bundled server, which does not implement every command yet, the binding
// must agree case by case with the core's own runner (build/bindings/conformance/
// sl_conformance): the same cases pass, the same fail.

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

type confFile struct {
	Version int        `json:"version"`
	Cases   []confCase `json:"cases"`
}

type confCase struct {
	Name     string                       `json:"name"`
	Mode     string                       `json:"mode"`
	Resp     json.RawMessage              `json:"resp"`
	Setup    [][]json.RawMessage          `json:"setup"`
	Commands [][]json.RawMessage          `json:"commands"`
	Expected map[string][]json.RawMessage `json:"expected"`
}

type confExpect struct {
	Type      string            `json:"type"`
	Value     json.RawMessage   `json:"value"`
	Hex       *string           `json:"hex"`
	Prefix    *string           `json:"prefix"`
	Kind      *string           `json:"kind"`
	Format    *string           `json:"format"`
	Children  []json.RawMessage `json:"children"`
	Unordered bool              `json:"unordered"`
}

func loadConformance(t *testing.T) map[string][]confCase {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repoRoot, "bindings", "conformance", "cases", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no conformance cases in %s/bindings/conformance/cases: %v", repoRoot, err)
	}
	out := map[string][]confCase{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var cf confFile
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		if err := dec.Decode(&cf); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if len(cf.Cases) == 0 {
			t.Fatalf("%s has no cases", f)
		}
		out[filepath.Base(f)] = cf.Cases
	}
	return out
}

func (c *confCase) versions() ([]int, error) {
	if len(c.Resp) == 0 {
		return []int{2, 3}, nil
	}
	var one int
	if json.Unmarshal(c.Resp, &one) == nil {
		return []int{one}, nil
	}
	var many []int
	if err := json.Unmarshal(c.Resp, &many); err != nil {
		return nil, fmt.Errorf("bad resp %s", c.Resp)
	}
	return many, nil
}

func confArgs(cmd []json.RawMessage) ([]any, error) {
	args := make([]any, len(cmd))
	for i, raw := range cmd {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			args[i] = s
			continue
		}
		var h struct {
			Hex *string `json:"hex"`
		}
		if json.Unmarshal(raw, &h) != nil || h.Hex == nil {
			return nil, fmt.Errorf("argument %d: %s is not a string or {hex}", i, raw)
		}
		b, err := hex.DecodeString(*h.Hex)
		if err != nil {
			return nil, err
		}
		args[i] = b
	}
	return args, nil
}

// matchValue compares a Value (errors included as KindError values) with an expected node.
func matchValue(raw json.RawMessage, v Value, path string) error {
	var e confExpect
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&e); err != nil {
		return fmt.Errorf("%s: bad expected node: %v", path, err)
	}
	if v.Kind().String() != e.Type {
		return fmt.Errorf("%s: expected %s, got %s %v", path, e.Type, v.Kind(), v)
	}
	switch v.Kind() {
	case KindString, KindStatus, KindBigNumber, KindVerbatim:
		var want []byte
		var s string
		switch {
		case e.Hex != nil:
			b, err := hex.DecodeString(*e.Hex)
			if err != nil {
				return err
			}
			want = b
		case json.Unmarshal(e.Value, &s) == nil:
			want = []byte(s)
		default:
			return fmt.Errorf("%s: the expected %s has no value/hex", path, e.Type)
		}
		if !bytes.Equal(v.Bytes(), want) {
			return fmt.Errorf("%s: expected %s %q, got %q", path, e.Type, want, v.Bytes())
		}
		if v.Kind() == KindVerbatim && (e.Format == nil || *e.Format != v.Format()) {
			return fmt.Errorf("%s: expected verbatim format %v, got %s", path, e.Format, v.Format())
		}
	case KindError:
		re := v.Err().(*ResponseError)
		if e.Prefix != nil && !strings.HasPrefix(re.Msg, *e.Prefix) {
			return fmt.Errorf("%s: expected an error starting with %q, got %q", path, *e.Prefix, re.Msg)
		}
		if e.Kind != nil && *e.Kind != re.Kind.String() {
			return fmt.Errorf("%s: expected an error of kind %s, got %s (%q)", path, *e.Kind, re.Kind, re.Msg)
		}
	case KindInteger:
		var n json.Number
		if err := json.Unmarshal(e.Value, &n); err != nil {
			return fmt.Errorf("%s: the expected integer has no value", path)
		}
		want, err := strconv.ParseInt(n.String(), 10, 64)
		if err != nil || want != v.num {
			return fmt.Errorf("%s: expected integer %s, got %d", path, n, v.num)
		}
	case KindBool:
		var b bool
		if err := json.Unmarshal(e.Value, &b); err != nil {
			return fmt.Errorf("%s: the expected bool has no value", path)
		}
		if got, _ := v.Bool(); got != b {
			return fmt.Errorf("%s: expected bool %v, got %v", path, b, got)
		}
	case KindDouble:
		var s string
		if err := json.Unmarshal(e.Value, &s); err != nil {
			return fmt.Errorf("%s: the expected double has no value", path)
		}
		want, _ := strconv.ParseFloat(s, 64)
		got, _ := v.Float64()
		if !(want == got || (math.IsNaN(want) && math.IsNaN(got))) {
			return fmt.Errorf("%s: expected double %s, got %v", path, s, got)
		}
	case KindNil:
	case KindArray, KindMap, KindSet, KindPush:
		elems := v.Elems()
		if len(elems) != len(e.Children) {
			return fmt.Errorf("%s: expected %s of %d, got %d: %v", path, e.Type, len(e.Children), len(elems), v)
		}
		if !e.Unordered {
			for i := range elems {
				if err := matchValue(e.Children[i], elems[i], fmt.Sprintf("%s[%d]", path, i)); err != nil {
					return err
				}
			}
			return nil
		}
		group := 1
		if v.Kind() == KindMap {
			group = 2
		}
		used := make([]bool, len(elems)/group)
		for g := 0; g < len(elems)/group; g++ {
			found := false
			for a := range used {
				if used[a] {
					continue
				}
				ok := true
				for m := 0; m < group && ok; m++ {
					ok = matchValue(e.Children[g*group+m], elems[a*group+m], path) == nil
				}
				if ok {
					used[a], found = true, true
					break
				}
			}
			if !found {
				return fmt.Errorf("%s[%d]: no element of the %s matches (compared unordered): %v", path, g*group, e.Type, v)
			}
		}
	default:
		return fmt.Errorf("%s: unknown kind %v", path, v.Kind())
	}
	return nil
}

func resultAsValue(r Result) (Value, error) {
	if r.Err == nil {
		return r.Value, nil
	}
	re, ok := r.Err.(*ResponseError)
	if !ok {
		return Value{}, r.Err
	}
	return Value{kind: KindError, flags: uint8(re.Kind), b: []byte(re.Msg)}, nil
}

// runConformance runs every case against url and returns "name (respN)" -> error (nil: passed).
func runConformance(t *testing.T, url string) map[string]error {
	t.Helper()
	files := loadConformance(t)
	clients := map[int]*Client{}
	outcome := map[string]error{}
	names := make([]string, 0, len(files))
	for f := range files {
		names = append(names, f)
	}
	sort.Strings(names)
	for _, f := range names {
		for _, cs := range files[f] {
			vs, err := cs.versions()
			if err != nil {
				t.Fatalf("%s %s: %v", f, cs.Name, err)
			}
			for _, resp := range vs {
				c := clients[resp]
				if c == nil {
					c = newTestClient(t, url, &Options{Protocol: resp, CommandTimeout: 10 * 1e9})
					clients[resp] = c
				}
				cluster := c.Mode() == ModeCluster
				if (cs.Mode == "cluster" && !cluster) || (cs.Mode == "plain" && cluster) {
					continue // the case is for the other kind of server
				}
				key := fmt.Sprintf("%s (resp%d)", cs.Name, resp)
				outcome[key] = runCase(c, &cs, resp)
			}
		}
	}
	return outcome
}

func runCase(c *Client, cs *confCase, resp int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20e9)
	defer cancel()
	want := cs.Expected[strconv.Itoa(resp)]
	if len(want) != len(cs.Commands) {
		return fmt.Errorf("no recorded replies for RESP%d", resp)
	}
	if _, err := c.Flushall(ctx, nil); err != nil {
		return fmt.Errorf("FLUSHALL: %v", err)
	}
	p := c.Pipeline()
	if len(cs.Setup) > 0 {
		for _, cmd := range cs.Setup {
			args, err := confArgs(cmd)
			if err != nil {
				return err
			}
			p.Do(args...)
		}
		res, err := p.Exec(ctx)
		if err != nil {
			return fmt.Errorf("setup: %v", err)
		}
		for i, r := range res {
			if r.Err != nil {
				return fmt.Errorf("setup command #%d: %v", i, r.Err)
			}
		}
	}
	for _, cmd := range cs.Commands {
		args, err := confArgs(cmd)
		if err != nil {
			return err
		}
		p.Do(args...)
	}
	res, err := p.Exec(ctx)
	if err != nil {
		return fmt.Errorf("Exec: %v", err)
	}
	for i, r := range res {
		v, err := resultAsValue(r)
		if err != nil {
			return fmt.Errorf("command #%d: %v", i, err)
		}
		if err := matchValue(want[i], v, fmt.Sprintf("command #%d", i)); err != nil {
			return err
		}
	}
	return nil
}

func TestConformanceRedisPlain(t *testing.T) {
	checkAllPass(t, runConformance(t, plainURL))
}

func TestConformanceRedisCluster(t *testing.T) {
	checkAllPass(t, runConformance(t, clusterURL))
}

func checkAllPass(t *testing.T, out map[string]error) {
	t.Helper()
	if len(out) == 0 {
		t.Fatal("no case ran")
	}
	keys := make([]string, 0, len(out))
	for k := range out {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	passed := 0
	for _, k := range keys {
		if out[k] != nil {
			t.Errorf("FAIL %s: %v", k, out[k])
		} else {
			passed++
		}
	}
	t.Logf("%d cases passed, %d failed", passed, len(out)-passed)
}

// Against the bundled server the binding agrees with the core's runner, case by case.
func TestConformanceBundled(t *testing.T) {
	goOut := runConformance(t, bundledURL)
	runner := os.Getenv("SL_CONFORMANCE_BIN")
	if runner == "" {
		runner = filepath.Join(repoRoot, "build", "bindings", "conformance", "sl_conformance")
	}
	if _, err := os.Stat(runner); err != nil {
		// Without the core's runner to compare with, every case must pass.
		t.Logf("%s not built: requiring every case to pass", runner)
		checkAllPass(t, goOut)
		return
	}
	files, _ := filepath.Glob(filepath.Join(repoRoot, "bindings", "conformance", "cases", "*.json"))
	out, _ := exec.Command(runner, append([]string{bundledURL}, files...)...).CombinedOutput()
	cOut := map[string]bool{} // name (respN) -> passed
	for _, line := range strings.Split(string(out), "\n") {
		switch {
		case strings.HasPrefix(line, "ok   "):
			cOut[strings.TrimPrefix(line, "ok   ")] = true
		case strings.HasPrefix(line, "FAIL "):
			rest := strings.TrimPrefix(line, "FAIL ")
			// "name (respN, file): message"
			if i := strings.Index(rest, " (resp"); i > 0 {
				cOut[rest[:i]+" (resp"+rest[i+6:i+7]+")"] = false
			}
		}
	}
	if len(cOut) == 0 {
		t.Fatalf("the core's runner reported no case:\n%s", out)
	}
	passed, agreedFail := 0, 0
	for k, goErr := range goOut {
		cPass, ok := cOut[k]
		switch {
		case !ok:
			t.Errorf("%s: ran here, not reported by the core's runner", k)
		case cPass && goErr != nil:
			t.Errorf("FAIL %s: the core's runner passes it, the binding: %v", k, goErr)
		case !cPass && goErr == nil:
			t.Errorf("%s: the binding passes a case the core's runner fails", k)
		case cPass:
			passed++
		default:
			agreedFail++
			t.Logf("server gap (fails in the core's runner too) %s: %v", k, goErr)
		}
	}
	for k := range cOut {
		if _, ok := goOut[k]; !ok {
			t.Errorf("%s: reported by the core's runner, not run here", k)
		}
	}
	t.Logf("bundled server (%s): %d cases pass, %d fail in both the binding and the core's runner", bundledDesc, passed, agreedFail)
}
