package slotlane

// #include "slotlane.h"
import "C"

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Mode is what a client is: plain (one node, the server sees every command) or
// cluster (the core discovers the slot map and routes every command by its key).
type Mode int

// Modes of Options.Mode and Client.Mode.
const (
	ModeAuto    Mode = C.SL_MODE_AUTO    // ask the seed: CLUSTER SLOTS answers -> cluster, an error -> plain
	ModePlain   Mode = C.SL_MODE_PLAIN   // one node, no discovery, no routing
	ModeCluster Mode = C.SL_MODE_CLUSTER // discover the slot map and route every command
)

// String returns "auto", "plain" or "cluster".
func (m Mode) String() string {
	switch m {
	case ModeAuto:
		return "auto"
	case ModePlain:
		return "plain"
	case ModeCluster:
		return "cluster"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// Options configure a client. Give URL or Addrs, not both. Zero fields take the
// defaults written beside them.
type Options struct {
	// URL is "redis://[user:password@]host:port[/db]", or "host:port", or several seeds
	// separated by commas; "rediss://..." connects with TLS (TLS, else the system's CAs).
	URL string
	// Addrs are seed nodes as "host:port" (any node of a cluster; the one node when plain).
	Addrs []string
	// Mode: ModeAuto (default) detects a cluster by asking the seed for CLUSTER SLOTS.
	Mode Mode
	// Username and Password authenticate every connection (default: the URL's, if any).
	Username, Password string
	// DB is selected on every connection in plain mode. 0: the URL's /db, else 0.
	DB int
	// Protocol is the RESP version, 2 (default) or 3 (HELLO 3 on every connection).
	Protocol int
	// DialTimeout bounds one connection attempt (default 2s).
	DialTimeout time.Duration
	// CommandTimeout is the deadline of an execution whose ctx has no deadline
	// (default 5s; negative: none). A ctx deadline always wins.
	CommandTimeout time.Duration
	// MaxRedirects per command (default 5).
	MaxRedirects int
	// RefreshInterval re-reads the slot map periodically (default 0: only after MOVED).
	RefreshInterval time.Duration
	// ReconnectMin and ReconnectMax bound the backoff after a failed connect
	// (defaults 10ms and 1s, with jitter).
	ReconnectMin, ReconnectMax time.Duration
	// PoolSize is the largest number of core handles (each a connection per node and a
	// pipeline engine) — the number of executions that run at the same time. Handles are
	// created when needed. Default 10 × GOMAXPROCS.
	PoolSize int
	// TLS makes every connection TLS (seeds, discovered nodes, reconnects); loaded once
	// by NewClient and shared by the client's handles. See TLSConfig.
	TLS *TLSConfig
	// ReadFrom says where read-only commands go in a cluster with replicas: ReadPrimary
	// (default), ReadPreferReplica or ReadReplicas. A replica's data may lag its
	// primary's (replication is asynchronous).
	ReadFrom ReadFrom
	// RetryWrites sends a write once more when its connection broke after it was sent.
	// It may then run twice (an INCR counted twice); by default such a write fails with
	// an I/O error saying it may have been executed. Reads and commands that never
	// reached a socket are retried whatever this says.
	RetryWrites bool
	// OnEvent, when set, is called with the client's topology and node events (a refresh
	// changed the map, a node down or up, a failover). The core reports them from inside
	// an execution; the client queues them and calls OnEvent from a goroutine of its own,
	// one event at a time, in order, so OnEvent may block or call the client. Each core
	// handle (see PoolSize) watches its own connections, so one outage may be reported by
	// several handles. Events still queued at Close are delivered before Close returns.
	OnEvent func(Event)
}

// ReadFrom is where read-only commands (GET, MGET, HGETALL...; the command table's
// flags decide) go in a cluster with replicas. Replica connections send READONLY.
type ReadFrom int

// Values of Options.ReadFrom.
const (
	ReadPrimary       ReadFrom = C.SL_READ_PRIMARY              // every command to the slot's primary (default)
	ReadPreferReplica ReadFrom = C.SL_READ_PREFER_REPLICA       // reads to the first usable replica of the slot's primary, else the primary
	ReadReplicas      ReadFrom = C.SL_READ_REPLICAS_ROUND_ROBIN // reads rotate over the primary's usable replicas, else the primary
)

// String returns "primary", "prefer-replica" or "replicas".
func (r ReadFrom) String() string {
	switch r {
	case ReadPrimary:
		return "primary"
	case ReadPreferReplica:
		return "prefer-replica"
	case ReadReplicas:
		return "replicas"
	}
	return fmt.Sprintf("ReadFrom(%d)", int(r))
}

// Stats are the counters of a client, summed over its handles (Nodes: the largest
// number of nodes any handle knows).
type Stats struct {
	Commands     uint64 // commands executed (a split command counts once)
	Moved        uint64 // MOVED redirects followed
	Ask          uint64 // ASK redirects followed
	TryAgain     uint64 // TRYAGAIN / CLUSTERDOWN retries
	Refreshes    uint64 // slot-map refreshes
	Connects     uint64 // successful connects, the first ones included
	Reconnects   uint64 // successful connects after a connection was lost
	BytesWritten uint64 // bytes written to sockets
	BytesRead    uint64 // bytes read from sockets
	Nodes        uint64 // nodes known
	Handles      int    // core handles created
}

// Client is a Redis-protocol client for one server or one cluster. It is safe for
// concurrent use: each execution takes a core handle from a lock-free pool and returns
// it. Close it when done.
type Client struct {
	params   createParams
	mode     Mode
	closed   atomic.Bool
	closedCh chan struct{}

	slots    []atomic.Pointer[handle] // idle handles
	created  atomic.Int32             // handles created (or being created)
	waiters  atomic.Int32
	wake     chan struct{}
	poolSize int32

	allMu sync.Mutex // guards all; taken only when a handle is created, and by Close and Stats
	all   []*handle

	events *eventQueue // Options.OnEvent's queue, or nil
}

// closeEvents stops the event queue and removes its id from the registry.
func (c *Client) closeEvents() {
	if c.events == nil {
		return
	}
	unregisterEvents(c.params.events)
	c.events.close()
	c.events = nil
}

func durMillis(d time.Duration, name string) (int, error) {
	if d < 0 {
		return 0, fmt.Errorf("%w: %s must not be negative", ErrInvalid, name)
	}
	if d == 0 {
		return -1, nil // the core's default
	}
	ms := (d + time.Millisecond - 1) / time.Millisecond
	if ms > 1<<31-1 {
		return 0, fmt.Errorf("%w: %s is too large", ErrInvalid, name)
	}
	return int(ms), nil
}

// NewClient connects to the server or cluster of opts (in cluster mode it discovers the
// slot map) and returns a client with one handle ready; more are created as
// concurrent use needs them. ctx bounds the connection: its deadline limits each
// connection attempt, and when it is done first NewClient returns ctx.Err().
func NewClient(ctx context.Context, opts *Options) (*Client, error) {
	if opts == nil {
		return nil, fmt.Errorf("%w: nil *Options (give URL or Addrs)", ErrInvalid)
	}
	p := createParams{db: -1, maxRedirects: -1}
	switch {
	case opts.URL != "" && len(opts.Addrs) > 0:
		return nil, fmt.Errorf("%w: give Options.URL or Options.Addrs, not both", ErrInvalid)
	case opts.URL != "":
		p.url = opts.URL
	case len(opts.Addrs) > 0:
		for _, a := range opts.Addrs {
			if a == "" || strings.ContainsAny(a, ", /") {
				return nil, fmt.Errorf("%w: Options.Addrs holds %q, not host:port", ErrInvalid, a)
			}
		}
		p.url = strings.Join(opts.Addrs, ",")
	default:
		return nil, fmt.Errorf("%w: Options needs URL or Addrs", ErrInvalid)
	}
	switch opts.Mode {
	case ModeAuto, ModePlain, ModeCluster:
		p.mode = opts.Mode
	default:
		return nil, fmt.Errorf("%w: Options.Mode %d", ErrInvalid, int(opts.Mode))
	}
	switch opts.Protocol {
	case 0, 2, 3:
		p.resp = opts.Protocol
	default:
		return nil, fmt.Errorf("%w: Options.Protocol must be 2 or 3, not %d", ErrInvalid, opts.Protocol)
	}
	if opts.DB < 0 {
		return nil, fmt.Errorf("%w: Options.DB must not be negative", ErrInvalid)
	}
	if opts.DB > 0 {
		p.db = opts.DB
	}
	if opts.MaxRedirects < 0 {
		return nil, fmt.Errorf("%w: Options.MaxRedirects must not be negative", ErrInvalid)
	}
	if opts.MaxRedirects > 0 {
		p.maxRedirects = opts.MaxRedirects
	}
	if opts.PoolSize < 0 {
		return nil, fmt.Errorf("%w: Options.PoolSize must not be negative", ErrInvalid)
	}
	p.username, p.password = opts.Username, opts.Password
	var err error
	if p.connectMs, err = durMillis(opts.DialTimeout, "Options.DialTimeout"); err != nil {
		return nil, err
	}
	switch {
	case opts.CommandTimeout < 0:
		p.commandMs = 0 // none
	default:
		if p.commandMs, err = durMillis(opts.CommandTimeout, "Options.CommandTimeout"); err != nil {
			return nil, err
		}
	}
	if p.refreshMs, err = durMillis(opts.RefreshInterval, "Options.RefreshInterval"); err != nil {
		return nil, err
	}
	if p.reconnMin, err = durMillis(opts.ReconnectMin, "Options.ReconnectMin"); err != nil {
		return nil, err
	}
	if p.reconnMax, err = durMillis(opts.ReconnectMax, "Options.ReconnectMax"); err != nil {
		return nil, err
	}
	switch opts.ReadFrom {
	case ReadPrimary, ReadPreferReplica, ReadReplicas:
		p.readFrom = int(opts.ReadFrom)
	default:
		return nil, fmt.Errorf("%w: Options.ReadFrom %d", ErrInvalid, int(opts.ReadFrom))
	}
	if opts.RetryWrites {
		p.retryWrites = 1
	}
	if opts.TLS != nil {
		if p.tls, err = newTLSRef(opts.TLS); err != nil {
			return nil, err
		}
	}
	size := opts.PoolSize
	if size == 0 {
		size = 10 * runtime.GOMAXPROCS(0)
	}
	if size > 1<<16 {
		return nil, fmt.Errorf("%w: Options.PoolSize %d is too large", ErrInvalid, size)
	}
	c := &Client{
		params:   p,
		closedCh: make(chan struct{}),
		slots:    make([]atomic.Pointer[handle], size),
		wake:     make(chan struct{}, size),
		poolSize: int32(size),
	}
	if opts.OnEvent != nil {
		c.events = newEventQueue(opts.OnEvent)
		c.params.events = registerEvents(c.events)
	}
	c.created.Store(1)
	h, err := c.createHandle(ctx)
	if err != nil {
		c.closeEvents()
		return nil, err
	}
	c.mode = h.mode()
	c.release(h)
	return c, nil
}

// createHandle makes a core handle in a goroutine so that ctx can end the wait; a
// handle finished after ctx was done is freed. The caller has counted it in created.
func (c *Client) createHandle(ctx context.Context) (*handle, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p := c.params
	if d, ok := ctx.Deadline(); ok {
		left := time.Until(d)
		if left <= 0 {
			return nil, context.DeadlineExceeded
		}
		ms := int((left + time.Millisecond - 1) / time.Millisecond)
		if p.connectMs < 0 || ms < p.connectMs {
			p.connectMs = ms
		}
	}
	type made struct {
		h   *handle
		err error
	}
	done := make(chan made, 1)
	go func() {
		h, err := newHandle(&p)
		done <- made{h, err}
	}()
	var m made
	select {
	case m = <-done:
	case <-ctx.Done():
		go func() {
			if m := <-done; m.h != nil {
				m.h.free()
			}
		}()
		return nil, ctx.Err()
	}
	if m.err != nil {
		return nil, m.err
	}
	c.allMu.Lock()
	if c.closed.Load() {
		c.allMu.Unlock()
		m.h.free()
		return nil, ErrClosed
	}
	c.all = append(c.all, m.h)
	c.allMu.Unlock()
	return m.h, nil
}

// tryGet takes an idle handle, scanning the slots from a random place; nil if none.
func (c *Client) tryGet() *handle {
	n := uint32(len(c.slots))
	start := rand.Uint32() % n
	for i := uint32(0); i < n; i++ {
		s := &c.slots[(start+i)%n]
		if s.Load() != nil {
			if h := s.Swap(nil); h != nil {
				return h
			}
		}
	}
	return nil
}

// acquire returns a handle for one execution: an idle one, a new one while fewer than
// PoolSize exist, or the next one released.
func (c *Client) acquire(ctx context.Context) (*handle, error) {
	for {
		if c.closed.Load() {
			return nil, ErrClosed
		}
		if h := c.tryGet(); h != nil {
			return h, nil
		}
		for n := c.created.Load(); n < c.poolSize; n = c.created.Load() {
			if c.created.CompareAndSwap(n, n+1) {
				h, err := c.createHandle(ctx)
				if err != nil {
					c.created.Add(-1)
					c.signal()
				}
				return h, err
			}
		}
		c.waiters.Add(1)
		if h := c.tryGet(); h != nil {
			c.waiters.Add(-1)
			return h, nil
		}
		select {
		case <-c.wake:
			c.waiters.Add(-1)
		case <-ctx.Done():
			c.waiters.Add(-1)
			return nil, ctx.Err()
		case <-c.closedCh:
			c.waiters.Add(-1)
			return nil, ErrClosed
		}
	}
}

func (c *Client) signal() {
	if c.waiters.Load() > 0 {
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
}

// release puts a handle back in a free slot (there is always one: handles <= slots).
func (c *Client) release(h *handle) {
	n := uint32(len(c.slots))
	start := rand.Uint32() % n
	for i := uint32(0); i < n; i++ {
		if c.slots[(start+i)%n].CompareAndSwap(nil, h) {
			c.signal()
			return
		}
	}
	panic("slotlane: handle pool overflow") // unreachable: at most PoolSize handles exist
}

// exec runs count encoded commands on a handle and fills dst (len(dst) == count) with
// one Result per command. It returns the execution's error (nil when every command got
// a reply record, even if some of them are errors); then every dst[i] without its own
// record holds that error. With onSession they run on h's open transaction session
// (tx.go) instead of being routed.
func (c *Client) exec(ctx context.Context, h *handle, cmds []byte, count int, rt *Route, dst []Result, onSession bool) error {
	ms, ok := timeoutMillis(ctx)
	if !ok {
		return newError(codeTimeout, "the context's deadline passed before the execution", context.DeadlineExceeded)
	}
	if err := ctx.Err(); err != nil {
		return newError(codeCancelled, "the context was done before the execution", err)
	}
	h.mu.Lock()
	if h.freed || c.closed.Load() {
		h.mu.Unlock()
		return ErrClosed
	}
	if onSession && h.sess == nil {
		h.mu.Unlock()
		return errTxClosed
	}
	ex := h.run(ctx, cmds, count, rt, ms, dst, onSession)
	h.mu.Unlock()
	if ex.rc == codeOK {
		return nil
	}
	var cause error
	code := ex.rc
	deadline := false
	ctxErr := ctx.Err()
	if ctxErr == nil && code == codeTimeout && ms > 0 {
		// The core's deadline was ctx's deadline (rounded up to a millisecond, its clock
		// may still run a little ahead of ctx's timer).
		ctxErr = context.DeadlineExceeded
	}
	if ctxErr != nil && (code == codeCancelled || code == codeTimeout) {
		cause = ctxErr
		// ctx's deadline both bounds the execution in the core and fires the ctx
		// watcher's cancel, whichever comes first: either way it was the deadline.
		if errors.Is(ctxErr, context.DeadlineExceeded) {
			code, deadline = codeTimeout, true
		}
	}
	var err error = newError(code, ex.errmsg, cause)
	if ex.rc == codeCancelled && cause == nil && c.closed.Load() {
		err = fmt.Errorf("%w: %w", ErrClosed, err)
	}
	if ex.decoded {
		if cause != nil {
			for i := range dst {
				if re, ok := dst[i].Err.(*ResponseError); ok && (re.Kind == ErrKindCancelled || re.Kind == ErrKindTimeout) {
					re.cause = cause
					if deadline {
						re.Kind = ErrKindTimeout
					}
				}
			}
		}
	} else {
		for i := range dst {
			dst[i] = Result{Err: err}
		}
	}
	return err
}

// Do runs one command — its name and arguments (string, []byte, numbers, bool) — and
// returns its Result. The core routes it by its key (splitting multi-key commands
// across slots in cluster mode). A nil reply is a Result with Value.IsNil().
//
//	n, err := client.Do(ctx, "INCRBY", "counter", 5).Int64()
func (c *Client) Do(ctx context.Context, args ...any) Result {
	return c.do(ctx, nil, args)
}

// DoRoute runs one command where the route says instead of by its key: on every
// primary (the replies merged or collected as slotlane.h documents for
// SL_ROUTE_ALL_PRIMARIES), on one node, on the owner of a slot, or on a random primary.
//
//	client.DoRoute(ctx, slotlane.RouteAllPrimaries(), "FLUSHALL")
func (c *Client) DoRoute(ctx context.Context, route Route, args ...any) Result {
	if err := route.check(); err != nil {
		return Result{Err: err}
	}
	return c.do(ctx, &route, args)
}

func (c *Client) do(ctx context.Context, rt *Route, args []any) Result {
	if ctx == nil {
		return Result{Err: fmt.Errorf("%w: nil context", ErrInvalid)}
	}
	h, err := c.acquire(ctx)
	if err != nil {
		return Result{Err: err}
	}
	h.buf, err = appendCommand(h.buf[:0], args)
	if err != nil {
		c.release(h)
		return Result{Err: err}
	}
	var res [1]Result
	err = c.exec(ctx, h, h.buf, 1, rt, res[:], false)
	if err == ErrClosed {
		return Result{Err: err}
	}
	c.release(h)
	if res[0].Err == nil && res[0].Value.kind == 0 && err != nil {
		res[0].Err = err
	}
	return res[0]
}

// Mode returns ModePlain or ModeCluster: what the client is after detection.
func (c *Client) Mode() Mode { return c.mode }

// Stats returns the client's counters, summed over its handles. It waits for the
// executions running at the time to finish.
func (c *Client) Stats() (Stats, error) {
	var s Stats
	c.allMu.Lock()
	hs := append([]*handle(nil), c.all...)
	c.allMu.Unlock()
	s.Handles = len(hs)
	for _, h := range hs {
		h.mu.Lock()
		if h.freed {
			h.mu.Unlock()
			return s, ErrClosed
		}
		err := h.stats(&s)
		h.mu.Unlock()
		if err != nil {
			return s, err
		}
	}
	return s, nil
}

// Close cancels the executions in progress (they return errors matching ErrClosed or
// ErrCancelled), waits for them, and closes every connection. Calls made after Close
// return ErrClosed. Close is idempotent and returns nil.
func (c *Client) Close() error {
	if !c.closed.CompareAndSwap(false, true) {
		return nil
	}
	close(c.closedCh)
	c.allMu.Lock()
	hs := c.all
	c.all = nil
	c.allMu.Unlock()
	for _, h := range hs {
		h.cancel()
	}
	for _, h := range hs {
		h.mu.Lock()
		h.free()
		h.mu.Unlock()
	}
	c.closeEvents()
	return nil
}

// Route sends a command somewhere other than its key's node; see DoRoute.
type Route struct {
	kind int
	slot int
	node string
}

// RouteAllPrimaries sends the command to every primary. DBSIZE replies are summed,
// KEYS concatenated, FLUSHALL/FLUSHDB/SCRIPT FLUSH/FUNCTION FLUSH/PING answer once when
// every node agreed; other commands reply with an array of one element per primary.
func RouteAllPrimaries() Route { return Route{kind: routeAllPrimaries} }

// RouteNode sends the command to the node "host:port".
func RouteNode(addr string) Route { return Route{kind: routeNode, node: addr} }

// RouteSlot sends the command to the owner of slot (0..16383).
func RouteSlot(slot int) Route { return Route{kind: routeSlot, slot: slot} }

// RouteRandom sends the command to a random primary.
func RouteRandom() Route { return Route{kind: routeRandom} }

func (r Route) check() error {
	switch r.kind {
	case routeAllPrimaries, routeRandom:
		return nil
	case routeSlot:
		if r.slot < 0 || r.slot > 16383 {
			return fmt.Errorf("%w: slot %d is not in 0..16383", ErrInvalid, r.slot)
		}
		return nil
	case routeNode:
		if r.node == "" || strings.IndexByte(r.node, 0) >= 0 || !strings.Contains(r.node, ":") {
			return fmt.Errorf("%w: node %q is not host:port", ErrInvalid, r.node)
		}
		return nil
	}
	return fmt.Errorf("%w: the zero Route (use RouteAllPrimaries, RouteNode, RouteSlot or RouteRandom)", ErrInvalid)
}
