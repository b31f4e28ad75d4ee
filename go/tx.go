package slotlane

import (
	"context"
	"fmt"
)

// Transactions, in go-redis's shape, over the core's sessions (slotlane.h, "blocking
// commands and sessions"): Client.Watch runs a function with keys watched on a connection
// of its own; Tx.TxPipelined sends MULTI, the queued commands and EXEC there. The core
// pins the session to the primary of the keys' slot, refuses commands of another slot
// before sending them (CROSSSLOT), fails the transaction with ErrWatchMoved when the slot
// moves while watched, reports EXEC's nil as ErrWatch, and on Close sends UNWATCH or
// DISCARD when needed so that the connection goes back clean. Nothing of that logic is
// here.
//
//	for {
//		err := client.Watch(ctx, func(tx *slotlane.Tx) error {
//			n, err := tx.Do(ctx, "GET", "counter").Int64()
//			if err != nil && !errors.Is(err, slotlane.ErrNil) {
//				return err
//			}
//			_, err = tx.TxPipelined(ctx, func(p *slotlane.Pipeline) error {
//				p.Set("counter", n+1, nil)
//				return nil
//			})
//			return err
//		}, "counter")
//		if !errors.Is(err, slotlane.ErrWatch) { // a watched key changed (or its slot moved): again
//			return err
//		}
//	}

// Tx is a transaction's session: one connection, leased for it, to the primary of the slot
// of the first key it sees (the one node of a plain client). Commands run on it at once
// (Do, Pipelined) until TxPipelined sends MULTI ... EXEC. Every key must hash to that slot.
// A Tx holds one of the client's handles (Options.PoolSize) until Close. It is not safe
// for concurrent use. ctx cancels a Tx's call as a Client's. After a failed execution (a
// timeout, a cancel, a connection error, ErrWatchMoved) the session is broken: it refuses
// further commands (ErrInvalid, "the session is broken") and Close closes its connection
// instead of giving it back.
type Tx struct {
	c   *Client
	h   *handle // nil after Close
	buf []byte
}

// Watch opens a transaction, watches keys (none: no WATCH) and calls fn with it, then
// closes it (UNWATCH sent when fn left the keys watched). It returns fn's error, or the
// WATCH's. It does not retry: an error matching ErrWatch (a watched key changed, or the
// slot moved: ErrWatchMoved matches ErrWatch too) means nothing of the transaction was
// applied, and the caller runs Watch again.
func (c *Client) Watch(ctx context.Context, fn func(*Tx) error, keys ...string) error {
	if fn == nil {
		return fmt.Errorf("%w: Watch needs a function", ErrInvalid)
	}
	tx, err := c.NewTx(ctx)
	if err != nil {
		return err
	}
	defer tx.Close()
	if len(keys) > 0 {
		if err := tx.Watch(ctx, keys...); err != nil {
			return err
		}
	}
	return fn(tx)
}

// NewTx opens a transaction's session; nothing is sent until its first command. Close it
// (Client.Watch does).
func (c *Client) NewTx(ctx context.Context) (*Tx, error) {
	if ctx == nil {
		return nil, fmt.Errorf("%w: nil context", ErrInvalid)
	}
	h, err := c.acquire(ctx)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	if h.freed || c.closed.Load() {
		h.mu.Unlock()
		return nil, ErrClosed
	}
	err = h.sessionNew()
	h.mu.Unlock()
	if err != nil {
		c.release(h)
		return nil, err
	}
	return &Tx{c: c, h: h}, nil
}

// TxPipelined queues fn's commands and runs them as one MULTI ... EXEC without a WATCH, in
// one execution on the client's shared connections: the commands must hash to one slot
// (CROSSSLOT: refused before sending, ErrCluster). It returns one Result per command (from
// EXEC's reply), as TxPipeline's Exec. fn's error is returned as it is, and nothing is sent.
func (c *Client) TxPipelined(ctx context.Context, fn func(*Pipeline) error) ([]Result, error) {
	return pipelined(ctx, c.TxPipeline(), fn)
}

// TxPipeline returns a pipeline whose Exec sends its commands as one MULTI ... EXEC (see
// TxPipelined).
func (c *Client) TxPipeline() *Pipeline { return &Pipeline{c: c, multi: true} }

func pipelined(ctx context.Context, p *Pipeline, fn func(*Pipeline) error) ([]Result, error) {
	if fn == nil {
		return nil, fmt.Errorf("%w: a nil function", ErrInvalid)
	}
	if err := fn(p); err != nil {
		p.Reset()
		return nil, err
	}
	return p.Exec(ctx)
}

// Watch sends WATCH keys on the transaction's connection. In a cluster the keys must
// hash to one slot, the transaction's.
func (t *Tx) Watch(ctx context.Context, keys ...string) error {
	if len(keys) == 0 {
		return fmt.Errorf("%w: WATCH needs at least one key", ErrInvalid)
	}
	args := make([]any, 0, len(keys)+1)
	args = append(args, "WATCH")
	for _, k := range keys {
		args = append(args, k)
	}
	return t.Do(ctx, args...).Err
}

// Unwatch sends UNWATCH on the transaction's connection.
func (t *Tx) Unwatch(ctx context.Context) error { return t.Do(ctx, "UNWATCH").Err }

// Do runs one command at once on the transaction's connection and returns its Result (a
// GET of a watched key, for example). Its keys must hash to the transaction's slot.
func (t *Tx) Do(ctx context.Context, args ...any) Result {
	if ctx == nil {
		return Result{Err: fmt.Errorf("%w: nil context", ErrInvalid)}
	}
	var err error
	if t.buf, err = appendCommand(t.buf[:0], args); err != nil {
		return Result{Err: err}
	}
	var res [1]Result
	_ = t.exec(ctx, t.buf, 1, res[:])
	return res[0]
}

