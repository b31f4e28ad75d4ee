package slotlane

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"
)

// servers runs f against the bundled server (cluster) and standalone Redis (plain).
func servers(t *testing.T, f func(t *testing.T, c *Client)) {
	t.Run("bundled", func(t *testing.T) {
		c := newTestClient(t, bundledURL, nil)
		if _, err := c.Flushall(testCtx(t), nil); err != nil {
			t.Fatal(err)
		}
		f(t, c)
	})
	t.Run("plain", func(t *testing.T) {
		c := newTestClient(t, plainURL, nil)
		if _, err := c.Flushall(testCtx(t), nil); err != nil {
			t.Fatal(err)
		}
		f(t, c)
	})
}

func TestVersionMatchesVendoredCore(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("internal", "csrc", "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := Version(), strings.TrimSpace(string(b)); got != want {
		t.Fatalf("Version() = %q, the vendored core's VERSION is %q: run ci/vendor-core.sh --go", got, want)
	}
}

// TestEveryCoreSourceIsCompiled checks the cgo shims against the vendored core's own
// description (internal/csrc/build.cfg): one core_*.c per source of the "core" and "tls"
// parts (every .c under their folders but those under another part's folder, such as the
// libuv driver in src/uv/, which the Go binding does not use: it runs the blocking engine
// from goroutines).
func TestEveryCoreSourceIsCompiled(t *testing.T) {
	cfg, err := os.ReadFile(filepath.Join("internal", "csrc", "build.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	folders := map[string]string{} // part -> folder
	for _, line := range strings.Split(string(cfg), "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		if w := strings.Fields(line); len(w) >= 3 && w[0] == "part" {
			folders[w[1]] = w[2]
		}
	}
	coreFolder, ok := folders["core"]
	if !ok {
		t.Fatal("build.cfg has no part core")
	}
	partOf := func(rel string) string {
		best := ""
		for name, f := range folders {
			if strings.HasPrefix(rel, f+"/") && (best == "" || len(f) > len(folders[best])) {
				best = name
			}
		}
		return best
	}
	n := 0
	err = filepath.WalkDir(filepath.Join("internal", "csrc", coreFolder), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".c") {
			return err
		}
		rel, _ := filepath.Rel(filepath.Join("internal", "csrc"), p)
		rel = filepath.ToSlash(rel)
		shim := "core_" + strings.ReplaceAll(strings.TrimPrefix(rel, coreFolder+"/"), "/", "_")
		if part := partOf(rel); part != "core" && part != "tls" { // the package compiles the core and tls parts
			if _, err := os.Stat(shim); err == nil {
				t.Errorf("%s compiles %s, a source of part %s", shim, rel, partOf(rel))
			}
			return nil
		}
		n++
		w, err := os.ReadFile(shim)
		if err != nil {
			t.Errorf("core source %s has no %s shim in the package: %v", rel, shim, err)
			return nil
		}
		if !strings.Contains(string(w), `#include "internal/csrc/`+rel+`"`) {
			t.Errorf("%s does not include %s", shim, rel)
		}
		return nil
	})
	if err != nil || n == 0 {
		t.Fatalf("no vendored core sources: %v", err)
	}
	wrappers, _ := filepath.Glob("core_*.c")
	if len(wrappers) != n {
		t.Errorf("%d wrappers for %d core sources (a wrapper of a removed source?)", len(wrappers), n)
	}
}

func TestKeySlot(t *testing.T) {
	c := newTestClient(t, bundledURL, nil)
	ctx := testCtx(t)
	for _, k := range []string{"", "foo", "key:0", "{user1000}.following", "{}x", "{a}{b}", "ключ"} {
		want, err := c.Do(ctx, "CLUSTER", "KEYSLOT", k).Int64()
		if err != nil {
			t.Fatal(err)
		}
		if got := KeySlot(k); int64(got) != want {
			t.Errorf("KeySlot(%q) = %d, the server says %d", k, got, want)
		}
	}
	if KeySlot("foo") != 12182 {
		t.Errorf("KeySlot(foo) = %d, want 12182", KeySlot("foo"))
	}
	if KeySlot("{user1000}.following") != KeySlot("{user1000}.followers") {
		t.Error("hash tags do not share a slot")
	}
}

