// Package slotlane is the Go binding of libslotlane, a Redis-protocol client core for
// sharded servers: one C core does cluster routing, the slot cache, per-node batched
// pipelining, redirects and the splitting of multi-key commands, and this package
// exposes it through cgo — one cgo call per pipeline, no core logic copied into Go.
//
// A Client talks to one server (plain mode) or one cluster (Redis Cluster, Valkey
// Cluster, or the bundled slotlane-server in per-shard mode), detected from the seed
// unless Options.Mode says which:
//
//	client, err := slotlane.NewClient(ctx, &slotlane.Options{URL: "redis://127.0.0.1:7000"})
//	if err != nil { ... }
//	defer client.Close()
//	err = client.Set(ctx, "greeting", "hello", 0)
//	s, err := client.Get(ctx, "greeting")              // ErrNil when missing
//	n, err := client.Do(ctx, "INCRBY", "n", 5).Int64() // any command
//
// A Pipeline runs many commands — of any slots — as one execution of the core, which
// writes every node before reading any and returns the replies in order; a failed
// command fails alone:
//
//	p := client.Pipeline()
//	p.Set("a", "1", 0)
//	p.Get("a")
//	p.Do("INCR", "counter")
//	results, err := p.Exec(ctx) // one Result per command; err only when the whole execution failed
//
// Transactions (go-redis's shape, on the core's sessions: one connection pinned to the
// primary of the keys' slot): Watch runs a function with keys watched; TxPipelined sends
// MULTI ... EXEC; an error matching ErrWatch means a watched key changed (or its slot moved:
// ErrWatchMoved) and nothing was applied, so the caller runs it again:
//
//	err := client.Watch(ctx, func(tx *slotlane.Tx) error {
//		n, err := tx.Do(ctx, "GET", "n").Int64()
//		...
//		_, err = tx.TxPipelined(ctx, func(p *slotlane.Pipeline) error {
//			p.Set("n", n+1, nil)
//			return nil
//		})
//		return err
//	}, "n")
//
// Errors: a command's error reply is a *ResponseError (Kind, Msg, Prefix()); a failed
// call is an *Error with the core's code. Both wrap the sentinel of their kind, so
// errors.Is(err, ErrTimeout), errors.Is(err, ErrConnection), errors.Is(err,
// ErrCancelled) work, and when ctx ended the call, errors.Is(err, context.Canceled) or
// context.DeadlineExceeded. ErrNil reports a nil reply from the typed accessors.
//
// Concurrency: a Client is safe for any number of goroutines. Each execution takes a
// core handle (its own connection to each node) from a lock-free pool of up to
// Options.PoolSize handles. A ctx deadline becomes the execution's deadline in the
// core; cancelling ctx cancels the running execution (sl_client_cancel from a watcher).
//
// Building: the package carries its copy of the core's C sources in internal/csrc
// (written only by the repository's ci/vendor-core.sh and checked in CI), so a plain
// `go build` or `go get` compiles it with cgo (a C compiler is needed; CGO_ENABLED=1).
// The module path is github.com/slotlane/slotlane/go; see README.md for pinning a
// version and for the replace directive used inside the monorepo.
package slotlane
