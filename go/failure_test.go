package slotlane

// Redis Cluster failure cases (Debian's redis-server 7.0 through ci/redis-cluster.sh):
// a primary killed while a pipeline waits on it, and MOVED/ASK during a live reshard.

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// slotOwners reads CLUSTER SLOTS through the client: slot -> port of the primary.
func slotOwners(t *testing.T, c *Client) map[int]int {
	t.Helper()
	r := c.Do(testCtx(t), "CLUSTER", "SLOTS")
	ranges, err := r.Slice()
	if err != nil {
		t.Fatal(err)
	}
	owners := map[int]int{}
	for _, rg := range ranges {
		e := rg.Elems()
		lo, _ := e[0].Int64()
		hi, _ := e[1].Int64()
		port, _ := e[2].Elems()[1].Int64()
		for s := lo; s <= hi; s++ {
			owners[int(s)] = int(port)
		}
	}
	return owners
}

func TestRedisClusterPrimaryKilledMidPipeline(t *testing.T) {
	dir := filepath.Join(workDir, "failure-cluster")
	if err := script("redis-cluster.sh", "start", dir, strconv.Itoa(failurePort), "3"); err != nil {
		t.Fatal(err)
	}
	defer script("redis-cluster.sh", "stop", dir)
	url := fmt.Sprintf("redis://127.0.0.1:%d", failurePort)
	c := newTestClient(t, url, &Options{PoolSize: 1, Mode: ModeCluster, ReconnectMin: 5 * time.Millisecond, ReconnectMax: 50 * time.Millisecond})
	ctx := testCtx(t)
	owners := slotOwners(t, c)
	victim := failurePort + 1
	keys := keysForEverySlot()
	// 300 keys spread over all slots, and a key of the victim for the blocking command
	var spread []string
	for i := 0; i < 300; i++ {
		spread = append(spread, keys[(i*53)%16384])
	}
	// The victim's first slot that none of the spread keys uses (those hold strings, and
	// BLPOP on one answers WRONGTYPE at once instead of blocking).
	used := map[int]bool{}
	for _, k := range spread {
		used[KeySlot(k)] = true
	}
	var victimKey string
	for s := 0; s < 16384 && victimKey == ""; s++ {
		if owners[s] == victim && !used[s] {
			victimKey = keys[s]
		}
	}
	p := c.Pipeline()
	for _, k := range spread {
		p.Set(k, "v:"+k, nil)
	}
	if res, err := p.Exec(ctx); err != nil {
		t.Fatal(err)
	} else {
		for _, r := range res {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
		}
	}
	// A BLPOP holds the victim (on a connection leased for it: a blocking command never
	// runs in a pipeline) when the primary is killed: it ends with the node, with an I/O
	// error, not at its 15 s nor at the ctx's deadline; the reads of every node before it
	// were right.
	for _, k := range spread {
		p.Get(k)
	}
	if res, err := p.Exec(ctx); err != nil {
		t.Fatal(err)
	} else {
		for i, k := range spread {
			if s, err := res[i].Text(); err != nil || s != "v:"+k {
				t.Fatalf("GET %s: %q %v", k, s, err)
			}
		}
	}
	done := make(chan Result, 1)
	start := time.Now()
	go func() { done <- c.Do(ctx, "BLPOP", victimKey, 15) }()
	waitBlocked(t, victim, "blpop")
	if err := script("redis-cluster.sh", "kill", dir, strconv.Itoa(victim)); err != nil {
		t.Fatal(err)
	}
	var last Result
	select {
	case last = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the BLPOP did not return after its primary was killed")
	}
	t.Logf("BLPOP returned %v after the start, error %v", time.Since(start), last.Err)
	var re *ResponseError
	if !errors.As(last.Err, &re) || re.Kind != ErrKindIO || !errors.Is(last.Err, ErrConnection) {
		t.Fatalf("BLPOP on the killed primary: %v", last.Err)
	}

	// While it is down: its commands fail fast, the others succeed.
	for _, k := range spread {
		p.Get(k)
	}
	res, _ := p.Exec(ctx)
	for i, k := range spread {
		if owners[KeySlot(k)] == victim {
			if res[i].Err == nil {
				t.Fatalf("GET %s on the dead node succeeded", k)
			}
			continue
		}
		if s, err := res[i].Text(); err != nil || s != "v:"+k {
			t.Fatalf("GET %s with a node down: %q %v", k, s, err)
		}
	}
	// Back: the next pipelines reconnect and everything succeeds.
	if err := script("redis-cluster.sh", "restart", dir, strconv.Itoa(victim)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		for _, k := range spread {
			p.Get(k)
		}
		res, _ = p.Exec(ctx)
		bad := 0
		for i, k := range spread {
			// the restarted node lost its keys (no persistence): nil is right for them
			if owners[KeySlot(k)] == victim {
				if res[i].Err != nil || !res[i].Value.IsNil() {
					bad++
				}
			} else if s, err := res[i].Text(); err != nil || s != "v:"+k {
				bad++
			}
		}
		if bad == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d commands still fail after the node came back", bad)
		}
		time.Sleep(100 * time.Millisecond)
	}
	st, _ := c.Stats()
	if st.Reconnects == 0 {
		t.Fatalf("no reconnect counted: %+v", st)
	}
}

