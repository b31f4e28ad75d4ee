package slotlane

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A context cancelled in the middle of a long pipeline: the core stops the execution
// (sl_client_cancel from the ctx watcher), the replies that arrived before stay, the
// rest are cancelled records, and the error says both ErrCancelled and
// context.Canceled. The middle is an event, not a moment: a server that answers the
// first `answered` commands and then stalls on purpose (stallServer) says when it has
// written those answers, and only then is ctx cancelled; so exactly `answered` results
// are values, however busy the machine.
func TestCancelMidPipeline(t *testing.T) {
	const n, answered = 20000, 1000
	addr, stalled := stallServer(t, answered)
	c := newTestClient(t, "redis://"+addr, &Options{PoolSize: 1, Mode: ModePlain})
	keys := keysForEverySlot()
	p := c.Pipeline()
	for i := 0; i < n; i++ {
		p.Set(keys[i%len(keys)], "v", nil)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	var res []Result
	var err error
	go func() {
		res, err = p.Exec(ctx)
		close(done)
	}()
	<-stalled
	cancel()
	<-done
	if len(res) != n {
		t.Fatalf("%d results for %d commands", len(res), n)
	}
	cancelled, ok := 0, 0
	for i, r := range res {
		var re *ResponseError
		switch {
		case r.Err == nil:
			if s, _ := r.Text(); s != "OK" {
				t.Fatalf("result %d: %v", i, r.Value)
			}
			ok++
		case errors.As(r.Err, &re) && re.Kind == ErrKindCancelled:
			if !errors.Is(r.Err, context.Canceled) || !errors.Is(r.Err, ErrCancelled) {
				t.Fatalf("a cancelled record's error %v does not match context.Canceled", r.Err)
			}
			cancelled++
		default:
			t.Fatalf("unexpected result %d: %v", i, r.Err)
		}
	}
	if ok != answered || cancelled != n-answered {
		t.Fatalf("%d ok and %d cancelled; the server answered %d of %d", ok, cancelled, answered, n)
	}
	if !errors.Is(err, ErrCancelled) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Exec error %v: want ErrCancelled and context.Canceled", err)
	}
	// the client works afterwards (a new connection), and is not cancelled again
	for i := 0; i < 3; i++ {
		if _, err := c.Ping(testCtx(t)); err != nil {
			t.Fatalf("Ping after the cancel: %v", err)
		}
	}
}

// A blocking command in a pipeline is refused before anything is sent (it would stall the
// commands behind it); alone, a BLPOP runs on a leased connection, and a cancel of its ctx
// ends it (the lease is closed, the shared connection is untouched).
func TestCancelBlockedCommand(t *testing.T) {
	c := newTestClient(t, plainURL, &Options{PoolSize: 1})
	p := c.Pipeline()
	p.Set("cb:a", "1", nil)
	p.Do("BLPOP", "cb:never", 20)
	p.Get("cb:a")
	if _, err := p.Exec(testCtx(t)); !errors.Is(err, ErrBlockingPipeline) {
		t.Fatalf("a pipeline with BLPOP: %v, want ErrBlockingPipeline", err)
	}
	if v, err := c.Get(testCtx(t), "cb:a"); err != nil || v != nil {
		t.Fatalf("the refused pipeline sent its SET: %v %v", v, err)
	}
	if _, err := c.Set(testCtx(t), "cb:a", "1", nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan Result, 1)
	go func() { done <- c.Do(ctx, "BLPOP", "cb:never", 20) }()
	waitBlocked(t, plainPort, "blpop")
	cancel()
	r := <-done // the BLPOP waits 20 s: only the cancel ends it sooner
	if !errors.Is(r.Err, context.Canceled) || !errors.Is(r.Err, ErrCancelled) {
		t.Fatalf("BLPOP after the cancel: %v", r.Err)
	}
	if v, err := c.Get(testCtx(t), "cb:a"); err != nil || v == nil || *v != "1" {
		t.Fatalf("Get after the cancel: %v %v", v, err)
	}
}

