// Command pubsub-sub is one subscriber of bench/pubsub/run.py: slotlane's PubSub or
// go-redis's, each used the way its users do (subscribe, then range over the channel). It
// prints "ready" once the subscription is confirmed, receives N messages, checks every one
// (sequence number and length) and prints one JSON line with its CPU (getrusage
// RUSAGE_SELF: every thread, the core's subscriber thread included) from ready to the last.
//
//	pubsub-sub slotlane|go-redis URL CHANNEL N SIZE
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	slotlane "github.com/slotlane/slotlane/go"
)

func main() {
	if len(os.Args) != 6 {
		fmt.Fprintln(os.Stderr, "usage: pubsub-sub slotlane|go-redis URL CHANNEL N SIZE")
		os.Exit(2)
	}
	client, url, channel := os.Args[1], os.Args[2], os.Args[3]
	n, _ := strconv.Atoi(os.Args[4])
	size, _ := strconv.Atoi(os.Args[5])
	ctx := context.Background()
	var payloads func(yield func(string) bool)
	var closer func()
	switch client {
	case "slotlane":
		c, err := slotlane.NewClient(ctx, &slotlane.Options{URL: url})
		if err != nil {
			panic(err)
		}
		// the bench checks every message: none may be dropped
		p, err := c.PubSub(ctx, &slotlane.PubSubOptions{MaxQueueBytes: 1 << 30})
		if err != nil {
			panic(err)
		}
		p.Subscribe(channel)
		if m := <-p.Channel(); m.Type != slotlane.TypeSubscribe {
			panic(m.Type)
		}
		payloads = func(yield func(string) bool) {
			for m := range p.Channel() {
				if m.Type == slotlane.TypeOverflow {
					panic("messages were dropped")
				}
				if m.Type == slotlane.TypeMessage && !yield(m.Payload) {
					return
				}
			}
		}
		closer = func() { p.Close(); c.Close() }
	default:
		opt, err := redis.ParseURL(url)
		if err != nil {
			panic(err)
		}
		c := redis.NewClient(opt)
		p := c.Subscribe(ctx, channel)
		if _, err := p.Receive(ctx); err != nil { // the confirmation
			panic(err)
		}
		ch := p.Channel(redis.WithChannelSize(256))
		payloads = func(yield func(string) bool) {
			for m := range ch {
				if !yield(m.Payload) {
					return
				}
			}
		}
		closer = func() { p.Close(); c.Close() }
	}
	var ru0, ru1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	t0 := time.Now()
	fmt.Println("ready")
	got := 0
	bad := ""
	for pl := range payloads {
		if len(pl) != size || pl[:8] != fmt.Sprintf("%08d", got) {
			if bad == "" {
				bad = fmt.Sprintf("message %d: %q (%d bytes)", got, pl[:8], len(pl))
			}
		}
		got++
		if got == n {
			break
		}
	}
	wall := time.Since(t0)
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	ns := func(t syscall.Timeval) int64 { return t.Sec*1e9 + int64(t.Usec)*1e3 }
	out, _ := json.Marshal(map[string]any{"received": got, "ok": bad == "", "error": nilIfEmpty(bad),
		"wall_s": wall.Seconds(), "user_ns": ns(ru1.Utime) - ns(ru0.Utime), "sys_ns": ns(ru1.Stime) - ns(ru0.Stime)})
	fmt.Println(string(out))
	closer()
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}
