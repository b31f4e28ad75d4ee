package slotlane

import (
	"context"
	"fmt"
)

// Pipeline queues commands and runs them with Exec as one execution of the core: one
// cgo call, every node written before any is read, replies in the order of the
// commands. Commands of any slots may be mixed; the core routes each by its key and
// follows redirects. A Pipeline is reusable (Exec empties it and keeps its buffer) but
// is not safe for concurrent use; make one per goroutine.
type Pipeline struct {
	c   *Client
	buf []byte
	n   int          // commands queued, bad ones included
	bad []badCommand // commands refused while queueing, in order

	gen     int      // Execs so far: a Reply is of the Exec that ran it
	lastGen int      // the generation of last
	last    []Result // the results of the last Exec (what Reply.Result reads)

	tx    *Tx  // run on this transaction's session (Tx.Pipeline, Tx.TxPipeline), or nil
	multi bool // Exec wraps the commands in MULTI ... EXEC (TxPipeline, tx.go)
}

type badCommand struct {
	pos int
	err error
}

// Pipeline returns an empty pipeline of the client.
func (c *Client) Pipeline() *Pipeline { return &Pipeline{c: c} }

// Len returns the number of commands queued.
func (p *Pipeline) Len() int { return p.n }

// Reset drops the queued commands.
func (p *Pipeline) Reset() {
	p.buf = p.buf[:0]
	p.n = 0
	p.bad = p.bad[:0]
}

// Do queues a command: its name and arguments (string, []byte, numbers). A
// command with a bad argument is not sent; its Result holds an error matching
// ErrInvalid.
func (p *Pipeline) Do(args ...any) {
	var err error
	if p.buf, err = appendCommand(p.buf, args); err != nil {
		p.bad = append(p.bad, badCommand{p.n, err})
	}
	p.n++
}

// Exec runs the queued commands as one execution and returns one Result per command,
// in order; the pipeline is empty afterwards. A failed command (an error reply, or its
// node failing) fails alone: its Result.Err is a *ResponseError. The error is non-nil
// when the execution as a whole failed — ctx was cancelled (context.Canceled is in the
// chain) or its deadline passed (context.DeadlineExceeded), no node could be reached,
// the client was closed — and then every command without a reply holds an error too.
// ctx's deadline is the execution's deadline; its cancellation stops the execution in
// the core at once.
func (p *Pipeline) Exec(ctx context.Context) ([]Result, error) {
	if p.n == 0 {
		return nil, nil
	}
	if ctx == nil {
		p.Reset()
		return nil, fmt.Errorf("%w: nil context", ErrInvalid)
	}
	if p.multi {
		return p.execTx(ctx)
	}
	n := p.n
	results := make([]Result, n)
	sent := n - len(p.bad)
	var err error
	if sent > 0 {
		dst := results
		if len(p.bad) > 0 {
			dst = make([]Result, sent)
		}
		err = p.run(ctx, p.buf, sent, dst)
		if len(p.bad) > 0 {
			spread(results, dst, p.bad)
		}
	}
	for _, b := range p.bad {
		results[b.pos] = Result{Err: b.err}
	}
	p.finish(results)
	return results, err
}

// run executes count encoded commands into dst: on the pipeline's transaction session, or
// on a handle of the pool.
func (p *Pipeline) run(ctx context.Context, cmds []byte, count int, dst []Result) error {
	if p.tx != nil {
		return p.tx.exec(ctx, cmds, count, dst)
	}
	h, err := p.c.acquire(ctx)
	if err != nil {
		for i := range dst {
			dst[i].Err = err
		}
		return err
	}
	err = p.c.exec(ctx, h, cmds, count, nil, dst, false)
	if err != ErrClosed {
		p.c.release(h)
	}
	if err != nil {
		for i := range dst { // refused before running (ctx already done, client closed): no records
			if dst[i].Err == nil && dst[i].Value.kind == 0 {
				dst[i].Err = err
			}
		}
	}
	return err
}

// finish empties the pipeline and keeps results for the Replies of this Exec.
func (p *Pipeline) finish(results []Result) {
	p.Reset()
	p.last, p.lastGen = results, p.gen
	p.gen++
}

// spread places the results of the sent commands around the refused ones.
func spread(results, sent []Result, bad []badCommand) {
	j, k := 0, 0
	for i := range results {
		if k < len(bad) && bad[k].pos == i {
			k++
			continue
		}
		results[i] = sent[j]
		j++
	}
}