// Pipeline returns a pipeline whose Exec runs its commands at once on the transaction's
// connection, without MULTI (typed reads of watched keys: p.Get(key) and its Reply).
func (t *Tx) Pipeline() *Pipeline { return &Pipeline{c: t.c, tx: t} }

// TxPipeline returns a pipeline whose Exec sends MULTI, its commands and EXEC on the
// transaction's connection (see TxPipelined).
func (t *Tx) TxPipeline() *Pipeline { return &Pipeline{c: t.c, tx: t, multi: true} }

// Pipelined queues fn's commands and runs them at once on the transaction's connection
// (no MULTI), as Pipeline's Exec.
func (t *Tx) Pipelined(ctx context.Context, fn func(*Pipeline) error) ([]Result, error) {
	return pipelined(ctx, t.Pipeline(), fn)
}

// TxPipelined queues fn's commands and sends MULTI, them and EXEC on the transaction's
// connection. It returns one Result per command, from EXEC's reply. The error matches
// ErrWatch when EXEC answered nil (a watched key changed: nothing was applied; every
// Result holds the error too), ErrWatchMoved (also ErrWatch) when the slot moved while
// watched (the transaction is broken: Close it and start again), ErrCluster when a command's
// key is of another slot (nothing was sent), or is EXEC's error reply when the server
// refused the transaction (EXECABORT: the Result of the command it refused says why). A
// command refused while queueing (a bad argument) refuses the whole transaction before
// anything is sent. fn's own error is returned as it is, and nothing is sent.
func (t *Tx) TxPipelined(ctx context.Context, fn func(*Pipeline) error) ([]Result, error) {
	return pipelined(ctx, t.TxPipeline(), fn)
}

// Close ends the transaction: UNWATCH or DISCARD when something is still open, and the
// connection goes back to the client clean (or is closed, after an error). Idempotent; the
// error is that of a failed UNWATCH or DISCARD (nothing is lost: the connection was closed).
func (t *Tx) Close() error {
	h := t.h
	if h == nil {
		return nil
	}
	t.h = nil
	h.mu.Lock()
	var err error
	if !h.freed { // Client.Close has closed the session already
		err = h.sessionClose()
	}
	freed := h.freed
	h.mu.Unlock()
	if !freed {
		t.c.release(h)
	}
	return err
}

// errTxClosed is the error of a call on a closed Tx.
var errTxClosed = fmt.Errorf("%w: the transaction is closed", ErrInvalid)

// exec runs count encoded commands on the session; a command the execution left without
// a record (it was refused before running) holds the error.
func (t *Tx) exec(ctx context.Context, cmds []byte, count int, dst []Result) error {
	err := errTxClosed
	if t.h != nil {
		err = t.c.exec(ctx, t.h, cmds, count, nil, dst, true)
	}
	if err != nil {
		for i := range dst {
			if dst[i].Err == nil && dst[i].Value.kind == 0 {
				dst[i].Err = err
			}
		}
	}
	return err
}

var (
	multiCmd = []byte("*1\r\n$5\r\nMULTI\r\n")
	execCmd  = []byte("*1\r\n$4\r\nEXEC\r\n")
)

// errTxRefused is the Result of the commands of a transaction that was not sent because
// another of its commands was refused while queueing.
var errTxRefused = fmt.Errorf("%w: not sent: another command of the transaction was refused", ErrInvalid)

// execTx runs a TxPipeline: MULTI, the commands, EXEC as one execution (on the session,
// or through the pool), and gives each command its element of EXEC's reply.
func (p *Pipeline) execTx(ctx context.Context) ([]Result, error) {
	n := p.n
	results := make([]Result, n)
	if len(p.bad) > 0 {
		for i := range results {
			results[i] = Result{Err: errTxRefused}
		}
		for _, b := range p.bad {
			results[b.pos] = Result{Err: b.err}
		}
		err := p.bad[0].err
		p.finish(results)
		return results, err
	}
	body := make([]byte, 0, len(multiCmd)+len(p.buf)+len(execCmd))
	body = append(append(append(body, multiCmd...), p.buf...), execCmd...)
	raw := make([]Result, n+2)
	err := p.run(ctx, body, n+2, raw)
	ex := raw[n+1]
	switch {
	case ex.Err == nil && ex.Value.kind == KindArray && len(ex.Value.elems) == n:
		for i, v := range ex.Value.elems {
			if v.kind == KindError {
				results[i] = Result{Err: v.responseError()}
			} else {
				results[i] = Result{Value: v}
			}
		}
	case ex.Err == nil && ex.Value.kind == KindNil:
		if err == nil { // the core reports EXEC's nil as SL_EABORTED; this is only a guard
			err = newError(codeAborted, "EXEC answered nil (a watched key changed)", nil)
		}
		for i := range results {
			results[i] = Result{Err: err}
		}
	default:
		// The transaction failed as a whole: MULTI refused, EXECABORT (a command refused
		// when queued: its own error says why), or the execution failed.
		fail := err
		if fail == nil {
			if fail = ex.Err; fail == nil {
				if raw[0].Err != nil {
					fail = raw[0].Err
				} else {
					fail = fmt.Errorf("%w: EXEC answered %s for %d commands", ErrProtocol, ex.Value.kind, n)
				}
			}
			err = fail
		}
		for i := range results {
			if q := raw[i+1]; q.Err != nil {
				results[i] = q
			} else {
				results[i] = Result{Err: fail}
			}
		}
	}
	p.finish(results)
	return results, err
}
