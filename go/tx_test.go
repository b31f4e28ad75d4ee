package slotlane

// Transactions (tx.go) on the bundled server and a Redis Cluster (and plain Redis where the
// behaviour is not about slots): WATCH conflicts of 8 goroutines against a model, an
// aborted EXEC, a session abandoned without EXEC coming back clean, CROSSSLOT refused
// before sending, EXECABORT, a slot moved while watched, Close with a Tx open. Every
// verdict comes from replies and counters, never from a sleep.

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

type txServer struct {
	name, url string
	cluster   bool
}

func txServers() []txServer {
	return []txServer{{"bundled", bundledURL, true}, {"redis-cluster", clusterURL, true}, {"redis-plain", plainURL, false}}
}

// forTxServers runs f as a subtest per server (clusterOnly: the cluster ones).
func forTxServers(t *testing.T, clusterOnly bool, f func(t *testing.T, s txServer)) {
	for _, s := range txServers() {
		if clusterOnly && !s.cluster {
			continue
		}
		t.Run(s.name, func(t *testing.T) { f(t, s) })
	}
}

// 8 goroutines increment one key with WATCH / GET / MULTI / INCR / RPUSH / EXEC, retrying
// aborted transactions. The model: the key ends at the number of committed transactions;
// each committed INCR answered the GET's value plus one (the watch held: nobody wrote in
// between); the log holds the id of every committed transaction and of no aborted one.
func TestTxWatchConflicts(t *testing.T) {
	forTxServers(t, false, func(t *testing.T, s txServer) {
		const workers, each = 8, 25
		c := newTestClient(t, s.url, &Options{PoolSize: workers})
		ctx := testCtx(t)
		key, logKey := "{txw}:counter", "{txw}:log"
		if _, err := c.Delete(ctx, key, logKey); err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		committed := map[string]bool{}
		aborted := map[string]bool{}
		errc := make(chan error, workers)
		var wg sync.WaitGroup
		for g := 0; g < workers; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				for i := 0; i < each; i++ {
					for attempt := 0; ; attempt++ {
						id := fmt.Sprintf("%d:%d:%d", g, i, attempt)
						var incr Reply[int64]
						var read int64
						err := c.Watch(ctx, func(tx *Tx) error {
							n, err := tx.Do(ctx, "GET", key).Int64()
							if err != nil && !errors.Is(err, ErrNil) {
								return err
							}
							read = n
							_, err = tx.TxPipelined(ctx, func(p *Pipeline) error {
								incr = p.Incr(key)
								p.Rpush(logKey, id)
								return nil
							})
							return err
						}, key)
						if errors.Is(err, ErrWatch) {
							if _, e := incr.Result(); !errors.Is(e, ErrWatch) {
								errc <- fmt.Errorf("an aborted transaction's INCR result: %v", e)
								return
							}
							mu.Lock()
							aborted[id] = true
							mu.Unlock()
							continue
						}
						if err != nil {
							errc <- fmt.Errorf("transaction %s: %w", id, err)
							return
						}
						v, err := incr.Result()
						if err != nil || v != read+1 {
							errc <- fmt.Errorf("transaction %s: INCR answered %d (%v) after GET read %d", id, v, err, read)
							return
						}
						mu.Lock()
						committed[id] = true
						mu.Unlock()
						break
					}
				}
			}(g)
		}
		wg.Wait()
		close(errc)
		for err := range errc {
			t.Fatal(err)
		}
		if len(committed) != workers*each {
			t.Fatalf("%d committed transactions, want %d", len(committed), workers*each)
		}
		n, err := c.Do(ctx, "GET", key).Int64()
		if err != nil || n != int64(len(committed)) {
			t.Fatalf("the counter is %d (%v), %d transactions committed", n, err, len(committed))
		}
		logged, err := c.Lrange(ctx, logKey, 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		if len(logged) != len(committed) {
			t.Fatalf("%d log entries for %d committed transactions", len(logged), len(committed))
		}
		for _, id := range logged {
			if !committed[id] || aborted[id] {
				t.Fatalf("log entry %s: committed %v, aborted %v", id, committed[id], aborted[id])
			}
		}
		t.Logf("%d committed, %d aborted and retried", len(committed), len(aborted))
	})
}

