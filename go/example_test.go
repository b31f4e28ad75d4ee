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

	if err := client.Set(ctx, "example:greeting", "hello", time.Minute); err != nil {
		fmt.Println("set:", err)
		return
	}
	greeting, _ := client.Get(ctx, "example:greeting")
	fmt.Println(greeting)

	if _, err := client.Get(ctx, "example:missing"); errors.Is(err, slotlane.ErrNil) {
		fmt.Println("missing key: ErrNil")
	}

	p := client.Pipeline()
	for i := 0; i < 3; i++ {
		p.Set(fmt.Sprintf("example:%d", i), i*10, time.Minute)
	}
	p.Do("MGET", "example:0", "example:1", "example:2") // split per slot by the core
	p.Do("LPUSH", "example:greeting", "x")              // fails alone: WRONGTYPE
	results, err := p.Exec(ctx)
	if err != nil {
		fmt.Println("exec:", err)
		return
	}
	values, _ := results[3].Strings()
	fmt.Println(values)
	var re *slotlane.ResponseError
	if errors.As(results[4].Err, &re) {
		fmt.Println(re.Prefix())
	}
	// Output:
	// hello
	// missing key: ErrNil
	// [0 10 20]
	// WRONGTYPE
}
