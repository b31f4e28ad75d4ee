package slotlane_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	slotlane "github.com/slotlane/slotlane/go"
)

// Connect to a server or cluster (detected from the seed), run single commands and a
// pipeline whose commands may live on any node.
func Example() {
	url := os.Getenv("SLOTLANE_URL") // e.g. redis://127.0.0.1:7000
	if url == "" {
		url = "redis://127.0.0.1:6379"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	client, err := slotlane.NewClient(ctx, &slotlane.Options{URL: url})
	if err != nil {
		fmt.Println("connect:", err)
		return
	}
	defer client.Close()

	if _, err := client.Set(ctx, "example:greeting", "hello", &slotlane.SetOptions{Ex: slotlane.Int(60)}); err != nil {
		fmt.Println("set:", err)
		return
	}
	greeting, _ := client.Get(ctx, "example:greeting") // a *string: nil for a missing key
	fmt.Println(*greeting)

	if v, err := client.Get(ctx, "example:missing"); err == nil && v == nil {
		fmt.Println("missing key: nil")
	}

	p := client.Pipeline()
	for i := 0; i < 3; i++ {
		p.Set(fmt.Sprintf("example:%d", i), i*10, &slotlane.SetOptions{Ex: slotlane.Int(60)})
	}
	values := p.Mget("example:0", "example:1", "example:2") // split per slot by the core
	pushed := p.Lpush("example:greeting", "x")              // fails alone: WRONGTYPE
	if _, err := p.Exec(ctx); err != nil {
		fmt.Println("exec:", err)
		return
	}
	vs, _ := values.Result() // []*string
	fmt.Println(*vs[0], *vs[1], *vs[2])
	var re *slotlane.ResponseError
	if _, err := pushed.Result(); errors.As(err, &re) {
		fmt.Println(re.Prefix())
	}
	// Output:
	// hello
	// missing key: nil
	// 0 10 20
	// WRONGTYPE
}

// An optimistic transaction: WATCH the key, read it, and write it in MULTI ... EXEC on the
// same connection; when another client changed the key in between, EXEC aborts (ErrWatch)
// and the loop runs the transaction again.
func ExampleClient_Watch() {
	url := os.Getenv("SLOTLANE_URL")
	if url == "" {
		url = "redis://127.0.0.1:6379"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client, err := slotlane.NewClient(ctx, &slotlane.Options{URL: url})
	if err != nil {
		fmt.Println("connect:", err)
		return
	}
	defer client.Close()
	key := "{example:tx}:balance"
	if _, err := client.Set(ctx, key, 100, &slotlane.SetOptions{Ex: slotlane.Int(60)}); err != nil {
		fmt.Println("set:", err)
		return
	}

	var balance slotlane.Reply[*string]
	for {
		err := client.Watch(ctx, func(tx *slotlane.Tx) error {
			n, err := tx.Do(ctx, "GET", key).Int64() // at once, on the transaction's connection
			if err != nil {
				return err
			}
			_, err = tx.TxPipelined(ctx, func(p *slotlane.Pipeline) error {
				p.Set(key, n+10, &slotlane.SetOptions{Ex: slotlane.Int(60)})
				balance = p.Get(key)
				return nil
			})
			return err
		}, key)
		if errors.Is(err, slotlane.ErrWatch) {
			continue // the key changed after the GET: nothing was applied, again
		}
		if err != nil {
			fmt.Println("transaction:", err)
			return
		}
		break
	}
	v, _ := balance.Result()
	fmt.Println(*v)
	// Output:
	// 110
}
