// scan-cost: one timed full SCAN of a cluster for bench/scan/run.py — slotlane's ScanIter
// or go-redis's ForEachMaster + Scan iterator — printing one JSON object: keys seen, wall
// time and this process's user and system CPU over the timed part (getrusage).
//
//	scan-cost -client slotlane|go-redis -cluster 127.0.0.1:PORT -count 1000 -want N
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	slotlane "github.com/slotlane/slotlane/go"
)

func rusage() (user, sys int64) {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano(), ru.Stime.Nano()
}

func main() {
	client := flag.String("client", "slotlane", "slotlane or go-redis")
	addr := flag.String("cluster", "127.0.0.1:7000", "a seed of the cluster")
	count := flag.Int64("count", 1000, "COUNT per SCAN call")
	want := flag.Int("want", -1, "the number of keys the cluster holds (checked)")
	flag.Parse()
	ctx := context.Background()
	var run func() (int, error)
	switch *client {
	case "slotlane":
		c, err := slotlane.NewClient(ctx, &slotlane.Options{URL: "redis://" + *addr, Mode: slotlane.ModeCluster})
		if err != nil {
			fail(err)
		}
		defer c.Close()
		run = func() (int, error) {
			n := 0
			for _, err := range c.ScanIter(ctx, &slotlane.ScanOptions{Count: count}) {
				if err != nil {
					return n, err
				}
				n++
			}
			return n, nil
		}
	case "go-redis":
		c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{*addr}})
		defer c.Close()
		if err := c.Ping(ctx).Err(); err != nil {
			fail(err)
		}
		run = func() (int, error) {
			var mu sync.Mutex
			n := 0
			err := c.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
				it := m.Scan(ctx, 0, "", *count).Iterator()
				k := 0
				for it.Next(ctx) {
					k++
				}
				mu.Lock()
				n += k
				mu.Unlock()
				return it.Err()
			})
			return n, err
		}
	default:
		fail(fmt.Errorf("unknown -client %q", *client))
	}
	u0, s0 := rusage()
	t0 := time.Now()
	n, err := run()
	wall := time.Since(t0)
	u1, s1 := rusage()
	if err != nil {
		fail(err)
	}
	if *want >= 0 && n != *want {
		fail(fmt.Errorf("%s saw %d keys, the cluster holds %d", *client, n, *want))
	}
	_ = json.NewEncoder(os.Stdout).Encode(map[string]any{
		"client": *client, "keys": n, "wall_s": wall.Seconds(), "user_ns": u1 - u0, "sys_ns": s1 - s0,
	})
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "scan-cost:", err)
	os.Exit(1)
}