// ctx's deadline is the execution's deadline.
func TestDeadline(t *testing.T) {
	c := newTestClient(t, plainURL, &Options{PoolSize: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	start := time.Now()
	r := c.Do(ctx, "BLPOP", "dl:never", 10)
	took := time.Since(start)
	if !errors.Is(r.Err, ErrTimeout) || !errors.Is(r.Err, context.DeadlineExceeded) {
		t.Fatalf("BLPOP past the deadline: %v", r.Err)
	}
	var to interface{ Timeout() bool }
	if !errors.As(r.Err, &to) || !to.Timeout() {
		t.Fatalf("%v is not a Timeout() error", r.Err)
	}
	// BLPOP waits 10 s, so ErrTimeout above says the deadline ended it; a busy machine
	// only makes it later, never earlier than the deadline
	if took < 100*time.Millisecond {
		t.Fatalf("the deadline of 150ms ended the call after %v", took)
	}
	// a deadline already passed: refused before sending. The core's clock may see the
	// deadline pass before Go's timer closes ctx.Done(): wait for that event, so the
	// check is about an expired ctx and not about which clock ticked first.
	<-ctx.Done()
	if r := c.Do(ctx, "PING"); !errors.Is(r.Err, context.DeadlineExceeded) {
		t.Fatalf("expired ctx: %v", r.Err)
	}
	// the client's CommandTimeout (when ctx has none) is not a blocking command's deadline:
	// that is its block time plus the grace, so a BLPOP of 0.3 s gets the server's nil,
	// never a timeout at 200 ms (core/tests/test_lease.c covers the deadline's rule)
	c2 := newTestClient(t, plainURL, &Options{CommandTimeout: 200 * time.Millisecond, PoolSize: 1})
	if r := c2.Do(context.Background(), "BLPOP", "dl:never", "0.3"); r.Err != nil || !r.Value.IsNil() {
		t.Fatalf("BLPOP 0.3 with CommandTimeout 200ms: %v", r.Err)
	}
	if _, err := c2.Ping(context.Background()); err != nil {
		t.Fatalf("after a timeout: %v", err)
	}
	// a cancelled ctx: refused before sending
	cctx, ccancel := context.WithCancel(context.Background())
	ccancel()
	if r := c.Do(cctx, "PING"); !errors.Is(r.Err, context.Canceled) {
		t.Fatalf("cancelled ctx: %v", r.Err)
	}
}

// Waiting for a handle honours ctx too.
func TestPoolWaitHonoursContext(t *testing.T) {
	c := newTestClient(t, plainURL, &Options{PoolSize: 1})
	bg, stop := context.WithCancel(context.Background())
	defer stop()
	done := make(chan struct{})
	go func() {
		c.Do(bg, "BLPOP", "pw:never", 10)
		close(done)
	}()
	waitBlocked(t, plainPort, "blpop")
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if r := c.Do(ctx, "PING"); !errors.Is(r.Err, context.DeadlineExceeded) {
		t.Fatalf("waiting for the busy handle: %v", r.Err)
	}
	stop()
	<-done
	if _, err := c.Ping(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if st, _ := c.Stats(); st.Handles != 1 {
		t.Fatalf("%d handles with PoolSize 1", st.Handles)
	}
}

// A cancel that lands after the execution finished must not cancel the next one on
// the same handle (the core keeps a cancel for the next execution; the binding
// consumes it).
func TestLateCancelDoesNotLeak(t *testing.T) {
	c := newTestClient(t, bundledURL, &Options{PoolSize: 1})
	bg := testCtx(t)
	for i := 0; i < 300; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		go cancel()
		c.Do(ctx, "PING") // either result is fine
		if _, err := c.Ping(bg); err != nil {
			t.Fatalf("iteration %d: a Ping after a racing cancel failed: %v", i, err)
		}
	}
}

// Many goroutines on one client: pipelines and single commands, every reply checked.
func TestConcurrentGoroutines(t *testing.T) {
	for _, pool := range []int{3, 0} {
		t.Run("pool="+strconv.Itoa(pool), func(t *testing.T) {
			c := newTestClient(t, bundledURL, &Options{PoolSize: pool})
			ctx := testCtx(t)
			const workers, rounds = 48, 40
			var wg sync.WaitGroup
			var failed atomic.Int32
			errs := make(chan error, workers)
			for w := 0; w < workers; w++ {
				wg.Add(1)
				go func(w int) {
					defer wg.Done()
					p := c.Pipeline()
					for r := 0; r < rounds && failed.Load() == 0; r++ {
						for i := 0; i < 20; i++ {
							k := fmt.Sprintf("cc:%d:%d", w, i)
							p.Set(k, fmt.Sprintf("%d/%d/%d", w, r, i), nil)
							p.Get(k)
						}
						res, err := p.Exec(ctx)
						if err != nil {
							errs <- err
							failed.Add(1)
							return
						}
						for i := 0; i < 20; i++ {
							if s, err := res[2*i+1].Text(); err != nil || s != fmt.Sprintf("%d/%d/%d", w, r, i) {
								errs <- fmt.Errorf("worker %d round %d: GET = %q %v", w, r, s, err)
								failed.Add(1)
								return
							}
						}
						n, err := c.Incr(ctx, "cc:counter")
						if err != nil || n <= 0 {
							errs <- fmt.Errorf("Incr = %d %v", n, err)
							failed.Add(1)
							return
						}
					}
				}(w)
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			if t.Failed() {
				return
			}
			st, err := c.Stats()
			if err != nil {
				t.Fatal(err)
			}
			if pool > 0 && st.Handles > pool {
				t.Fatalf("%d handles with PoolSize %d", st.Handles, pool)
			}
			if st.Handles < 1 {
				t.Fatalf("stats: %+v", st)
			}
		})
	}
}

// Close while many goroutines run pipelines and commands: each call either succeeds or
// fails with ErrClosed / ErrCancelled; nothing hangs or crashes.
func TestCloseUnderLoad(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute) // a hang guard only
	defer cancel()
	c, err := NewClient(ctx, &Options{URL: bundledURL, PoolSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	var wg, running sync.WaitGroup
	errs := make(chan error, 64)
	for w := 0; w < 16; w++ {
		wg.Add(1)
		running.Add(1)
		go func(w int) {
			defer wg.Done()
			p := c.Pipeline()
			for i := 0; ; i++ {
				if i == 2 {
					running.Done() // a pipeline and a command done: Close may come
				}
				var err error
				if i%2 == 0 {
					for j := 0; j < 50; j++ {
						p.Set(fmt.Sprintf("cul:%d:%d", w, j), "v", nil)
					}
					_, err = p.Exec(ctx)
				} else {
					_, err = c.Ping(ctx)
				}
				if err != nil {
					if i < 2 {
						running.Done()
					}
					if !errors.Is(err, ErrClosed) && !errors.Is(err, ErrCancelled) {
						errs <- fmt.Errorf("worker %d: %v", w, err)
					}
					return
				}
			}
		}(w)
	}
	running.Wait() // every worker is in its loop (an event, not a sleep)
	c.Close()
	wg.Wait() // a worker that never ended would hang here until go test's -timeout
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// A BLPOP 0 (no deadline) cancelled by its ctx returns an error matching ctx.Err() and
// ErrCancelled; the cancel closes its leased connection, so the server drops the armed
// pop (INFO blocked_clients of the key's node goes back down: the verdict is that counter,
// not a sleep), and an element pushed afterwards is received by the next BLPOP: nothing is
// swallowed by the cancelled one. Each handle's client runs one execution, so the cancel
// (sl_client_cancel) is that execution's alone, as sl_batch_cancel is in the async API.
func TestCancelBlockingNothingSwallowed(t *testing.T) {
	for _, s := range txServers() {
		t.Run(s.name, func(t *testing.T) {
			c := newTestClient(t, s.url, &Options{PoolSize: 2})
			ctx := testCtx(t)
			key := "{cbs}:list"
			if _, err := c.Delete(ctx, key); err != nil {
				t.Fatal(err)
			}
			blocked := func() int { return blockedClients(t, c, s.cluster, key) }
			waitBlockedCount := func(want int) { waitBlockedClients(t, c, s.cluster, key, want) }
			base := blocked()
			for round := 0; round < 3; round++ {
				bctx, cancel := context.WithCancel(ctx)
				done := make(chan Result, 1)
				go func() { done <- c.Do(bctx, "BLPOP", key, 0) }()
				waitBlockedCount(base + 1)
				cancel()
				r := <-done
				if !errors.Is(r.Err, context.Canceled) || !errors.Is(r.Err, ErrCancelled) {
					t.Fatalf("round %d: BLPOP 0 after its ctx was cancelled: %v %v", round, r.Value, r.Err)
				}
				waitBlockedCount(base) // the cancelled pop is gone from the server
				elem := "e" + strconv.Itoa(round)
				if _, err := c.Lpush(ctx, key, elem); err != nil {
					t.Fatal(err)
				}
				got, err := c.Blpop(ctx, []string{key}, 5) // nil after 5 s if the element was swallowed
				if err != nil || got == nil || got.First != key || got.Second != elem {
					t.Fatalf("round %d: the next BLPOP got %v %v, want %s", round, got, err, elem)
				}
				if n, err := c.Do(ctx, "LLEN", key).Int64(); err != nil || n != 0 {
					t.Fatalf("round %d: LLEN %d %v", round, n, err)
				}
			}
		})
	}
}

// blockedClients is INFO blocked_clients of key's node (cluster), or of the server.
func blockedClients(t *testing.T, c *Client, cluster bool, key string) int {
	t.Helper()
	ctx := testCtx(t)
	var r Result
	if cluster {
		r = c.DoRoute(ctx, RouteSlot(KeySlot(key)), "INFO", "clients")
	} else {
		r = c.Do(ctx, "INFO", "clients")
	}
	info, err := r.Text()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "blocked_clients:"); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("INFO clients: %q", l)
			}
			return n
		}
	}
	t.Fatalf("INFO clients has no blocked_clients: %q", info)
	return 0
}

// waitBlockedClients polls blockedClients until it is want (bounded only against a hang).
func waitBlockedClients(t *testing.T, c *Client, cluster bool, key string, want int) {
	t.Helper()
	for i := 0; i < 5000; i++ {
		if blockedClients(t, c, cluster, key) == want {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("blocked_clients stayed at %d, want %d", blockedClients(t, c, cluster, key), want)
}
