package slotlane

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A context cancelled while a long pipeline runs on the bundled server: the core stops
// the execution (sl_client_cancel from the ctx watcher), the replies that arrived
// before stay, the rest are cancelled records, and the error says both ErrCancelled
// and context.Canceled. The cancel time is taken from an uncancelled run of the same
// pipeline so that it lands in its middle.
func TestCancelMidPipelineBundled(t *testing.T) {
	c := newTestClient(t, bundledURL, &Options{PoolSize: 1})
	keys := keysForEverySlot()
	const n = 200000
	p := c.Pipeline()
	fill := func() {
		for i := 0; i < n; i++ {
			p.Set(keys[i%len(keys)], "v", nil)
		}
	}
	var full time.Duration
	for i := 0; i < 2; i++ { // the second run, with warm buffers
		fill()
		start := time.Now()
		if _, err := p.Exec(testCtx(t)); err != nil {
			t.Fatal(err)
		}
		full = time.Since(start)
	}
	for attempt, frac := range []float64{0.5, 0.7, 0.3, 0.85, 0.15} {
		fill()
		ctx, cancel := context.WithCancel(context.Background())
		at := time.Duration(float64(full) * frac)
		time.AfterFunc(at, cancel)
		start := time.Now()
		res, err := p.Exec(ctx)
		took := time.Since(start)
		cancel()
		if len(res) != n {
			t.Fatalf("%d results for %d commands", len(res), n)
		}
		cancelled, ok := 0, 0
		for _, r := range res {
			var re *ResponseError
			switch {
			case r.Err == nil:
				ok++
			case errors.As(r.Err, &re) && re.Kind == ErrKindCancelled:
				if !errors.Is(r.Err, context.Canceled) || !errors.Is(r.Err, ErrCancelled) {
					t.Fatalf("a cancelled record's error %v does not match context.Canceled", r.Err)
				}
				cancelled++
			default:
				t.Fatalf("unexpected result %v", r.Err)
			}
		}
		t.Logf("attempt %d: full run %v, cancel at %v: %d ok, %d cancelled, Exec took %v", attempt, full, at, ok, cancelled, took)
		if cancelled == 0 {
			if err != nil {
				t.Fatalf("Exec failed (%v) with no cancelled command", err)
			}
			continue // finished before the cancel: try earlier
		}
		if !errors.Is(err, ErrCancelled) || !errors.Is(err, context.Canceled) {
			t.Fatalf("Exec error %v: want ErrCancelled and context.Canceled", err)
		}
		if took > at+2*time.Second {
			t.Fatalf("Exec returned %v after the cancel", took-at)
		}
		if ok == 0 {
			continue // cancelled before any reply: try later
		}
		// the client works afterwards, and is not cancelled again
		for i := 0; i < 3; i++ {
			if _, err := c.Ping(testCtx(t)); err != nil {
				t.Fatalf("Ping after the cancel: %v", err)
			}
		}
		return
	}
	t.Fatal("no attempt cancelled the pipeline in its middle (some replies ok, the rest cancelled)")
}

// The same with a command that blocks on the server (deterministic): BLPOP on Redis.
func TestCancelBlockedCommand(t *testing.T) {
	c := newTestClient(t, plainURL, &Options{PoolSize: 1})
	ctx, cancel := context.WithCancel(context.Background())
	p := c.Pipeline()
	p.Set("cb:a", "1", nil)
	p.Do("BLPOP", "cb:never", 20)
	p.Get("cb:a")
	done := make(chan struct{})
	var res []Result
	var err error
	go func() {
		res, err = p.Exec(ctx)
		close(done)
	}()
	waitBlocked(t, plainPort, "blpop")
	start := time.Now()
	cancel()
	<-done
	if d := time.Since(start); d > time.Second {
		t.Fatalf("cancel took %v", d)
	}
	if !errors.Is(err, context.Canceled) || !errors.Is(err, ErrCancelled) {
		t.Fatalf("error %v", err)
	}
	if s, _ := res[0].Text(); s != "OK" {
		t.Fatalf("SET before the block: %v", res[0])
	}
	for _, i := range []int{1, 2} {
		var re *ResponseError
		if !errors.As(res[i].Err, &re) || re.Kind != ErrKindCancelled {
			t.Fatalf("result %d: %v", i, res[i].Err)
		}
	}
	start = time.Now()
	if v, err := c.Get(testCtx(t), "cb:a"); err != nil || v == nil || *v != "1" {
		t.Fatalf("Get after the cancel: %v %v", v, err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("the command after a cancelled BLPOP waited %v (for the BLPOP's reply?)", d)
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
	if took < 100*time.Millisecond || took > 2*time.Second {
		t.Fatalf("the deadline of 150ms ended the call after %v", took)
	}
	// a deadline already passed: refused before sending
	if r := c.Do(ctx, "PING"); !errors.Is(r.Err, context.DeadlineExceeded) {
		t.Fatalf("expired ctx: %v", r.Err)
	}
	// the client's CommandTimeout applies when ctx has none
	c2 := newTestClient(t, plainURL, &Options{CommandTimeout: 200 * time.Millisecond, PoolSize: 1})
	start = time.Now()
	if r := c2.Do(context.Background(), "BLPOP", "dl:never", 10); !errors.Is(r.Err, ErrTimeout) || errors.Is(r.Err, context.DeadlineExceeded) {
		t.Fatalf("CommandTimeout: %v", r.Err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("CommandTimeout 200ms took %v", took)
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
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := NewClient(ctx, &Options{URL: bundledURL, PoolSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			p := c.Pipeline()
			for i := 0; ; i++ {
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
					if !errors.Is(err, ErrClosed) && !errors.Is(err, ErrCancelled) {
						errs <- fmt.Errorf("worker %d: %v", w, err)
					}
					return
				}
			}
		}(w)
	}
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	c.Close()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Close and the workers' end took %v", d)
	}
}
