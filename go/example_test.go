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
