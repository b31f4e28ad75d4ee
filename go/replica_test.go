package slotlane

// Replica reads and topology events (issue 21) against a Redis Cluster of 3 primaries
// x 1 replica of its own (ci/redis-cluster.sh), ports block+26..37: primaries +26..28,
// replicas +29..31 (replica of primary i: +29+i, i.e. base+3+i), buses +32..37.

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func startReplicaCluster(t *testing.T) (dir string, base int) {
	t.Helper()
	base = portBlock + 26
	dir = filepath.Join(workDir, "replicas")
	if err := script("redis-cluster.sh", "start", dir, strconv.Itoa(base), "3", "1"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = script("redis-cluster.sh", "stop", dir) })
	return dir, base
}

// cmdstatCalls is the calls= of cmdstat_<cmd> in a node's INFO commandstats (0: none yet).
func cmdstatCalls(t *testing.T, port int, cmd string) int {
	t.Helper()
	for _, l := range redisCLI(t, port, "INFO", "commandstats") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l), "cmdstat_"+cmd+":calls="); ok {
			n, err := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
			if err != nil {
				t.Fatalf("commandstats line %q: %v", l, err)
			}
			return n
		}
	}
	return 0
}

// keyOnFirstPrimary is a key of a slot of primary 0 (slots 0..5460 by redis-cluster.sh).
func keyOnFirstPrimary(t *testing.T, prefix string) string {
	for i := 0; i < 100000; i++ {
		k := fmt.Sprintf("%s:%d", prefix, i)
		if KeySlot(k) <= 5000 {
			return k
		}
	}
	t.Fatal("no key found")
	return ""
}

func TestReplicaReadsAndTopologyEvent(t *testing.T) {
	_, base := startReplicaCluster(t)
	ctx := testCtx(t)
	events := make(chan Event, 1024)
	c := newTestClient(t, fmt.Sprintf("redis://127.0.0.1:%d", base), &Options{
		ReadFrom: ReadPreferReplica,
		PoolSize: 1,
		OnEvent: func(ev Event) {
			select {
			case events <- ev:
			default:
			}
		},
	})
	key := keyOnFirstPrimary(t, "rr")
	primary, replica := base, base+3
	if err := c.Do(ctx, "SET", key, "v1").Err; err != nil {
		t.Fatal(err)
	}
	// The replica's copy: replication is asynchronous, so GET (served by the replica)
	// is polled until it shows the write (bounded by ctx against a hang).
	for {
		v, err := c.Do(ctx, "GET", key).Text()
		if err == nil && v == "v1" {
			break
		}
		if err != nil && !errors.Is(err, ErrNil) && ctx.Err() != nil {
			t.Fatalf("GET %s: %v", key, err)
		}
	}
	replicaBefore, primaryBefore := cmdstatCalls(t, replica, "get"), cmdstatCalls(t, primary, "get")
	const n = 200
	for i := 0; i < n; i++ {
		if v, err := c.Do(ctx, "GET", key).Text(); err != nil || v != "v1" {
			t.Fatalf("GET %s = %q, %v", key, v, err)
		}
	}
	replicaGets, primaryGets := cmdstatCalls(t, replica, "get")-replicaBefore, cmdstatCalls(t, primary, "get")-primaryBefore
	if replicaGets < n || primaryGets != 0 {
		t.Fatalf("ReadPreferReplica: %d GETs on the replica %d and %d on the primary %d, want %d and 0",
			replicaGets, replica, primaryGets, primary, n)
	}
	// A write still goes to the primary.
	setBefore := cmdstatCalls(t, primary, "set")
	if err := c.Do(ctx, "SET", key, "v2").Err; err != nil {
		t.Fatal(err)
	}
	if got := cmdstatCalls(t, primary, "set") - setBefore; got != 1 {
		t.Fatalf("SET on the primary: %d calls, want 1", got)
	}

	// The discovery of the map at connect is a refresh that changed it: OnEvent got
	// EventTopologyChanged through the client's queue (delivered from its goroutine).
	for {
		select {
		case ev := <-events:
			if ev.Type == EventTopologyChanged && ev.Addr != "" {
				return
			}
		case <-ctx.Done():
			t.Fatalf("no EventTopologyChanged: %v", ctx.Err())
		}
	}
}

func TestReadFromInvalid(t *testing.T) {
	_, err := NewClient(context.Background(), &Options{URL: clusterURL, ReadFrom: ReadFrom(7)})
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("ReadFrom(7): %v, want ErrInvalid", err)
	}
}