func TestNewClientModes(t *testing.T) {
	ctx := testCtx(t)
	cases := []struct {
		name string
		opts Options
		want Mode
	}{
		{"bundled auto URL", Options{URL: bundledURL}, ModeCluster},
		{"bundled addrs", Options{Addrs: []string{fmt.Sprintf("127.0.0.1:%d", bundledPort+1), fmt.Sprintf("127.0.0.1:%d", bundledPort+2)}}, ModeCluster},
		{"bundled forced cluster", Options{URL: bundledURL, Mode: ModeCluster}, ModeCluster},
		{"plain auto", Options{URL: plainURL}, ModePlain},
		{"plain forced", Options{Addrs: []string{fmt.Sprintf("127.0.0.1:%d", plainPort)}, Mode: ModePlain}, ModePlain},
		{"plain host:port URL", Options{URL: fmt.Sprintf("127.0.0.1:%d", plainPort)}, ModePlain},
		{"redis cluster", Options{URL: clusterURL, Protocol: 3}, ModeCluster},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := NewClient(ctx, &tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if c.Mode() != tc.want {
				t.Fatalf("Mode() = %v, want %v", c.Mode(), tc.want)
			}
			if _, err := c.Ping(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestNewClientBadOptions(t *testing.T) {
	ctx := testCtx(t)
	bad := []struct {
		name string
		opts *Options
		want error
	}{
		{"nil", nil, ErrInvalid},
		{"empty", &Options{}, ErrInvalid},
		{"both", &Options{URL: bundledURL, Addrs: []string{"127.0.0.1:1"}}, ErrInvalid},
		{"bad addr", &Options{Addrs: []string{"a,b"}}, ErrInvalid},
		{"mode", &Options{URL: bundledURL, Mode: 7}, ErrInvalid},
		{"protocol", &Options{URL: bundledURL, Protocol: 4}, ErrInvalid},
		{"db", &Options{URL: bundledURL, DB: -1}, ErrInvalid},
		{"redirects", &Options{URL: bundledURL, MaxRedirects: -1}, ErrInvalid},
		{"pool", &Options{URL: bundledURL, PoolSize: -1}, ErrInvalid},
		{"dial timeout", &Options{URL: bundledURL, DialTimeout: -time.Second}, ErrInvalid},
		{"refresh", &Options{URL: bundledURL, RefreshInterval: -time.Second}, ErrInvalid},
		{"bad url", &Options{URL: "redis://[::1"}, ErrInvalid},
		{"tls on a plaintext port", &Options{URL: "rediss://" + bundledURL[len("redis://"):]}, ErrTLS},
		{"refused", &Options{URL: "redis://127.0.0.1:23499", DialTimeout: time.Second}, ErrConnection},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			c, err := NewClient(ctx, tc.opts)
			if err == nil {
				c.Close()
				t.Fatal("NewClient succeeded")
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("error %q does not match %v", err, tc.want)
			}
			if err.Error() == "" {
				t.Fatal("empty message")
			}
		})
	}
}

func TestNewClientContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := NewClient(ctx, &Options{URL: bundledURL}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled ctx: %v", err)
	}
	// A server that accepts and never answers: the ctx deadline ends NewClient. The
	// client's own CommandTimeout is an hour, so only ctx's deadline can end the wait,
	// and the error must say so (no wall-clock bound: a busy machine is only later).
	ln, err := listenSilent(t)
	if err != nil {
		t.Fatal(err)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel2()
	_, err = NewClient(ctx2, &Options{URL: "redis://" + ln, Mode: ModeCluster, CommandTimeout: time.Hour})
	if err == nil {
		t.Fatal("NewClient against a silent server succeeded")
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v is not the ctx's deadline", err)
	}
}

func TestStringers(t *testing.T) {
	if ModeAuto.String() != "auto" || ModePlain.String() != "plain" || ModeCluster.String() != "cluster" || Mode(9).String() != "Mode(9)" {
		t.Error("Mode.String")
	}
	if KindString.String() != "string" || KindPush.String() != "push" || Kind(99).String() != "Kind(99)" {
		t.Error("Kind.String")
	}
	if ErrKindServer.String() != "server" || ErrKindArgument.String() != "argument" || ErrorKind(99).String() != "unknown" {
		t.Error("ErrorKind.String")
	}
	e := &Error{Code: codeTimeout, Msg: "late"}
	if !errors.Is(e, ErrTimeout) || !strings.Contains(e.Error(), "late") {
		t.Errorf("Error: %v", e)
	}
	var to interface{ Timeout() bool }
	if !errors.As(e, &to) || !to.Timeout() {
		t.Error("ErrTimeout is not a Timeout() error")
	}
	re := &ResponseError{Kind: ErrKindServer, Msg: "WRONGTYPE Operation against a key"}
	if re.Prefix() != "WRONGTYPE" || re.Error() != re.Msg || len(re.Unwrap()) != 0 {
		t.Errorf("ResponseError: %q %q", re.Prefix(), re.Error())
	}
	re2 := &ResponseError{Kind: ErrKindIO, Msg: "connection refused"}
	if re2.Prefix() != "" || !errors.Is(re2, ErrConnection) || !strings.Contains(re2.Error(), "io") {
		t.Errorf("ResponseError io: %v", re2)
	}
	if (Value{}).String() != "invalid" {
		t.Errorf("zero Value: %q", Value{}.String())
	}
}

// The typed methods are rendered from bindings/spec/ (commands_gen.go); these check the Go
// idiom of a few (spec_conformance_test.go calls every one): (T, error) everywhere, nil
// replies as nil pointers, options structs, variadic key lists.
func TestStringCommands(t *testing.T) {
	servers(t, func(t *testing.T, c *Client) {
		ctx := testCtx(t)
		if s, err := c.Ping(ctx); err != nil || s != "PONG" {
			t.Fatalf("Ping = %q %v", s, err)
		}
		if ok, err := c.Set(ctx, "s1", "v1", nil); err != nil || !ok {
			t.Fatalf("Set = %v %v", ok, err)
		}
		if v, err := c.Get(ctx, "s1"); err != nil || v == nil || *v != "v1" {
			t.Fatalf("Get = %v, %v", v, err)
		}
		if v, err := c.Get(ctx, "nokey"); err != nil || v != nil {
			t.Fatalf("Get missing: %v %v", v, err)
		}
		if ok, err := c.Set(ctx, "bin", []byte{0, 1, '\r', '\n', 0xff}, nil); err != nil || !ok {
			t.Fatal(err)
		}
		if b, err := c.Do(ctx, "GET", "bin").Bytes(); err != nil || string(b) != "\x00\x01\r\n\xff" {
			t.Fatalf("binary: %q %v", b, err)
		}
		if _, err := c.Set(ctx, "n", 41, nil); err != nil {
			t.Fatal(err)
		}
		if n, err := c.Incr(ctx, "n"); err != nil || n != 42 {
			t.Fatalf("Incr = %d %v", n, err)
		}
		if n, err := c.Incrby(ctx, "n", -50); err != nil || n != -8 {
			t.Fatalf("Incrby = %d %v", n, err)
		}
		if _, err := c.Incr(ctx, "s1"); err == nil {
			t.Fatal("INCR of a string succeeded")
		} else {
			var re *ResponseError
			if !errors.As(err, &re) || re.Kind != ErrKindServer || re.Prefix() != "ERR" {
				t.Fatalf("INCR error %T %v", err, err)
			}
		}
		// SET NX: false when not set (the spec: SET -> bool)
		if ok, err := c.Set(ctx, "nx", "a", &SetOptions{Nx: true}); err != nil || !ok {
			t.Fatalf("Set NX new = %v %v", ok, err)
		}
		if ok, err := c.Set(ctx, "nx", "b", &SetOptions{Nx: true, Px: Int(60000)}); err != nil || ok {
			t.Fatalf("Set NX existing = %v %v", ok, err)
		}
		if old, err := c.SetGet(ctx, "nx", "c", nil); err != nil || old == nil || *old != "a" {
			t.Fatalf("SetGet = %v %v", old, err)
		}
		// TTL and EXPIRE: seconds as int64
		if d, err := c.Ttl(ctx, "nx"); err != nil || d != -1 {
			t.Fatalf("TTL no expiry = %v %v", d, err)
		}
		if d, err := c.Ttl(ctx, "nokey"); err != nil || d != -2 {
			t.Fatalf("TTL missing: %v %v", d, err)
		}
		if ok, err := c.Expire(ctx, "nx", 90, nil); err != nil || !ok {
			t.Fatalf("Expire = %v %v", ok, err)
		}
		if ok, err := c.Expire(ctx, "nokey", 1, nil); err != nil || ok {
			t.Fatalf("Expire missing = %v %v", ok, err)
		}
		if ok, err := c.Expire(ctx, "nx", 50, &ExpireOptions{Gt: true}); err != nil || ok {
			t.Fatalf("Expire GT = %v %v", ok, err)
		}
		if d, err := c.Ttl(ctx, "nx"); err != nil || d <= 80 || d > 90 {
			t.Fatalf("TTL = %v %v", d, err)
		}
		// DEL, EXISTS, MGET, MSET across slots (split by the core in cluster mode)
		if ok, err := c.Mset(ctx, []Pair[string, any]{{"m:a", "1"}, {"m:b", 2}, {"{t}m:c", []byte("3")}}); err != nil || !ok {
			t.Fatal(err)
		}
		vals, err := c.Mget(ctx, "m:a", "nokey", "m:b", "{t}m:c")
		if err != nil {
			t.Fatal(err)
		}
		got := []string{}
		for _, v := range vals {
			if v == nil {
				got = append(got, "<nil>")
			} else {
				got = append(got, *v)
			}
		}
		if !reflect.DeepEqual(got, []string{"1", "<nil>", "2", "3"}) {
			t.Fatalf("Mget = %v", got)
		}
		if n, err := c.Exists(ctx, "m:a", "m:b", "nokey", "m:a"); err != nil || n != 3 {
			t.Fatalf("Exists = %d %v", n, err)
		}
		if n, err := c.Delete(ctx, "m:a", "m:b", "nokey", "{t}m:c"); err != nil || n != 3 {
			t.Fatalf("Delete = %d %v", n, err)
		}
		// argument errors, before anything is sent
		for name, f := range map[string]func() error{
			"Delete":   func() error { _, err := c.Delete(ctx); return err },
			"Exists":   func() error { _, err := c.Exists(ctx); return err },
			"Mget":     func() error { _, err := c.Mget(ctx); return err },
			"Mset":     func() error { _, err := c.Mset(ctx, nil); return err },
			"Hset":     func() error { _, err := c.Hset(ctx, "h", nil); return err },
			"Lpush":    func() error { _, err := c.Lpush(ctx, "l"); return err },
			"Sadd":     func() error { _, err := c.Sadd(ctx, "s"); return err },
			"Set nil":  func() error { _, err := c.Set(ctx, "k", nil, nil); return err },
			"Set type": func() error { _, err := c.Set(ctx, "k", struct{}{}, nil); return err },
			"Set bool": func() error { _, err := c.Set(ctx, "k", true, nil); return err },
			"Do bool":  func() error { return c.Do(ctx, "SET", "k", false).Err },
			"Do empty": func() error { return c.Do(ctx).Err },
			"Do dur":   func() error { return c.Do(ctx, "SET", "k", time.Second).Err },
		} {
			if err := f(); !errors.Is(err, ErrInvalid) {
				t.Errorf("%s: error %v does not match ErrInvalid", name, err)
			}
		}
	})
}

func TestHashListSetCommands(t *testing.T) {
	servers(t, func(t *testing.T, c *Client) {
		ctx := testCtx(t)
		if n, err := c.Hset(ctx, "h", []Pair[any, any]{{"f1", "v1"}, {"f2", 2}}); err != nil || n != 2 {
			t.Fatalf("Hset = %d %v", n, err)
		}
		if v, err := c.Hget(ctx, "h", "f2"); err != nil || v == nil || *v != "2" {
			t.Fatalf("Hget = %v %v", v, err)
		}
		if v, err := c.Hget(ctx, "h", "nofield"); err != nil || v != nil {
			t.Fatalf("Hget missing: %v %v", v, err)
		}
		if m, err := c.Hgetall(ctx, "h"); err != nil || !reflect.DeepEqual(m, map[string]string{"f1": "v1", "f2": "2"}) {
			t.Fatalf("Hgetall = %v %v", m, err)
		}
		if m, err := c.Hgetall(ctx, "nohash"); err != nil || len(m) != 0 {
			t.Fatalf("Hgetall missing = %v %v", m, err)
		}
		if n, err := c.Rpush(ctx, "l", "b", "c"); err != nil || n != 2 {
			t.Fatalf("Rpush = %d %v", n, err)
		}
		if n, err := c.Lpush(ctx, "l", "a"); err != nil || n != 3 {
			t.Fatalf("Lpush = %d %v", n, err)
		}
		if l, err := c.Lrange(ctx, "l", 0, -1); err != nil || !reflect.DeepEqual(l, []string{"a", "b", "c"}) {
			t.Fatalf("Lrange = %v %v", l, err)
		}
		if n, err := c.Sadd(ctx, "s", "x", "y", "x"); err != nil || n != 2 {
			t.Fatalf("Sadd = %d %v", n, err)
		}
		m, err := c.Smembers(ctx, "s")
		sort.Strings(m)
		if err != nil || !reflect.DeepEqual(m, []string{"x", "y"}) {
			t.Fatalf("Smembers = %v %v", m, err)
		}
		if z, err := c.Zadd(ctx, "z", []Pair[float64, any]{{1.5, "a"}, {-2, "b"}}, nil); err != nil || z != 2 {
			t.Fatalf("Zadd = %v %v", z, err)
		}
		if ps, err := c.ZrangeWithscores(ctx, "z", 0, -1, nil); err != nil || !reflect.DeepEqual(ps, []Pair[string, float64]{{"b", -2}, {"a", 1.5}}) {
			t.Fatalf("ZrangeWithscores = %v %v", ps, err)
		}
		// wrong type: a *ResponseError with the server's prefix
		if _, err := c.Lrange(ctx, "h", 0, -1); err == nil {
			t.Fatal("LRANGE of a hash succeeded")
		} else {
			var re *ResponseError
			if !errors.As(err, &re) || re.Prefix() != "WRONGTYPE" {
				t.Fatalf("LRANGE of a hash: %v", err)
			}
		}
	})
}

func TestDoRoute(t *testing.T) {
	c := newTestClient(t, bundledURL, nil)
	ctx := testCtx(t)
	if _, err := c.Flushall(ctx, nil); err != nil {
		t.Fatal(err)
	}
	p := c.Pipeline()
	for i := 0; i < 100; i++ {
		p.Set(fmt.Sprintf("r:%d", i), "x", nil)
	}
	if _, err := p.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := c.DoRoute(ctx, RouteAllPrimaries(), "DBSIZE").Int64(); err != nil || n != 100 {
		t.Fatalf("DBSIZE on all primaries = %d %v", n, err)
	}
	// one node: its own DBSIZE is a part of the keys
	n0, err := c.DoRoute(ctx, RouteNode(fmt.Sprintf("127.0.0.1:%d", bundledPort)), "DBSIZE").Int64()
	if err != nil || n0 <= 0 || n0 >= 100 {
		t.Fatalf("DBSIZE on %d = %d %v", bundledPort, n0, err)
	}
	// the owner of a slot holds the key of that slot
	slot := KeySlot("r:7")
	if v, err := c.DoRoute(ctx, RouteSlot(slot), "GET", "r:7").Text(); err != nil || v != "x" {
		t.Fatalf("GET by slot = %q %v", v, err)
	}
	if err := c.DoRoute(ctx, RouteRandom(), "PING").Err; err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]Route{"zero": {}, "slot": RouteSlot(16384), "node": RouteNode("nohost")} {
		if err := c.DoRoute(ctx, r, "PING").Err; !errors.Is(err, ErrInvalid) {
			t.Errorf("route %s: %v", name, err)
		}
	}
}

func TestValueAccessors(t *testing.T) {
	c := newTestClient(t, bundledURL, &Options{Protocol: 3})
	ctx := testCtx(t)
	if _, err := c.Flushall(ctx, nil); err != nil {
		t.Fatal(err)
	}
	c.Hset(ctx, "vh", []Pair[any, any]{{"a", "1"}, {"b", "2.5"}})
	c.Rpush(ctx, "vl", "x", "y")
	r := c.Do(ctx, "HGETALL", "vh")
	if r.Err != nil || r.Value.Kind() != KindMap || r.Value.Len() != 4 {
		t.Fatalf("RESP3 HGETALL: %v %v", r.Value, r.Err)
	}
	m, err := r.StringMap()
	if err != nil || m["b"] != "2.5" {
		t.Fatalf("StringMap %v %v", m, err)
	}
	if iv, err := r.Interface(); err != nil || !reflect.DeepEqual(iv, map[string]any{"a": "1", "b": "2.5"}) {
		t.Fatalf("Interface %v %v", iv, err)
	}
	f, err := c.Do(ctx, "HGET", "vh", "b").Float64()
	if err != nil || f != 2.5 {
		t.Fatalf("Float64 of a string = %v %v", f, err)
	}
	if n, err := c.Do(ctx, "HGET", "vh", "a").Int64(); err != nil || n != 1 {
		t.Fatalf("Int64 of a string = %v %v", n, err)
	}
	if _, err := c.Do(ctx, "HGET", "vh", "b").Int64(); !errors.Is(err, ErrUnexpectedType) {
		t.Fatalf("Int64 of 2.5: %v", err)
	}
	l := c.Do(ctx, "LRANGE", "vl", 0, -1)
	if s, err := l.Slice(); err != nil || len(s) != 2 || s[1].Text() != "y" || l.Value.Elems()[0].Text() != "x" {
		t.Fatalf("Slice %v %v", s, err)
	}
	if _, err := l.Text(); !errors.Is(err, ErrUnexpectedType) {
		t.Fatalf("Text of an array: %v", err)
	}
	if _, err := l.Bytes(); !errors.Is(err, ErrUnexpectedType) {
		t.Fatalf("Bytes of an array: %v", err)
	}
	if _, err := l.Int64(); !errors.Is(err, ErrUnexpectedType) {
		t.Fatalf("Int64 of an array: %v", err)
	}
	if _, err := l.StringMap(); err != nil {
		t.Fatalf("StringMap of 2 elements: %v", err)
	}
	if fmt.Sprint(l.Value) != `array["x" "y"]` {
		t.Fatalf("String of an array: %s", l.Value)
	}
	nilr := c.Do(ctx, "GET", "nokey")
	if nilr.Err != nil || !nilr.Value.IsNil() || nilr.Value.String() != "nil" {
		t.Fatalf("nil: %v", nilr)
	}
	for name, f := range map[string]func() error{
		"Bytes":   func() error { _, err := nilr.Bytes(); return err },
		"Text":    func() error { _, err := nilr.Text(); return err },
		"Int64":   func() error { _, err := nilr.Int64(); return err },
		"Float64": func() error { _, err := nilr.Float64(); return err },
		"Bool":    func() error { _, err := nilr.Bool(); return err },
		"Slice":   func() error { _, err := nilr.Slice(); return err },
		"Strings": func() error { _, err := nilr.Strings(); return err },
	} {
		if err := f(); !errors.Is(err, ErrNil) {
			t.Errorf("%s of nil: %v", name, err)
		}
	}
	if iv, err := nilr.Interface(); err != nil || iv != nil {
		t.Fatalf("Interface of nil %v %v", iv, err)
	}
	i := c.Do(ctx, "INCR", "vi")
	if i.Value.Kind() != KindInteger || i.Value.Text() != "1" || i.Value.String() != "1" {
		t.Fatalf("integer %v", i.Value)
	}
	if b, err := i.Bool(); err != nil || !b {
		t.Fatalf("Bool of 1: %v %v", b, err)
	}
	if f, err := i.Float64(); err != nil || f != 1 {
		t.Fatalf("Float64 of 1: %v %v", f, err)
	}
	if i.Value.Bytes() != nil || i.Value.Format() != "" || i.Value.Err() != nil {
		t.Fatal("integer has bytes, a format or an error")
	}
	// errors: Result.Err, and every accessor returns it
	e := c.Do(ctx, "LPUSH", "vh", "x")
	var re *ResponseError
	if !errors.As(e.Err, &re) || re.Prefix() != "WRONGTYPE" {
		t.Fatalf("WRONGTYPE: %v", e.Err)
	}
	for name, f := range map[string]func() error{
		"Bytes": func() error { _, err := e.Bytes(); return err }, "Text": func() error { _, err := e.Text(); return err },
		"Int64": func() error { _, err := e.Int64(); return err }, "Float64": func() error { _, err := e.Float64(); return err },
		"Bool": func() error { _, err := e.Bool(); return err }, "Slice": func() error { _, err := e.Slice(); return err },
		"Strings": func() error { _, err := e.Strings(); return err }, "StringMap": func() error { _, err := e.StringMap(); return err },
		"Interface": func() error { _, err := e.Interface(); return err },
	} {
		if err := f(); err != e.Err {
			t.Errorf("%s of an error result: %v", name, err)
		}
	}
	// RESP3 double, bool, verbatim
	d := c.Do(ctx, "ZINCRBY", "vz", "1.5", "m")
	if d.Err != nil {
		t.Fatal(d.Err)
	}
	if f, err := d.Float64(); err != nil || f != 1.5 {
		t.Fatalf("ZINCRBY double: %v %v (%v)", f, err, d.Value.Kind())
	}
}

func TestValueDecodingKinds(t *testing.T) {
	// Decoding of every RESP3 record kind through EVAL, against standalone Redis (the
	// bundled server has no scripting yet).
	c := newTestClient(t, plainURL, &Options{Protocol: 3})
	ctx := testCtx(t)
	check := func(script string, kind Kind, f func(r Result) bool) {
		t.Helper()
		r := c.Do(ctx, "EVAL", script, 0)
		if r.Err != nil || r.Value.Kind() != kind || !f(r) {
			t.Errorf("EVAL %s: %v (%v) err %v", script, r.Value, r.Value.Kind(), r.Err)
		}
	}
	check("return {double=3.141}", KindDouble, func(r Result) bool {
		f, _ := r.Float64()
		return f == 3.141 && r.Value.Interface() == f && r.Value.String() == "3.141"
	})
	check("redis.setresp(3); return true", KindBool, func(r Result) bool {
		b, _ := r.Bool()
		return b && r.Value.Text() == "true" && r.Value.Interface() == true && r.Value.String() == "true"
	})
	check("redis.setresp(3); return false", KindBool, func(r Result) bool { b, err := r.Bool(); return !b && err == nil })
	check("return {big_number='-1234567890123456789012345678901234567890'}", KindBigNumber, func(r Result) bool {
		_, err := r.Int64() // too big for an int64
		return r.Value.Text() == "-1234567890123456789012345678901234567890" && errors.Is(err, ErrUnexpectedType)
	})
	check("return {verbatim_string={format='mkd', string='# title'}}", KindVerbatim, func(r Result) bool {
		s, _ := r.Text()
		return r.Value.Format() == "mkd" && s == "# title" && r.Value.Interface() == "# title"
	})
	check("return {set={x=true,y=true,z=true}}", KindSet, func(r Result) bool {
		s, _ := r.Strings()
		sort.Strings(s)
		return reflect.DeepEqual(s, []string{"x", "y", "z"})
	})
	check("return {map={a=1,b='two'}}", KindMap, func(r Result) bool {
		iv, _ := r.Interface()
		return reflect.DeepEqual(iv, map[string]any{"a": int64(1), "b": "two"})
	})
	check("return nil", KindNil, func(r Result) bool { return r.Value.IsNil() })
	check("return {1, {2, {3, 'x'}}, 'y', {}}", KindArray, func(r Result) bool {
		return fmt.Sprint(r.Value) == `array[1 array[2 array[3 "x"]] "y" array[]]`
	})
	if _, err := c.Do(ctx, "EVAL", "return {double=1.5}", 0).Float64(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Do(ctx, "EVAL", "return 'x'", 0).Float64(); !errors.Is(err, ErrUnexpectedType) {
		t.Fatalf("Float64 of x: %v", err)
	}
	if _, err := c.Do(ctx, "EVAL", "return {1}", 0).Float64(); !errors.Is(err, ErrUnexpectedType) {
		t.Fatalf("Float64 of an array: %v", err)
	}
	if _, err := c.Do(ctx, "EVAL", "return {1}", 0).Bool(); !errors.Is(err, ErrUnexpectedType) {
		t.Fatalf("Bool of an array: %v", err)
	}
	if _, err := c.Do(ctx, "EVAL", "return {1,2,3}", 0).StringMap(); !errors.Is(err, ErrUnexpectedType) {
		t.Fatalf("StringMap of 3 elements: %v", err)
	}
	if v := c.Do(ctx, "EVAL", "return {1}", 0).Value; v.Bytes() != nil || v.Text() != "" {
		t.Fatalf("Bytes/Text of an array: %v", v)
	}
	// a nested error inside an EXEC reply
	p := c.Pipeline()
	p.Do("SET", "str", "x")
	p.Do("MULTI")
	p.Do("INCR", "str")
	p.Do("INCR", "ctr")
	p.Do("EXEC")
	res, err := p.Exec(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ex := res[4].Value
	if ex.Kind() != KindArray || ex.Len() != 2 || ex.Elems()[0].Kind() != KindError || ex.Elems()[1].Text() != "1" {
		t.Fatalf("EXEC: %v", ex)
	}
	var re *ResponseError
	if !errors.As(ex.Elems()[0].Err(), &re) || re.Kind != ErrKindServer || re.Prefix() != "ERR" {
		t.Fatalf("nested error: %v", ex.Elems()[0].Err())
	}
	if _, ok := ex.Interface().([]any)[0].(*ResponseError); !ok {
		t.Fatalf("Interface of a nested error: %#v", ex.Interface())
	}
	if _, err := res[4].Strings(); err == nil {
		t.Fatal("Strings of a reply with an error element succeeded")
	}
	if !strings.HasPrefix(ex.Elems()[0].String(), "error(server") {
		t.Fatalf("String of an error value: %s", ex.Elems()[0])
	}
}

func TestStats(t *testing.T) {
	c := newTestClient(t, bundledURL, &Options{PoolSize: 2})
	ctx := testCtx(t)
	s0, err := c.Stats()
	if err != nil {
		t.Fatal(err)
	}
	p := c.Pipeline()
	for i := 0; i < 50; i++ {
		p.Get(fmt.Sprintf("st:%d", i))
	}
	if _, err := p.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	s1, err := c.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if s1.Commands-s0.Commands != 50 || s1.BytesWritten <= s0.BytesWritten || s1.BytesRead <= s0.BytesRead {
		t.Fatalf("stats %+v -> %+v", s0, s1)
	}
	if s1.Nodes != 4 || s1.Handles != 1 || s1.Connects < 4 {
		t.Fatalf("stats %+v: want 4 nodes, 1 handle, 4 connects", s1)
	}
}

func TestClose(t *testing.T) {
	c := newTestClient(t, bundledURL, nil)
	ctx := testCtx(t)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	if _, err := c.Ping(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("Ping after Close: %v", err)
	}
	p := c.Pipeline()
	p.Get("a")
	res, err := p.Exec(ctx)
	if !errors.Is(err, ErrClosed) || len(res) != 1 || !errors.Is(res[0].Err, ErrClosed) {
		t.Fatalf("Exec after Close: %v %v", res, err)
	}
	if _, err := c.Stats(); err != nil {
		t.Fatalf("Stats after Close: %v", err)
	}
}

func TestCloseDuringExecution(t *testing.T) {
	c := newTestClient(t, plainURL, nil)
	ctx := testCtx(t)
	done := make(chan Result, 1)
	go func() { done <- c.Do(ctx, "BLPOP", "close:never", 10) }()
	waitBlocked(t, plainPort, "blpop")
	start := time.Now()
	c.Close()
	r := <-done
	if !errors.Is(r.Err, ErrClosed) && !errors.Is(r.Err, ErrCancelled) {
		t.Fatalf("BLPOP during Close: %v", r.Err)
	}
	if time.Since(start) > 2*time.Second {
		t.Fatalf("Close took %v", time.Since(start))
	}
}

// waitBlocked waits until a client of the server at port runs the blocking command cmd.
func waitBlocked(t testing.TB, port int, cmd string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		// blocked now (flags has b), not merely its last command (cmd= stays after it ended)
		for _, l := range redisCLI(t, port, "CLIENT", "LIST") {
			f := strings.Fields(l)
			blocked, ran := false, false
			for _, kv := range f {
				if v, ok := strings.CutPrefix(kv, "flags="); ok && strings.Contains(v, "b") {
					blocked = true
				}
				ran = ran || kv == "cmd="+cmd
			}
			if blocked && ran {
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no client of port %d ran %s", port, cmd)
}

func TestGoroutineLeakFreeClose(t *testing.T) {
	before := runtime.NumGoroutine()
	for i := 0; i < 5; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		c, err := NewClient(ctx, &Options{URL: bundledURL})
		if err != nil {
			t.Fatal(err)
		}
		p := c.Pipeline()
		p.Get("x")
		if _, err := p.Exec(ctx); err != nil {
			t.Fatal(err)
		}
		c.Close()
		cancel()
	}
	// Goroutines that end after Close returned are fine; ones that never end are the
	// leak. Wait for the count to come down (an event), bounded only to report a leak.
	after := runtime.NumGoroutine()
	for end := time.Now().Add(30 * time.Second); after > before+2 && time.Now().Before(end); after = runtime.NumGoroutine() {
		time.Sleep(10 * time.Millisecond)
	}
	if after > before+2 {
		t.Fatalf("goroutines %d -> %d", before, after)
	}
}
