package slotlane

// PubSub against the bundled slotlane-server and the shared Redis Cluster (messages,
// patterns, shard channels, binary and 1 MB payloads, 20 000 in order, the overflow
// policy), and a Redis Cluster of its own (failurePort) for a primary killed with SIGKILL
// and restarted and a shard channel's slot migrated while publishing. Waits end on records
// or counters; the channel reads have a limit only to turn a hang into a failure.

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

const psWait = 30 * time.Second

func newTestPubSub(t *testing.T, c *Client, o *PubSubOptions) *PubSub {
	t.Helper()
	p, err := c.PubSub(testCtx(t), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// next is the next record; a hang fails the test.
func next(t *testing.T, p *PubSub) *Message {
	t.Helper()
	select {
	case m, ok := <-p.Channel():
		if !ok {
			t.Fatal("the channel closed")
		}
		return m
	case <-time.After(psWait):
		t.Fatal("no record")
	}
	return nil
}

// until returns the first record of typ (and channel, when not empty).
func until(t *testing.T, p *PubSub, typ, channel string) *Message {
	t.Helper()
	for {
		m := next(t, p)
		if m.Type == typ && (channel == "" || m.Channel == channel) {
			return m
		}
	}
}

func TestPubSubMessages(t *testing.T) {
	for _, dep := range []struct{ name, url string }{{"bundled", bundledURL}, {"redis-cluster", clusterURL}} {
		t.Run(dep.name, func(t *testing.T) {
			ctx := testCtx(t)
			c := newTestClient(t, dep.url, nil)
			p := newTestPubSub(t, c, nil)
			if err := p.Subscribe("go:news"); err != nil {
				t.Fatal(err)
			}
			if m := next(t, p); m.Type != TypeSubscribe || m.Channel != "go:news" || m.Count != 1 {
				t.Fatalf("%+v", m)
			}
			p.PSubscribe("go:n*")
			until(t, p, TypePSubscribe, "go:n*")
			p.SSubscribe("go:{s}shard")
			until(t, p, TypeSSubscribe, "go:{s}shard")
			bin := "\x00\r\n*3\r\n$7\r\nmessage\xff"
			if _, err := c.Publish(ctx, "go:news", bin); err != nil {
				t.Fatal(err)
			}
			if m := next(t, p); m.Type != TypeMessage || m.Payload != bin || m.Pattern != "" {
				t.Fatalf("%+v", m)
			}
			if m := next(t, p); m.Type != TypePMessage || m.Pattern != "go:n*" || m.Channel != "go:news" || m.Payload != bin {
				t.Fatalf("%+v", m)
			}
			big := bytes.Repeat([]byte{7, 0, 13}, 350000)
			if n, err := c.Spublish(ctx, "go:{s}shard", big); err != nil || n != 1 {
				t.Fatal(n, err)
			}
			if m := next(t, p); m.Type != TypeSMessage || m.Payload != string(big) {
				t.Fatalf("smessage of %d bytes: %s %d", len(big), m.Type, len(m.Payload))
			}
			p.PUnsubscribe()
			until(t, p, TypePUnsubscribe, "go:n*")
			const n = 20000
			pl := c.Pipeline()
			for i := 0; i < n; i++ {
				pl.Publish("go:news", strconv.Itoa(i))
			}
			if _, err := pl.Exec(ctx); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < n; i++ {
				if m := next(t, p); m.Type != TypeMessage || m.Payload != strconv.Itoa(i) {
					t.Fatalf("message %d: %+v", i, m)
				}
			}
			if st := p.Stats(); st.Dropped != 0 || st.ConnectionLosses != 0 || st.Confirmed != 2 {
				t.Fatalf("%+v", st)
			}
		})
	}
}

func TestPubSubOverflow(t *testing.T) {
	ctx := testCtx(t)
	c := newTestClient(t, bundledURL, nil)
	p := newTestPubSub(t, c, &PubSubOptions{MaxQueueBytes: 20 * (32 + 8 + 100), ChannelSize: 1})
	p.Subscribe("go:over")
	until(t, p, TypeSubscribe, "go:over")
	// the reader does not read: the channel holds 1, the drain goroutine holds one more, the
	// core's queue 20; the rest is dropped and counted
	pl := c.Pipeline()
	for i := 0; i < 1000; i++ {
		pl.Publish("go:over", fmt.Sprintf("%08d%s", i, strings.Repeat("x", 92)))
	}
	if _, err := pl.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	for st := p.Stats(); st.Messages+st.Dropped < 1000; st = p.Stats() {
		time.Sleep(time.Millisecond) // waits on the core's counters, not a duration
	}
	want, dropped := 0, int64(0)
	for want < 1000 {
		m := next(t, p)
		switch m.Type {
		case TypeOverflow:
			want += int(m.Count)
			dropped += m.Count
		case TypeMessage:
			if m.Payload[:8] != fmt.Sprintf("%08d", want) {
				t.Fatalf("message %q where %d was next", m.Payload[:8], want)
			}
			want++
		default:
			t.Fatalf("%+v", m)
		}
	}
	if dropped == 0 || uint64(dropped) != p.Stats().Dropped {
		t.Fatalf("dropped %d, stats %+v", dropped, p.Stats())
	}
}

func TestPubSubClosed(t *testing.T) {
	c := newTestClient(t, bundledURL, nil)
	if _, err := c.PubSub(testCtx(t), &PubSubOptions{MaxQueueBytes: -1}); err == nil {
		t.Fatal("a negative bound was accepted")
	}
	p := newTestPubSub(t, c, nil)
	p.Subscribe("go:closed")
	p.Close()
	if err := p.Subscribe("x"); err == nil {
		t.Fatal("subscribe after Close")
	}
	for range p.Channel() { // closed: the loop ends
	}
}

// A cluster of its own: a primary killed and restarted, then a shard slot migrated.
func TestPubSubRedisClusterFailures(t *testing.T) {
	dir := filepath.Join(workDir, "pubsub-cluster")
	if err := script("redis-cluster.sh", "start", dir, strconv.Itoa(failurePort), "3"); err != nil {
		t.Fatal(err)
	}
	defer script("redis-cluster.sh", "stop", dir)
	ctx := testCtx(t)
	url := fmt.Sprintf("redis://127.0.0.1:%d", failurePort)
	c := newTestClient(t, url, &Options{ReconnectMin: 5 * time.Millisecond, ReconnectMax: 100 * time.Millisecond})
	p := newTestPubSub(t, c, nil)

	t.Run("killed and restarted", func(t *testing.T) {
		ch := "go:{k}kill"
		p.SSubscribe(ch)
		until(t, p, TypeSSubscribe, ch)
		victim := slotOwners(t, c)[KeySlot(ch)]
		if err := script("redis-cluster.sh", "kill", dir, strconv.Itoa(victim)); err != nil {
			t.Fatal(err)
		}
		if m := until(t, p, TypeConnectionLost, ""); !strings.Contains(m.Payload, strconv.Itoa(victim)) {
			t.Fatalf("%+v", m)
		}
		if err := script("redis-cluster.sh", "restart", dir, strconv.Itoa(victim)); err != nil {
			t.Fatal(err)
		}
		if m := until(t, p, TypeResubscribed, ch); m.Payload != TypeSSubscribe {
			t.Fatalf("%+v", m)
		}
		for { // the command client's own connection broke too: it reconnects
			if n, err := c.Spublish(ctx, ch, "after"); err == nil && n == 1 {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if m := until(t, p, TypeSMessage, ch); m.Payload != "after" {
			t.Fatalf("%+v", m)
		}
	})

	t.Run("slot migrated while publishing", func(t *testing.T) {
		ch := "go:{m}move"
		slot := KeySlot(ch)
		p.SSubscribe(ch)
		until(t, p, TypeSSubscribe, ch)
		src := slotOwners(t, c)[slot]
		dst := failurePort
		if dst == src {
			dst = failurePort + 1
		}
		var stop atomic.Bool
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := 0; !stop.Load(); i++ {
				c.Spublish(context.Background(), ch, strconv.Itoa(i))
			}
		}()
		defer func() { stop.Store(true); <-done }()
		until(t, p, TypeSMessage, ch) // receiving
		if err := script("redis-cluster.sh", "migrate", dir, strconv.Itoa(slot), strconv.Itoa(src), strconv.Itoa(dst)); err != nil {
			t.Fatal(err)
		}
		until(t, p, TypeResubscribed, ch)
		last := -1
		for {
			m := until(t, p, TypeSMessage, ch)
			v, _ := strconv.Atoi(m.Payload)
			if last >= 0 && v > last {
				break // a message published after the resubscription: still receiving
			}
			last = v
		}
	})
}
