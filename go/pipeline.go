package slotlane

import (
	"context"
	"fmt"
	"strconv"
	"time"
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

	cmdStart int // where the command being encoded starts in buf
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

// Do queues a command: its name and arguments (string, []byte, numbers, bool). A
// command with a bad argument is not sent; its Result holds an error matching
// ErrInvalid.
func (p *Pipeline) Do(args ...any) {
	var err error
	if p.buf, err = appendCommand(p.buf, args); err != nil {
		p.bad = append(p.bad, badCommand{p.n, err})
	}
	p.n++
}

// Get queues GET key.
func (p *Pipeline) Get(key string) {
	p.buf = append(p.buf, "*2\r\n$3\r\nGET\r\n"...)
	p.buf = appendBulkString(p.buf, key)
	p.n++
}

// Set queues SET key value, with PX ttl when ttl > 0. value is a string, []byte, a
// number or a bool. (Passing a value through an interface can allocate; SetBytes and
// SetString do not.)
func (p *Pipeline) Set(key string, value any, ttl time.Duration) {
	switch v := value.(type) {
	case string:
		p.SetString(key, v, ttl)
		return
	case []byte:
		p.SetBytes(key, v, ttl)
		return
	}
	if !p.setHead(key, ttl) {
		return
	}
	var err error
	if p.buf, err = appendArg(p.buf, value); err != nil {
		p.buf = p.buf[:p.cmdStart]
		p.bad = append(p.bad, badCommand{p.n, argError("SET value: " + err.Error())})
		p.n++
		return
	}
	p.setTail(ttl)
}

// SetBytes queues SET key value (PX ttl when ttl > 0), without allocating.
func (p *Pipeline) SetBytes(key string, value []byte, ttl time.Duration) {
	if value == nil {
		p.bad = append(p.bad, badCommand{p.n, argError("SET value: a nil []byte argument")})
		p.n++
		return
	}
	if p.setHead(key, ttl) {
		p.buf = appendBulkBytes(p.buf, value)
		p.setTail(ttl)
	}
}

// SetString queues SET key value (PX ttl when ttl > 0), without allocating.
func (p *Pipeline) SetString(key, value string, ttl time.Duration) {
	if p.setHead(key, ttl) {
		p.buf = appendBulkString(p.buf, value)
		p.setTail(ttl)
	}
}

// setHead encodes SET's array header and key; false (and the command refused) for a
// negative ttl.
func (p *Pipeline) setHead(key string, ttl time.Duration) bool {
	if ttl < 0 {
		p.bad = append(p.bad, badCommand{p.n, argError("SET: negative ttl")})
		p.n++
		return false
	}
	p.cmdStart = len(p.buf)
	if ttl > 0 {
		p.buf = append(p.buf, "*5\r\n$3\r\nSET\r\n"...)
	} else {
		p.buf = append(p.buf, "*3\r\n$3\r\nSET\r\n"...)
	}
	p.buf = appendBulkString(p.buf, key)
	return true
}

func (p *Pipeline) setTail(ttl time.Duration) {
	if ttl > 0 {
		var tmp [20]byte
		p.buf = appendBulkString(p.buf, "PX")
		p.buf = appendBulkBytes(p.buf, strconv.AppendInt(tmp[:0], int64((ttl+time.Millisecond-1)/time.Millisecond), 10))
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
	n := p.n
	results := make([]Result, n)
	sent := n - len(p.bad)
	var err error
	if sent > 0 {
		var h *handle
		if h, err = p.c.acquire(ctx); err == nil {
			dst := results
			if len(p.bad) > 0 {
				dst = make([]Result, sent)
			}
			err = p.c.exec(ctx, h, p.buf, sent, nil, dst)
			p.c.release(h)
			if len(p.bad) > 0 {
				spread(results, dst, p.bad)
			}
		} else {
			for i := range results {
				results[i].Err = err
			}
		}
	}
	for _, b := range p.bad {
		results[b.pos] = Result{Err: b.err}
	}
	p.Reset()
	return results, err
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