func TestRedisClusterLiveReshard(t *testing.T) {
	c := newTestClient(t, clusterURL, &Options{PoolSize: 1, Mode: ModeCluster})
	ctx := testCtx(t)
	owners := slotOwners(t, c)
	// Two slots to move, with 40 keys each (hash tags), and background keys everywhere.
	var slots []int
	var tags []string
	for i := 0; len(slots) < 2; i++ {
		tag := "rs" + strconv.Itoa(i)
		s := KeySlot(tag)
		if owners[s] == clusterPort {
			slots, tags = append(slots, s), append(tags, tag)
		}
	}
	var moving []string
	for _, tag := range tags {
		for i := 0; i < 40; i++ {
			moving = append(moving, fmt.Sprintf("{%s}:%d", tag, i))
		}
	}
	keys := keysForEverySlot()
	var other []string
	for i := 0; i < 64; i++ {
		other = append(other, keys[(i*257)%16384])
	}
	all := append(append([]string{}, moving...), other...)
	p := c.Pipeline()
	for _, k := range all {
		p.Set(k, "0", nil)
	}
	if _, err := p.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	st0, _ := c.Stats()

	// Load: every key INCRed once per round, read back, until the migrations end.
	var stop atomic.Bool
	var wg sync.WaitGroup
	var loadErr error
	var roundsDone atomic.Int64 // rounds, for the main goroutine while the load runs
	rounds := 0
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer stop.Store(true)
		lp := c.Pipeline()
		for !stop.Load() {
			for _, k := range all {
				lp.Do("INCR", k)
			}
			res, err := lp.Exec(ctx)
			if err != nil {
				loadErr = err
				return
			}
			rounds++
			roundsDone.Store(int64(rounds))
			for i, r := range res {
				if n, err := r.Int64(); err != nil || n != int64(rounds) {
					loadErr = fmt.Errorf("round %d: INCR %s = %d, %v", rounds, all[i], n, err)
					return
				}
			}
		}
	}()
	env := append(os.Environ(), "SL_MIGRATE_COUNT=2", "SL_MIGRATE_DELAY=0.02")
	for i, s := range slots {
		to := clusterPort + 1 + i
		if err := scriptEnv(env, "redis-cluster.sh", "migrate", filepath.Join(workDir, "cluster"), strconv.Itoa(s),
			strconv.Itoa(clusterPort), strconv.Itoa(to)); err != nil {
			stop.Store(true)
			wg.Wait()
			t.Fatal(err)
		}
	}
	// At least two load rounds, one of them begun after the migrations ended (so it met
	// the new owners): counted rounds, not a sleep, so a busy machine cannot starve it.
	after := roundsDone.Load() + 1
	for !stop.Load() && (roundsDone.Load() < 2 || roundsDone.Load() <= after) {
		time.Sleep(5 * time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()
	if loadErr != nil {
		t.Fatalf("during the reshard: %v", loadErr)
	}
	// One more round after the migrations: the old owner answers MOVED for sure.
	for _, k := range moving {
		p.Get(k)
	}
	res, err := p.Exec(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if s, err := r.Text(); err != nil || s != strconv.Itoa(rounds) {
			t.Fatalf("GET %s after the reshard = %q %v, want %d", moving[i], s, err, rounds)
		}
	}
	st1, _ := c.Stats()
	moved, ask := st1.Moved-st0.Moved, st1.Ask-st0.Ask
	t.Logf("%d load rounds during the reshard; redirects followed: %d MOVED, %d ASK, %d refreshes", rounds, moved, ask, st1.Refreshes-st0.Refreshes)
	if moved == 0 {
		t.Fatalf("no MOVED was followed during a live reshard: %+v", st1)
	}
	if rounds < 2 {
		t.Fatalf("only %d load rounds ran during the reshard", rounds)
	}
	now := slotOwners(t, c)
	for i, s := range slots {
		if now[s] != clusterPort+1+i {
			t.Fatalf("slot %d is owned by %d after the migration", s, now[s])
		}
	}
}

func scriptEnv(env []string, name string, args ...string) error {
	cmd := exec.Command("bash", append([]string{filepath.Join(repoRoot, "ci", name)}, args...)...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("ci/%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return nil
}
