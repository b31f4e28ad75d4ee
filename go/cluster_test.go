package slotlane

// ScanIter, Nodes and Script against the bundled server (4 shards, per-shard), standalone
// Redis and a 3-primary Redis Cluster: every key once, MATCH and TYPE, an empty keyspace,
// a live reshard (every key at least once, duplicates counted), scripts with keys on every
// shard and a reload after SCRIPT FLUSH on one node (counted by that node's INFO
// commandstats), FUNCTION LOAD then FCALL on every shard.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func scanDeployments() map[string]string {
	return map[string]string{"bundled": bundledURL, "plain": plainURL, "redis-cluster": clusterURL}
}

func flushAll(t *testing.T, ctx context.Context, c *Client) {
	t.Helper()
	if err := c.Do(ctx, "FLUSHALL").Err; err != nil {
		t.Fatal(err)
	}
}

func fillKeys(t *testing.T, ctx context.Context, c *Client, keys []string) {
	t.Helper()
	for i := 0; i < len(keys); i += 1000 {
		p := c.Pipeline()
		for _, k := range keys[i:min(i+1000, len(keys))] {
			p.Do("SET", k, "v")
		}
		if _, err := p.Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

func scanCount(t *testing.T, ctx context.Context, c *Client, o *ScanOptions) map[string]int {
	t.Helper()
	seen := map[string]int{}
	for k, err := range c.ScanIter(ctx, o) {
		if err != nil {
			t.Fatalf("ScanIter: %v", err)
		}
		seen[k]++
	}
	return seen
}

func TestScanIterEveryKey(t *testing.T) {
	for name, url := range scanDeployments() {
		t.Run(name, func(t *testing.T) {
			ctx := testCtx(t)
			c := newTestClient(t, url, nil)
			flushAll(t, ctx, c)
			if n := len(scanCount(t, ctx, c, nil)); n != 0 {
				t.Fatalf("%d keys in an empty keyspace", n)
			}
			var keys []string
			for i := 0; i < 10000; i++ {
				keys = append(keys, "gs:"+strconv.Itoa(i))
			}
			fillKeys(t, ctx, c, keys)
			for i := 0; i < 20; i++ {
				if err := c.Do(ctx, "HSET", "gsh:"+strconv.Itoa(i), "f", "v").Err; err != nil {
					t.Fatal(err)
				}
			}
			count := int64(500)
			seen := scanCount(t, ctx, c, &ScanOptions{Count: &count})
			if len(seen) != len(keys)+20 {
				t.Fatalf("%d keys, want %d", len(seen), len(keys)+20)
			}
			for _, k := range keys {
				if seen[k] != 1 {
					t.Fatalf("%s returned %d times", k, seen[k])
				}
			}
			m := scanCount(t, ctx, c, &ScanOptions{Match: "gs:1*"})
			want := 0
			for _, k := range keys {
				if strings.HasPrefix(k, "gs:1") {
					want++
					if m[k] != 1 {
						t.Fatalf("MATCH: %s returned %d times", k, m[k])
					}
				}
			}
			if len(m) != want {
				t.Fatalf("MATCH gs:1*: %d keys, want %d", len(m), want)
			}
			if h := scanCount(t, ctx, c, &ScanOptions{Type: []byte("hash")}); len(h) != 20 {
				t.Fatalf("TYPE hash: %d keys, want 20", len(h))
			}
			bad := int64(0)
			for _, err := range c.ScanIter(ctx, &ScanOptions{Count: &bad}) {
				if err == nil {
					t.Fatal("Count 0 was accepted")
				}
			}
			nodes, err := c.Nodes(ctx)
			if err != nil {
				t.Fatal(err)
			}
			covered, primaries := 0, 0
			for _, n := range nodes {
				if n.Primary {
					primaries++
					for _, r := range n.Slots {
						covered += r[1] - r[0] + 1
					}
					if err := c.DoRoute(ctx, RouteNode(n.Addr), "PING").Err; err != nil {
						t.Fatalf("PING %s: %v", n.Addr, err)
					}
				}
			}
			wantPrimaries := map[string]int{"bundled": 4, "plain": 1, "redis-cluster": 3}[name]
			if covered != 16384 || primaries != wantPrimaries {
				t.Fatalf("Nodes: %d primaries covering %d slots: %+v", primaries, covered, nodes)
			}
			flushAll(t, ctx, c)
		})
	}
}

func TestScanIterDuringLiveReshard(t *testing.T) {
	ctx := testCtx(t)
	c := newTestClient(t, clusterURL, &Options{Mode: ModeCluster})
	flushAll(t, ctx, c)
	var keys []string
	for i := 0; i < 10000; i++ {
		keys = append(keys, "gr:"+strconv.Itoa(i))
	}
	fillKeys(t, ctx, c, keys)
	owners := slotOwners(t, c)
	var slots []int // three slots of the seed's that hold keys
	for j := 0; j < len(keys) && len(slots) < 3; j += 97 {
		if s := KeySlot(keys[j]); owners[s] == clusterPort && (len(slots) == 0 || slots[len(slots)-1] != s) {
			slots = append(slots, s)
		}
	}
	env := append(os.Environ(), "SL_MIGRATE_COUNT=1", "SL_MIGRATE_DELAY=0.005")
	scans, dups := 0, 0
	for i, s := range slots {
		done := make(chan error, 1)
		go func() {
			done <- scriptEnv(env, "redis-cluster.sh", "migrate", filepath.Join(workDir, "cluster"), strconv.Itoa(s),
				strconv.Itoa(clusterPort), strconv.Itoa(clusterPort+1+i%2))
		}()
		for finished := false; !finished; {
			seen := scanCount(t, ctx, c, nil)
			for _, k := range keys {
				if seen[k] < 1 {
					t.Fatalf("during the move of slot %d: %s missed", s, k)
				}
				dups += seen[k] - 1
			}
			scans++
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
				finished = true
			default:
			}
		}
	}
	t.Logf("%d full scans of %d keys while %d slots moved: none missed, %d duplicates", scans, len(keys), len(slots), dups)
	flushAll(t, ctx, c)
}

func commandCalls(t *testing.T, ctx context.Context, c *Client, addr, name string) int {
	t.Helper()
	info, err := c.DoRoute(ctx, RouteNode(addr), "INFO", "commandstats").Text()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if strings.HasPrefix(line, "cmdstat_"+name+":") {
			v := strings.SplitN(strings.SplitN(line, "calls=", 2)[1], ",", 2)[0]
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	return 0
}

// keyOn returns a key whose slot the node serves.
func keyOn(n Node, prefix string) string {
	for i := 0; ; i++ {
		k := prefix + strconv.Itoa(i)
		if s := KeySlot(k); s >= n.Slots[0][0] && s <= n.Slots[0][1] {
			return k
		}
	}
}

func TestScriptEveryShardAndReload(t *testing.T) {
	for name, url := range scanDeployments() {
		t.Run(name, func(t *testing.T) {
			ctx := testCtx(t)
			c := newTestClient(t, url, nil)
			flushAll(t, ctx, c)
			if err := c.Do(ctx, "SCRIPT", "FLUSH").Err; err != nil {
				t.Fatal(err)
			}
			s := NewScript("return redis.call('INCRBY', KEYS[1], ARGV[1])")
			if sha, err := c.Do(ctx, "SCRIPT", "LOAD", "return redis.call('INCRBY', KEYS[1], ARGV[1])").Text(); err != nil || sha != s.Hash() {
				t.Fatalf("SCRIPT LOAD: %q %v, want %s", sha, err, s.Hash())
			}
			nodes, err := c.Nodes(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var primaries []Node
			for _, n := range nodes {
				if n.Primary {
					primaries = append(primaries, n)
				}
			}
			var keys []string
			for _, n := range primaries {
				k := keyOn(n, "gk:")
				keys = append(keys, k)
				if v, err := s.Run(ctx, c, []string{k}, 5).Int64(); err != nil || v != 5 {
					t.Fatalf("Run on %s (%s): %d %v", k, n.Addr, v, err)
				}
			}
			victim := primaries[len(primaries)-1]
			before := commandCalls(t, ctx, c, victim.Addr, "script|load")
			if err := c.DoRoute(ctx, RouteNode(victim.Addr), "SCRIPT", "FLUSH").Err; err != nil {
				t.Fatal(err)
			}
			for want := int64(6); want <= 7; want++ {
				if v, err := s.Run(ctx, c, []string{keys[len(keys)-1]}, 1).Int64(); err != nil || v != want {
					t.Fatalf("Run after SCRIPT FLUSH on %s: %d %v, want %d", victim.Addr, v, err, want)
				}
			}
			after := commandCalls(t, ctx, c, victim.Addr, "script|load")
			if (before > 0 || after > 0) && after-before != 1 {
				t.Fatalf("%d SCRIPT LOADs on %s after its flush, want 1", after-before, victim.Addr)
			}
			ro := NewScript("return redis.call('GET', KEYS[1])")
			want := "5"
			if len(keys) == 1 { // the one node was also the flushed one
				want = "7"
			}
			if v, err := ro.RunRO(ctx, c, []string{keys[0]}).Text(); err != nil || v != want {
				t.Fatalf("RunRO: %q %v, want %s", v, err, want)
			}
			if err := NewScript("not lua at all").Run(ctx, c, []string{keys[0]}).Err; err == nil {
				t.Fatal("a script that does not compile ran")
			}
			// functions: FUNCTION LOAD goes to every primary, FCALL works on every shard
			lib := "#!lua name=golib\nredis.register_function('gof', function(keys, args) return redis.call('INCR', keys[1]) end)"
			if err := c.Do(ctx, "FUNCTION", "FLUSH").Err; err != nil {
				t.Fatal(err)
			}
			if v, err := c.Do(ctx, "FUNCTION", "LOAD", lib).Text(); err != nil || v != "golib" {
				t.Fatalf("FUNCTION LOAD: %q %v", v, err)
			}
			for i, k := range keys {
				want := int64(6)
				if i == len(keys)-1 {
					want = 8
				}
				if v, err := c.Do(ctx, "FCALL", "gof", 1, k).Int64(); err != nil || v != want {
					t.Fatalf("FCALL on %s: %d %v, want %d", k, v, err, want)
				}
			}
			if err := c.Do(ctx, "FUNCTION", "DELETE", "golib").Err; err != nil {
				t.Fatal(err)
			}
			if err := c.Do(ctx, "FCALL", "gof", 1, keys[0]).Err; err == nil {
				t.Fatal(fmt.Sprintf("FCALL after FUNCTION DELETE on %s succeeded", name))
			}
			flushAll(t, ctx, c)
		})
	}
}
