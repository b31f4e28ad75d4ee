package slotlane

// The node list, cluster-wide SCAN and scripts: thin over the core's sl_client_nodes,
// sl_scan_* and sl_batch_run_script (capi.go), which hold the logic.

import (
	"context"
	"fmt"
	"iter"
)

// Node is one node of the client's current topology.
type Node struct {
	Addr        string   // "host:port": a RouteNode target
	Primary     bool     // a primary (serves slots), else a replica
	PrimaryAddr string   // a replica's primary; "" for a primary
	Slots       [][2]int // the slot ranges served, first and last inclusive
}

// Nodes returns the current topology: every primary (in the order of all-primaries
// replies) with its slot ranges, then the replicas the slot map names. Nothing is sent to
// the servers. Each Addr is a RouteNode target, so a per-node command is one loop:
//
//	for _, n := range nodes { client.DoRoute(ctx, slotlane.RouteNode(n.Addr), "INFO", "memory") }
func (c *Client) Nodes(ctx context.Context) ([]Node, error) {
	h, err := c.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer c.release(h)
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.nodes()
}

// ScanIter iterates every key of the cluster (every primary; the one node in plain mode),
// with the options of the typed Scan (Match, Count, Type; nil: every key):
//
//	for key, err := range client.ScanIter(ctx, &slotlane.ScanOptions{Match: "user:*"}) { ... }
//
// The core tracks slots, not node cursors: across a reshard or failover every key that
// existed throughout is returned at least once, and a key of a moved slot may come twice.
// An error ends the iteration (yielded once, with an empty key). One handle of the pool
// is held until the loop ends.
func (c *Client) ScanIter(ctx context.Context, opts *ScanOptions) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		o, err := scanFilter(opts)
		if err != nil {
			yield("", err)
			return
		}
		h, err := c.acquire(ctx)
		if err != nil {
			yield("", err)
			return
		}
		defer c.release(h)
		h.mu.Lock()
		defer h.mu.Unlock()
		s, err := h.scanNew(o)
		if err != nil {
			yield("", err)
			return
		}
		defer h.scanFree(s)
		for {
			if err := ctx.Err(); err != nil {
				yield("", newError(codeCancelled, "the context was done during the scan", err))
				return
			}
			keys, done, err := h.scanNext(s)
			if err != nil {
				yield("", err)
				return
			}
			for _, k := range keys {
				if !yield(k, nil) {
					return
				}
			}
			if done {
				return
			}
		}
	}
}

// scanFilter checks a ScanOptions for the core: Match and Type as string or []byte,
// Count positive.
type scanFilterT struct {
	match, typ string
	count      int
}

func scanFilter(opts *ScanOptions) (*scanFilterT, error) {
	f := &scanFilterT{}
	if opts == nil {
		return f, nil
	}
	text := func(what string, v any) (string, error) {
		switch x := v.(type) {
		case nil:
			return "", nil
		case string:
			return x, nil
		case []byte:
			return string(x), nil
		}
		return "", fmt.Errorf("%w: ScanOptions.%s must be a string or []byte, not %T", ErrInvalid, what, v)
	}
	var err error
	if f.match, err = text("Match", opts.Match); err != nil {
		return nil, err
	}
	if f.typ, err = text("Type", opts.Type); err != nil {
		return nil, err
	}
	if opts.Count != nil {
		if *opts.Count <= 0 || *opts.Count > 1<<31-1 {
			return nil, fmt.Errorf("%w: ScanOptions.Count must be positive, got %d", ErrInvalid, *opts.Count)
		}
		f.count = int(*opts.Count)
	}
	return f, nil
}

// Script is a Lua script run by its SHA1 (as go-redis's redis.NewScript):
//
//	incr := slotlane.NewScript("return redis.call('INCRBY', KEYS[1], ARGV[1])")
//	n, err := incr.Run(ctx, client, []string{"counter"}, 5).Int64()
//
// Run sends EVALSHA; a node that answers NOSCRIPT gets the script (SCRIPT LOAD) and the
// command once more — in the core.
type Script struct {
	src, sha string
}

// NewScript binds a script body; its SHA1 is computed once.
func NewScript(src string) *Script { return &Script{src: src, sha: scriptSHA1(src)} }

// Hash returns the script's SHA1 (40 lowercase hex digits).
func (s *Script) Hash() string { return s.sha }

// Run runs the script with keys and args (EVALSHA, loading it where it is missing).
func (s *Script) Run(ctx context.Context, c *Client, keys []string, args ...any) Result {
	return s.run(ctx, c, "EVALSHA", keys, args)
}

// RunRO runs the script as a read-only one (EVALSHA_RO).
func (s *Script) RunRO(ctx context.Context, c *Client, keys []string, args ...any) Result {
	return s.run(ctx, c, "EVALSHA_RO", keys, args)
}

func (s *Script) run(ctx context.Context, c *Client, name string, keys []string, args []any) Result {
	if ctx == nil {
		return Result{Err: fmt.Errorf("%w: nil context", ErrInvalid)}
	}
	argv := make([]any, 0, 3+len(keys)+len(args))
	argv = append(argv, name, s.sha, len(keys))
	for _, k := range keys {
		argv = append(argv, k)
	}
	argv = append(argv, args...)
	h, err := c.acquire(ctx)
	if err != nil {
		return Result{Err: err}
	}
	defer c.release(h)
	h.buf, err = appendCommand(h.buf[:0], argv)
	if err != nil {
		return Result{Err: err}
	}
	ms, ok := timeoutMillis(ctx)
	if !ok {
		return Result{Err: newError(codeTimeout, "the context's deadline passed before the execution", context.DeadlineExceeded)}
	}
	var res [1]Result
	h.mu.Lock()
	ex := h.runScript(s.src, h.buf, ms, res[:])
	h.mu.Unlock()
	if !ex.decoded {
		return Result{Err: newError(ex.rc, ex.errmsg, nil)}
	}
	return res[0]
}
