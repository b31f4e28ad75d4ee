package slotlanetest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	slotlane "github.com/slotlane/slotlane/go"
)

func client(t *testing.T, url string, mode slotlane.Mode) *slotlane.Client {
	t.Helper()
	c, err := slotlane.NewClient(context.Background(), &slotlane.Options{URL: url, Mode: mode, CommandTimeout: 60 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestTwoServersAtOnceOnEphemeralPorts(t *testing.T) {
	ctx := context.Background()
	a := NewServer(t, nil)
	b := NewServer(t, &Options{Shards: 2, PortMode: OnePort})
	seen := map[int]bool{}
	for _, p := range a.Ports {
		if p == 0 || seen[p] || p == b.Ports[0] {
			t.Fatalf("ports %v and %v", a.Ports, b.Ports)
		}
		seen[p] = true
	}
	if len(a.Ports) != 4 || b.Ports[0] != b.Ports[1] || a.URL != fmt.Sprintf("redis://127.0.0.1:%d", a.Ports[0]) {
		t.Fatalf("a %v %s, b %v", a.Ports, a.URL, b.Ports)
	}
	ca, cb := client(t, a.URL, slotlane.ModeAuto), client(t, b.URL, slotlane.ModeAuto)
	defer ca.Close()
	defer cb.Close()
	for i := 0; i < 64; i++ {
		if _, err := ca.Set(ctx, fmt.Sprintf("key:%d", i), fmt.Sprintf("a%d", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cb.Set(ctx, "key:1", "b1", nil); err != nil {
		t.Fatal(err)
	}
	va, _ := ca.Get(ctx, "key:1")
	vb, _ := cb.Get(ctx, "key:1")
	none, _ := cb.Get(ctx, "key:2")
	if va == nil || *va != "a1" || vb == nil || *vb != "b1" || none != nil {
		t.Fatalf("a %v b %v none %v", va, vb, none)
	}
	na, _ := ca.Dbsize(ctx)
	nb, _ := cb.Dbsize(ctx)
	if na != 64 || nb != 1 {
		t.Fatalf("dbsize %d %d", na, nb)
	}
	nodes, err := ca.Nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got, want []int
	for _, n := range nodes {
		p, _ := strconv.Atoi(n.Addr[strings.LastIndexByte(n.Addr, ':')+1:])
		got = append(got, p)
	}
	want = append(want, a.Ports...)
	sort.Ints(got)
	sort.Ints(want)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("nodes %v, ports %v", got, want)
	}
}

func TestStoppedWhileConnectedGivesErrorsNotHangs(t *testing.T) {
	ctx := context.Background()
	s := NewServer(t, &Options{Shards: 2})
	c := client(t, s.URL, slotlane.ModeAuto)
	defer c.Close()
	if _, err := c.Set(ctx, "k", "v", nil); err != nil {
		t.Fatal(err)
	}
	s.Stop()
	_, err := c.Get(ctx, "k")
	if err == nil || errors.Is(err, slotlane.ErrTimeout) {
		t.Fatalf("want an I/O error, not the 60 s deadline: %v", err)
	}
	if !errors.Is(err, slotlane.ErrConnection) && !errors.Is(err, slotlane.ErrCluster) {
		t.Fatalf("want ErrConnection or ErrCluster: %v", err)
	}
	s.Stop() // a second stop: nothing
}

func count(dir string) int {
	e, err := os.ReadDir(dir)
	if err != nil {
		panic(err)
	}
	return len(e)
}

func TestStartStop100TimesLeaksNoThreadsOrFds(t *testing.T) {
	ctx := context.Background()
	first, err := Start(&Options{Shards: 2})
	if err != nil {
		t.Fatal(err)
	}
	first.Close()
	// Go's own threads come and go with its scheduler: the count that must not grow is
	// of the fds, and of the threads after the loop settles back to at most the start's
	fds0, threads0 := count("/proc/self/fd"), count("/proc/self/task")
	for i := 0; i < 100; i++ {
		mode := PerShard
		if i%2 == 1 {
			mode = OnePort
		}
		s, err := Start(&Options{Shards: i%3 + 1, PortMode: mode, Forward: true})
		if err != nil {
			t.Fatal(err)
		}
		c := client(t, s.URL, slotlane.ModePlain)
		if _, err := c.Set(ctx, "k", i, nil); err != nil {
			t.Fatal(err)
		}
		s.Close() // with the client still connected
		c.Close()
	}
	fds1, threads1 := count("/proc/self/fd"), count("/proc/self/task")
	t.Logf("100 starts/stops: fds %d -> %d, threads %d -> %d", fds0, fds1, threads0, threads1)
	if fds1 != fds0 {
		t.Fatalf("fds %d -> %d", fds0, fds1)
	}
	// 100 × up to 3 shard threads each: a leak would leave hundreds
	if threads1 > threads0+8 {
		t.Fatalf("threads %d -> %d", threads0, threads1)
	}
}

func TestDurabilityAlwaysRestartKeepsData(t *testing.T) {
	ctx := context.Background()
	o := &Options{Shards: 3, Durability: Always, Dir: t.TempDir()}
	s, err := Start(o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Start(o); err == nil || !strings.Contains(err.Error(), "in use") && !strings.Contains(err.Error(), "cannot use") {
		t.Fatalf("a second server on the directory: %v", err)
	}
	c := client(t, s.URL, slotlane.ModeAuto)
	for i := 0; i < 50; i++ {
		if _, err := c.Set(ctx, fmt.Sprintf("key:%d", i), fmt.Sprintf("v%d", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	s.Close()
	s = NewServer(t, o)
	c = client(t, s.URL, slotlane.ModeAuto)
	defer c.Close()
	n, _ := c.Dbsize(ctx)
	v, _ := c.Get(ctx, "key:17")
	if n != 50 || v == nil || *v != "v17" {
		t.Fatalf("after the restart: dbsize %d, key:17 %v", n, v)
	}
}

func TestBadOptionsAreErrors(t *testing.T) {
	if _, err := Start(&Options{Shards: 300}); err == nil || !strings.Contains(err.Error(), "shards") {
		t.Fatalf("shards 300: %v", err)
	}
	if _, err := Start(&Options{Settings: []string{"maxclients", "many"}}); err == nil || !strings.Contains(err.Error(), "maxclients") {
		t.Fatalf("maxclients many: %v", err)
	}
	a := NewServer(t, &Options{Shards: 1})
	if _, err := Start(&Options{Shards: 1, Port: a.Ports[0]}); err == nil || !strings.Contains(err.Error(), "listen") {
		t.Fatalf("a busy port: %v", err)
	}
	s := NewServer(t, &Options{Shards: 1, Settings: []string{"hash-max-listpack-entries", "3"}})
	c := client(t, s.URL, slotlane.ModeAuto)
	defer c.Close()
	ctx := context.Background()
	if n, err := c.Do(ctx, "HSET", "h", "f1", 1, "f2", 2, "f3", 3, "f4", 4).Int64(); err != nil || n != 4 {
		t.Fatal(n, err)
	}
	if enc, err := c.Do(ctx, "OBJECT", "ENCODING", "h").Text(); err != nil || enc != "hashtable" {
		t.Fatal(enc, err)
	}
}