// A watched key written by another client: EXEC answers nil, TxPipelined fails with
// ErrWatch (every Result too), nothing of the transaction is applied; the session is clean
// afterwards (EXEC ended the watch), so a second transaction on it commits.
func TestTxWatchAborted(t *testing.T) {
	forTxServers(t, false, func(t *testing.T, s txServer) {
		c := newTestClient(t, s.url, &Options{PoolSize: 2})
		ctx := testCtx(t)
		key, other := "{txa}:k", "{txa}:other"
		if _, err := c.Delete(ctx, key, other); err != nil {
			t.Fatal(err)
		}
		tx, err := c.NewTx(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Close()
		if err := tx.Watch(ctx, key); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Set(ctx, key, "theirs", nil); err != nil { // another connection writes the watched key
			t.Fatal(err)
		}
		res, err := tx.TxPipelined(ctx, func(p *Pipeline) error {
			p.Set(key, "mine", nil)
			p.Set(other, "mine", nil)
			return nil
		})
		if !errors.Is(err, ErrWatch) || errors.Is(err, ErrWatchMoved) {
			t.Fatalf("EXEC after a watched key changed: %v, want ErrWatch", err)
		}
		if len(res) != 2 || !errors.Is(res[0].Err, ErrWatch) || !errors.Is(res[1].Err, ErrWatch) {
			t.Fatalf("results of the aborted transaction: %v", res)
		}
		if v, _ := c.Get(ctx, key); v == nil || *v != "theirs" {
			t.Fatalf("the key after the abort: %v", v)
		}
		if v, _ := c.Get(ctx, other); v != nil {
			t.Fatalf("the aborted transaction's other write was applied: %v", *v)
		}
		res, err = tx.TxPipelined(ctx, func(p *Pipeline) error {
			p.Set(other, "again", nil)
			p.Get(other)
			return nil
		})
		if err != nil {
			t.Fatalf("a transaction after the abort on the same session: %v", err)
		}
		if v, err := res[1].Text(); err != nil || v != "again" {
			t.Fatalf("GET in the transaction: %q %v", v, err)
		}
	})
}

// A session abandoned with its keys watched (or a MULTI open) goes back clean: Close sends
// UNWATCH (DISCARD), and the next transaction on the same connection — the same CLIENT ID —
// is not aborted by the old watch nor finds commands queued.
func TestTxAbandonedSessionComesBackClean(t *testing.T) {
	forTxServers(t, false, func(t *testing.T, s txServer) {
		c := newTestClient(t, s.url, &Options{PoolSize: 1})
		other := newTestClient(t, s.url, nil)
		ctx := testCtx(t)
		key := "{txc}:k"
		if _, err := c.Delete(ctx, key); err != nil {
			t.Fatal(err)
		}
		clientID := func(tx *Tx) int64 {
			t.Helper()
			id, err := tx.Do(ctx, "CLIENT", "ID").Int64()
			if err != nil {
				t.Fatal(err)
			}
			return id
		}
		// watched, abandoned (fn returns an error before any MULTI)
		var id1 int64
		abandon := errors.New("abandoned")
		err := c.Watch(ctx, func(tx *Tx) error {
			if _, err := tx.Do(ctx, "GET", key).Text(); !errors.Is(err, ErrNil) {
				t.Fatalf("GET: %v", err)
			}
			id1 = clientID(tx)
			return abandon
		}, key)
		if err != abandon {
			t.Fatalf("Watch returned %v, want fn's error", err)
		}
		if _, err := other.Set(ctx, key, "changed", nil); err != nil {
			t.Fatal(err)
		}
		tx, err := c.NewTx(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Do(ctx, "GET", key).Text(); err != nil { // pins the key's slot
			t.Fatal(err)
		}
		if id2 := clientID(tx); id2 != id1 {
			t.Fatalf("the second session is on connection %d, the first was on %d: the test needs the same one", id2, id1)
		}
		if _, err := tx.TxPipelined(ctx, func(p *Pipeline) error { p.Set(key, "second", nil); return nil }); err != nil {
			t.Fatalf("a transaction after an abandoned watch on the same connection: %v (the watch was left armed)", err)
		}
		// a MULTI left open: Close sends DISCARD, the queued SET is never applied
		if r := tx.Do(ctx, "MULTI"); r.Err != nil {
			t.Fatal(r.Err)
		}
		if st, err := tx.Do(ctx, "SET", key, "queued").Text(); err != nil || st != "QUEUED" {
			t.Fatalf("SET inside MULTI: %q %v", st, err)
		}
		if err := tx.Close(); err != nil {
			t.Fatalf("Close with a MULTI open: %v", err)
		}
		if err := tx.Close(); err != nil { // idempotent
			t.Fatal(err)
		}
		if r := tx.Do(ctx, "PING"); !errors.Is(r.Err, ErrInvalid) {
			t.Fatalf("Do on a closed Tx: %v", r.Err)
		}
		err = c.Watch(ctx, func(tx *Tx) error {
			if id3 := clientID(tx); id3 != id1 {
				return fmt.Errorf("the third session is on connection %d, not %d", id3, id1)
			}
			if v, err := tx.Do(ctx, "GET", key).Text(); err != nil || v != "second" {
				return fmt.Errorf("GET after the DISCARD: %q %v (the MULTI was left open, or its SET applied)", v, err)
			}
			return nil
		}, key)
		if err != nil {
			t.Fatal(err)
		}
	})
}

// In a cluster every command of a transaction must hash to its slot: a command of another
// slot is refused before anything is sent (ErrCluster, CROSSSLOT), on a session and in a
// Client.TxPipelined; a WATCH of keys of two slots too.
func TestTxCrossSlotRefused(t *testing.T) {
	forTxServers(t, true, func(t *testing.T, s txServer) {
		c := newTestClient(t, s.url, nil)
		ctx := testCtx(t)
		a, b := "{txx-a}:k", "{txx-b}:k"
		if KeySlot(a) == KeySlot(b) {
			t.Fatal("the test's keys share a slot")
		}
		if _, err := c.Delete(ctx, a); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Delete(ctx, b); err != nil {
			t.Fatal(err)
		}
		err := c.Watch(ctx, func(tx *Tx) error {
			res, err := tx.TxPipelined(ctx, func(p *Pipeline) error {
				p.Set(a, "1", nil)
				p.Set(b, "1", nil)
				return nil
			})
			if !errors.Is(err, ErrCluster) {
				return fmt.Errorf("a transaction over two slots: %v, want ErrCluster", err)
			}
			var re *ResponseError
			if len(res) != 2 || !errors.As(res[1].Err, &re) || re.Kind != ErrKindCluster || re.Prefix() != "" {
				return fmt.Errorf("its results: %v", res)
			}
			if r := tx.Do(ctx, "GET", b); !errors.Is(r.Err, ErrCluster) {
				return fmt.Errorf("a GET of another slot on the session: %v", r.Err)
			}
			// the session is still usable on its own slot
			_, err = tx.TxPipelined(ctx, func(p *Pipeline) error { p.Set(a, "2", nil); return nil })
			return err
		}, a)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Watch(ctx, func(*Tx) error { return nil }, a, b); !errors.Is(err, ErrCluster) {
			t.Fatalf("WATCH of two slots: %v", err)
		}
		res, err := c.TxPipelined(ctx, func(p *Pipeline) error {
			p.Set(a, "3", nil)
			p.Set(b, "3", nil)
			return nil
		})
		if !errors.Is(err, ErrCluster) || len(res) != 2 || !errors.Is(res[0].Err, ErrCluster) {
			t.Fatalf("Client.TxPipelined over two slots: %v %v", res, err)
		}
		if v, _ := c.Get(ctx, a); v == nil || *v != "2" {
			t.Fatalf("%s = %v: the refused transactions sent something", a, v)
		}
		if v, _ := c.Get(ctx, b); v != nil {
			t.Fatalf("%s = %v: the refused transactions sent something", b, *v)
		}
	})
}

// Client.TxPipelined without a watch, typed Replies from EXEC's reply, a runtime error of
// one command inside EXEC failing only that command, and EXECABORT (a command refused when
// queued) failing the transaction with the refused command's own error in its Result.
func TestTxPipelined(t *testing.T) {
	forTxServers(t, false, func(t *testing.T, s txServer) {
		c := newTestClient(t, s.url, nil)
		ctx := testCtx(t)
		k, h := "{txp}:n", "{txp}:hash"
		if _, err := c.Delete(ctx, k, h); err != nil {
			t.Fatal(err)
		}
		var incr Reply[int64]
		var get Reply[*string]
		res, err := c.TxPipelined(ctx, func(p *Pipeline) error {
			p.Set(k, "41", nil)
			incr = p.Incr(k)
			p.Do("HSET", h, "f", "v")
			p.Do("INCR", h) // WRONGTYPE at EXEC: only this command fails
			get = p.Get(k)
			return nil
		})
		if err != nil || len(res) != 5 {
			t.Fatalf("TxPipelined: %v %v", res, err)
		}
		if n, err := incr.Result(); err != nil || n != 42 {
			t.Fatalf("INCR in the transaction: %d %v", n, err)
		}
		if v, err := get.Result(); err != nil || v == nil || *v != "42" {
			t.Fatalf("GET in the transaction: %v %v", v, err)
		}
		var re *ResponseError
		if !errors.As(res[3].Err, &re) || re.Prefix() != "WRONGTYPE" {
			t.Fatalf("INCR of a hash inside EXEC: %v", res[3].Err)
		}
		// EXECABORT: SET with one argument is refused when queued
		res, err = c.TxPipelined(ctx, func(p *Pipeline) error {
			p.Incr(k)
			p.Do("SET", k)
			return nil
		})
		if !errors.As(err, &re) || re.Prefix() != "EXECABORT" {
			t.Fatalf("a transaction with a command refused at queueing: %v", err)
		}
		if len(res) != 2 || !errors.As(res[1].Err, &re) || re.Prefix() != "ERR" || res[0].Err == nil {
			t.Fatalf("its results: %v", res)
		}
		if n, _ := c.Do(ctx, "GET", k).Int64(); n != 42 {
			t.Fatalf("the aborted transaction's INCR was applied: %d", n)
		}
		// a bad argument refuses the whole transaction before sending
		res, err = c.TxPipelined(ctx, func(p *Pipeline) error {
			p.Incr(k)
			p.Do("SET", k, struct{}{})
			return nil
		})
		if !errors.Is(err, ErrInvalid) || !errors.Is(res[0].Err, ErrInvalid) || !errors.Is(res[1].Err, ErrInvalid) {
			t.Fatalf("a transaction with a bad argument: %v %v", res, err)
		}
		if n, _ := c.Do(ctx, "GET", k).Int64(); n != 42 {
			t.Fatalf("the refused transaction's INCR was sent: %d", n)
		}
		// fn's error: nothing sent
		mine := errors.New("mine")
		if _, err := c.TxPipelined(ctx, func(p *Pipeline) error { p.Incr(k); return mine }); err != mine {
			t.Fatalf("fn's error: %v", err)
		}
		if n, _ := c.Do(ctx, "GET", k).Int64(); n != 42 {
			t.Fatalf("a transaction whose fn failed was sent: %d", n)
		}
		// Tx.Pipelined runs at once on the session, typed
		err = c.Watch(ctx, func(tx *Tx) error {
			var g Reply[*string]
			if _, err := tx.Pipelined(ctx, func(p *Pipeline) error { g = p.Get(k); return nil }); err != nil {
				return err
			}
			if v, err := g.Result(); err != nil || v == nil || *v != "42" {
				return fmt.Errorf("Tx.Pipelined GET: %v %v", v, err)
			}
			return nil
		}, k)
		if err != nil {
			t.Fatal(err)
		}
	})
}

// A watched key's slot migrated to another primary during the watch: the transaction fails
// with ErrWatchMoved (which matches ErrWatch, so the retry loop takes it up), nothing is
// applied, and the retry pins a session on the new owner and commits.
func TestTxWatchMovedSlot(t *testing.T) {
	c := newTestClient(t, clusterURL, &Options{PoolSize: 2, Mode: ModeCluster})
	ctx := testCtx(t)
	owners := slotOwners(t, c)
	var key string
	for i := 0; key == ""; i++ {
		k := "{txm" + strconv.Itoa(i) + "}:k"
		if owners[KeySlot(k)] == clusterPort+2 {
			key = k
		}
	}
	slot := KeySlot(key)
	if _, err := c.Set(ctx, key, "0", nil); err != nil {
		t.Fatal(err)
	}
	tx, err := c.NewTx(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	if err := tx.Watch(ctx, key); err != nil {
		t.Fatal(err)
	}
	if err := script("redis-cluster.sh", "migrate", filepath.Join(workDir, "cluster"), strconv.Itoa(slot),
		strconv.Itoa(clusterPort+2), strconv.Itoa(clusterPort+1)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // the shared cluster's layout as it was, for the tests after this one
		if err := script("redis-cluster.sh", "migrate", filepath.Join(workDir, "cluster"), strconv.Itoa(slot),
			strconv.Itoa(clusterPort+1), strconv.Itoa(clusterPort+2)); err != nil {
			t.Error(err)
		}
	})
	res, err := tx.TxPipelined(ctx, func(p *Pipeline) error { p.Incr(key); return nil })
	if !errors.Is(err, ErrWatchMoved) || !errors.Is(err, ErrWatch) {
		t.Fatalf("EXEC after the watched slot moved: %v, want ErrWatchMoved", err)
	}
	if len(res) != 1 || res[0].Err == nil {
		t.Fatalf("its results: %v", res)
	}
	if r := tx.Do(ctx, "GET", key); r.Err == nil {
		t.Fatalf("the broken session ran a GET: %v", r.Value)
	}
	tx.Close()
	if n, _ := c.Do(ctx, "GET", key).Int64(); n != 0 {
		t.Fatalf("the failed transaction's INCR was applied: %d", n)
	}
	err = c.Watch(ctx, func(tx *Tx) error {
		_, err := tx.TxPipelined(ctx, func(p *Pipeline) error { p.Incr(key); return nil })
		return err
	}, key)
	if err != nil {
		t.Fatalf("the retry on the new owner: %v", err)
	}
	if n, _ := c.Do(ctx, "GET", key).Int64(); n != 1 {
		t.Fatalf("after the retry the key is %d", n)
	}
	if now := slotOwners(t, c); now[slot] != clusterPort+1 {
		t.Fatalf("slot %d is on %d after the migration", slot, now[slot])
	}
}

// A ctx cancelled while a command waits on the session (a BLPOP 0 after the WATCH): the
// call returns context.Canceled, the server drops the pop (blocked_clients back down), the
// broken session refuses further commands, Close closes its connection instead of giving it
// back, and the next transaction commits on a fresh one — the element pushed in between is
// still in the list (the cancelled pop took nothing).
func TestTxCancelledSession(t *testing.T) {
	forTxServers(t, false, func(t *testing.T, s txServer) {
		c := newTestClient(t, s.url, &Options{PoolSize: 2})
		ctx := testCtx(t)
		key, list := "{txq}:k", "{txq}:list"
		if _, err := c.Delete(ctx, key, list); err != nil {
			t.Fatal(err)
		}
		base := blockedClients(t, c, s.cluster, key)
		tx, err := c.NewTx(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Close()
		if err := tx.Watch(ctx, key); err != nil {
			t.Fatal(err)
		}
		id, err := tx.Do(ctx, "CLIENT", "ID").Int64()
		if err != nil {
			t.Fatal(err)
		}
		bctx, cancel := context.WithCancel(ctx)
		done := make(chan Result, 1)
		go func() { done <- tx.Do(bctx, "BLPOP", list, 0) }()
		waitBlockedClients(t, c, s.cluster, key, base+1)
		cancel()
		if r := <-done; !errors.Is(r.Err, context.Canceled) || !errors.Is(r.Err, ErrCancelled) {
			t.Fatalf("BLPOP 0 on the session after the cancel: %v %v", r.Value, r.Err)
		}
		waitBlockedClients(t, c, s.cluster, key, base)
		if _, err := c.Rpush(ctx, list, "kept"); err != nil {
			t.Fatal(err)
		}
		if r := tx.Do(ctx, "GET", key); !errors.Is(r.Err, ErrInvalid) || !strings.Contains(r.Err.Error(), "broken") {
			t.Fatalf("a command on the broken session: %v %v", r.Value, r.Err)
		}
		if err := tx.Close(); err != nil {
			t.Fatal(err)
		}
		err = c.Watch(ctx, func(tx *Tx) error {
			if id2, err := tx.Do(ctx, "CLIENT", "ID").Int64(); err != nil || id2 == id {
				return fmt.Errorf("the next session's connection %d (%v): the broken one (%d) came back", id2, err, id)
			}
			_, err := tx.TxPipelined(ctx, func(p *Pipeline) error { p.Set(key, "after", nil); return nil })
			return err
		}, key)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := c.Lrange(ctx, list, 0, -1); err != nil || len(got) != 1 || got[0] != "kept" {
			t.Fatalf("the list after the cancelled pop: %v %v", got, err)
		}
	})
}

// Client.Close with a Tx open: the Tx's calls fail with ErrClosed, its Close returns nil.
func TestTxClientClosed(t *testing.T) {
	ctx := testCtx(t)
	c, err := NewClient(ctx, &Options{URL: bundledURL})
	if err != nil {
		t.Fatal(err)
	}
	tx, err := c.NewTx(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Watch(ctx, "{txcl}:k"); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if r := tx.Do(ctx, "GET", "{txcl}:k"); !errors.Is(r.Err, ErrClosed) {
		t.Fatalf("Do after Client.Close: %v", r.Err)
	}
	if _, err := tx.TxPipelined(ctx, func(p *Pipeline) error { p.Incr("{txcl}:k"); return nil }); !errors.Is(err, ErrClosed) {
		t.Fatalf("TxPipelined after Client.Close: %v", err)
	}
	if err := tx.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.NewTx(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("NewTx after Close: %v", err)
	}
	if err := c.Watch(ctx, nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Watch(nil): %v", err)
	}
}

// A ctx already done: nothing is sent, and every Result of a pipeline, a TxPipeline and a
// Tx's pipeline holds the error (context.Canceled).
func TestTxContextDoneBeforeSending(t *testing.T) {
	c := newTestClient(t, bundledURL, nil)
	ctx := testCtx(t)
	key := "{txd}:n"
	if _, err := c.Set(ctx, key, "0", nil); err != nil {
		t.Fatal(err)
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	check := func(what string, res []Result, err error) {
		t.Helper()
		if !errors.Is(err, context.Canceled) || len(res) != 2 {
			t.Fatalf("%s: %v %v", what, res, err)
		}
		for i, r := range res {
			if !errors.Is(r.Err, context.Canceled) {
				t.Fatalf("%s: result %d: %v", what, i, r.Err)
			}
		}
	}
	queue := func(p *Pipeline) error { p.Incr(key); p.Incr(key); return nil }
	p := c.Pipeline()
	_ = queue(p)
	res, err := p.Exec(done)
	check("Pipeline.Exec", res, err)
	res, err = c.TxPipelined(done, queue)
	check("Client.TxPipelined", res, err)
	err = c.Watch(ctx, func(tx *Tx) error {
		res, err := tx.TxPipelined(done, queue)
		check("Tx.TxPipelined", res, err)
		res, err = tx.Pipelined(done, queue)
		check("Tx.Pipelined", res, err)
		return nil
	}, key)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := c.Do(ctx, "GET", key).Int64(); n != 0 {
		t.Fatalf("something was sent: %d", n)
	}
}
