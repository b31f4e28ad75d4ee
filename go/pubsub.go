package slotlane

// Pub/sub over the core's subscriber (core/README.md, "Pub/sub"): the core owns the
// subscriber's connections and a thread, keeps what was subscribed across lost connections,
// failovers and slot moves, and queues messages and events as records in a bounded queue.
// One goroutine per PubSub drains them in batches (a blocking drain in C, woken by the
// core) and sends them on the channel; a slow reader leaves the bound to the core's queue.

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Message types, as redis-py names them, plus the events of the core.
const (
	TypeMessage        = "message"
	TypePMessage       = "pmessage"
	TypeSMessage       = "smessage"
	TypeSubscribe      = "subscribe"
	TypePSubscribe     = "psubscribe"
	TypeSSubscribe     = "ssubscribe"
	TypeUnsubscribe    = "unsubscribe"
	TypePUnsubscribe   = "punsubscribe"
	TypeSUnsubscribe   = "sunsubscribe"
	TypeResubscribed   = "resubscribed"    // Channel is subscribed again after a gap: messages of the gap were missed; Payload: its kind ("ssubscribe"...)
	TypeOverflow       = "overflow"        // the bounded queue dropped Count of the newest messages here
	TypeConnectionLost = "connection_lost" // a subscriber connection broke; Payload: node and reason
	TypeError          = "error"           // a server refused a subscription (retried); Payload: its error
)

var messageTypes = [...]string{"", TypeMessage, TypePMessage, TypeSMessage, TypeSubscribe, TypePSubscribe,
	TypeSSubscribe, TypeUnsubscribe, TypePUnsubscribe, TypeSUnsubscribe, TypeResubscribed, TypeOverflow,
	TypeConnectionLost, TypeError}

var subKinds = [...]string{TypeSubscribe, TypePSubscribe, TypeSSubscribe}

// Message is one record of a PubSub: a message (Channel, Pattern for pmessage, Payload) or
// an event (Type says which; Count is the server's subscription count of a confirmation or
// the messages an overflow dropped).
type Message struct {
	Type    string
	Channel string
	Pattern string
	Payload string
	Count   int64
}

// PubSubOptions tunes a subscriber; the zero value is the defaults.
type PubSubOptions struct {
	// MaxQueueBytes bounds what the core queues (default 64 MiB); past it the newest
	// messages are dropped and an overflow record says how many.
	MaxQueueBytes int64
	// HealthCheckInterval: silence before a PING (no answer within as long: the connection
	// is lost). 0: 30 s; negative: never.
	HealthCheckInterval time.Duration
	// ChannelSize is the Go channel's buffer (default 256).
	ChannelSize int
}

// PubSubStats are the core subscriber's counters.
type PubSubStats struct {
	Messages, Dropped, ConnectionLosses, Resubscribed, Pings, Refreshes, Confirmed, QueuedBytes, BytesRead uint64
}

// PubSub is a subscriber on connections of its own. Subscribe and friends may be called
// from any goroutine; read the records from Channel; Close it when done.
type PubSub struct {
	s      *subscriber
	ch     chan *Message
	done   chan struct{}
	mu     sync.Mutex // orders Close against the subscription calls
	closed bool
}

// PubSub makes a subscriber for the client's servers (its options: address, credentials,
// protocol, TLS, timeouts). It connects and discovers the topology before returning.
func (c *Client) PubSub(ctx context.Context, opts *PubSubOptions) (*PubSub, error) {
	if c.closed.Load() {
		return nil, newError(codeState, "the client is closed", nil)
	}
	var o PubSubOptions
	if opts != nil {
		o = *opts
	}
	if o.MaxQueueBytes < 0 || o.ChannelSize < 0 {
		return nil, fmt.Errorf("%w: PubSubOptions.MaxQueueBytes and ChannelSize must not be negative", ErrInvalid)
	}
	hc := 0
	switch {
	case o.HealthCheckInterval < 0:
		hc = -1
	case o.HealthCheckInterval > 0:
		ms, err := durMillis(o.HealthCheckInterval, "PubSubOptions.HealthCheckInterval")
		if err != nil {
			return nil, err
		}
		hc = ms
	}
	size := o.ChannelSize
	if size == 0 {
		size = 256
	}
	p := c.params
	if d, ok := ctx.Deadline(); ok {
		ms := int((time.Until(d) + time.Millisecond - 1) / time.Millisecond)
		if ms <= 0 {
			return nil, context.DeadlineExceeded
		}
		if p.connectMs < 0 || ms < p.connectMs {
			p.connectMs = ms
		}
	}
	sub, err := newSubscriber(&p, o.MaxQueueBytes, hc)
	if err != nil {
		return nil, err
	}
	ps := &PubSub{s: sub, ch: make(chan *Message, size), done: make(chan struct{})}
	go ps.drain()
	return ps, nil
}

// drain moves the core's records to the channel until the subscriber is closed and empty.
func (p *PubSub) drain() {
	defer close(p.done)
	defer close(p.ch)
	send := func(kind, flags int, ch, pat, pay []byte, count int64) {
		rec := &Message{Channel: string(ch), Pattern: string(pat), Payload: string(pay), Count: count}
		if kind < len(messageTypes) {
			rec.Type = messageTypes[kind]
		}
		if kind == msgResub {
			rec.Payload = subKinds[flags%3]
		}
		p.ch <- rec
	}
	for p.s.drain(send) == 0 {
	}
}

// Channel is where the records come, in order; it is closed after Close.
func (p *PubSub) Channel() <-chan *Message { return p.ch }

func (p *PubSub) op(subscribe bool, kind int, names []string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return newError(codeState, "the pubsub is closed", nil)
	}
	if !subscribe && len(names) == 0 {
		if rc := p.s.op(false, kind, nil, true); rc != 0 {
			return newError(rc, "unsubscribe", nil)
		}
		return nil
	}
	for _, name := range names {
		if rc := p.s.op(subscribe, kind, []byte(name), false); rc != 0 {
			return newError(rc, "subscribe "+name, nil)
		}
	}
	return nil
}

// Subscribe adds channels; each confirmation comes as a "subscribe" record.
func (p *PubSub) Subscribe(channels ...string) error { return p.op(true, subChannel, channels) }

// PSubscribe adds patterns.
func (p *PubSub) PSubscribe(patterns ...string) error { return p.op(true, subPattern, patterns) }

// SSubscribe adds shard channels: on their slot's owner, followed across slot moves.
func (p *PubSub) SSubscribe(channels ...string) error { return p.op(true, subShard, channels) }

// Unsubscribe removes channels (none: all of them).
func (p *PubSub) Unsubscribe(channels ...string) error { return p.op(false, subChannel, channels) }

// PUnsubscribe removes patterns (none: all of them).
func (p *PubSub) PUnsubscribe(patterns ...string) error { return p.op(false, subPattern, patterns) }

// SUnsubscribe removes shard channels (none: all of them).
func (p *PubSub) SUnsubscribe(channels ...string) error { return p.op(false, subShard, channels) }

// Stats returns the core subscriber's counters.
func (p *PubSub) Stats() PubSubStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.s.s == nil {
		return PubSubStats{}
	}
	return p.s.stats()
}

// Close stops the subscriber and closes the channel once the drain goroutine ended;
// records nobody read are discarded. It does not wait for the channel's reader.
func (p *PubSub) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.s.close()
	p.mu.Unlock()
	go func() { // take what nobody reads, so the drain goroutine can end
		for range p.ch {
		}
	}()
	<-p.done
	p.mu.Lock()
	p.s.free()
	p.mu.Unlock()
	return nil
}
