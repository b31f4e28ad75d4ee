package slotlane

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	slotKeysOnce sync.Once
	slotKeys     []string // slotKeys[s] is a key of slot s
)

// keysForEverySlot returns one key per slot 0..16383, found with the core's KeySlot.
func keysForEverySlot() []string {
	slotKeysOnce.Do(func() {
		slotKeys = make([]string, 16384)
		found := 0
		for i := 0; found < 16384; i++ {
			k := "slot:" + strconv.Itoa(i)
			if s := KeySlot(k); slotKeys[s] == "" {
				slotKeys[s] = k
				found++
			}
		}
	})
	return slotKeys
}

func valueOf(key string, round int) string { return fmt.Sprintf("%s=%d", key, round) }

func TestPipelineAllSlots(t *testing.T) {
	c := newTestClient(t, bundledURL, nil)
	ctx := testCtx(t)
	keys := keysForEverySlot()
	p := c.Pipeline()
	for _, depth := range []int{16384, 1000, 64, 7} {
		for start := 0; start < len(keys); start += depth {
			end := min(start+depth, len(keys))
			for _, k := range keys[start:end] {
				p.Set(k, valueOf(k, depth), nil)
			}
			if p.Len() != end-start {
				t.Fatalf("Len = %d, want %d", p.Len(), end-start)
			}
			res, err := p.Exec(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range res {
				if s, err := r.Text(); err != nil || s != "OK" {
					t.Fatalf("SET %s: %q %v", keys[start+i], s, err)
				}
			}
			if p.Len() != 0 {
				t.Fatal("the pipeline is not empty after Exec")
			}
			// read back, mixed with writes, in one pipeline
			for _, k := range keys[start:end] {
				p.Get(k)
				p.Do("STRLEN", k)
			}
			res, err = p.Exec(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < len(res); i += 2 {
				k := keys[start+i/2]
				want := valueOf(k, depth)
				if b, err := res[i].Bytes(); err != nil || string(b) != want {
					t.Fatalf("GET %s = %q %v, want %q", k, b, err, want)
				}
				if n, err := res[i+1].Int64(); err != nil || n != int64(len(want)) {
					t.Fatalf("STRLEN %s = %d %v", k, n, err)
				}
			}
		}
	}
	st, err := c.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if st.Moved != 0 || st.Nodes != 4 {
		t.Fatalf("stats after all slots: %+v (a MOVED means the core's slot map was wrong)", st)
	}
}

func TestPipelineErrorsFailAlone(t *testing.T) {
	servers(t, func(t *testing.T, c *Client) {
		ctx := testCtx(t)
		p := c.Pipeline()
		p.Set("pe:str", "abc", nil)
		p.Do("INCR", "pe:str")           // error reply
		p.Do("GET", struct{}{})          // refused by the binding
		p.Do()                           // refused: no name
		p.Set("pe:k", nil, nil)          // refused
		p.Set("pe:k2", true, nil)        // refused: a bool is never a value
		p.SetBytes("pe:k3", []byte(nil)) // refused
		p.Set("pe:k4", 12, &SetOptions{Px: Int(60000)})
		p.Get("pe:k4")
		p.Do("LPUSH", "pe:str", "x") // WRONGTYPE
		p.Get("pe:str")
		res, err := p.Exec(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(res) != 11 {
			t.Fatalf("%d results", len(res))
		}
		var re *ResponseError
		if !errors.As(res[1].Err, &re) || re.Kind != ErrKindServer || re.Prefix() != "ERR" {
			t.Fatalf("INCR: %v", res[1].Err)
		}
		for _, i := range []int{2, 3, 4, 5, 6} {
			if !errors.Is(res[i].Err, ErrInvalid) || !errors.As(res[i].Err, &re) || re.Kind != ErrKindArgument {
				t.Fatalf("result %d: %v", i, res[i].Err)
			}
		}
		if s, _ := res[7].Text(); s != "OK" {
			t.Fatalf("SET with ttl: %v", res[7])
		}
		if s, _ := res[8].Text(); s != "12" {
			t.Fatalf("GET: %v", res[8])
		}
		if !errors.As(res[9].Err, &re) || re.Prefix() != "WRONGTYPE" {
			t.Fatalf("LPUSH: %v", res[9].Err)
		}
		if s, _ := res[10].Text(); s != "abc" {
			t.Fatalf("GET after errors: %v", res[10])
		}
		// only refused commands: nothing is sent
		p.Do("GET", nil)
		res, err = p.Exec(ctx)
		if err != nil || len(res) != 1 || !errors.Is(res[0].Err, ErrInvalid) {
			t.Fatalf("only refused: %v %v", res, err)
		}
		// empty
		if res, err := p.Exec(ctx); res != nil || err != nil {
			t.Fatalf("empty Exec: %v %v", res, err)
		}
		// Reset drops the queue
		p.Get("a")
		p.Do("GET", nil)
		p.Reset()
		if p.Len() != 0 {
			t.Fatal("Reset")
		}
		p.Do("PING")
		if res, err := p.Exec(ctx); err != nil || len(res) != 1 {
			t.Fatalf("after Reset: %v %v", res, err)
		} else if s, _ := res[0].Text(); s != "PONG" {
			t.Fatalf("PING after Reset: %v", res[0])
		}
		p.Get("a")
		var nilCtx context.Context
		if _, err := p.Exec(nilCtx); !errors.Is(err, ErrInvalid) {
			t.Fatalf("nil ctx: %v", err)
		}
	})
}

func TestPipelineArgumentTypes(t *testing.T) {
	c := newTestClient(t, bundledURL, nil)
	ctx := testCtx(t)
	type stringer struct{ time.Month }
	args := []any{"s", []byte("b"), 1, int8(-2), int16(3), int32(-4), int64(5), uint(6), uint8(7), uint16(8), uint32(9),
		uint64(10), 1.5, float32(0.25), time.March, stringer{time.May}}
	want := []string{"s", "b", "1", "-2", "3", "-4", "5", "6", "7", "8", "9", "10", "1.5", "0.25", "March", "May"}
	p := c.Pipeline()
	for i, a := range args {
		p.Do("SET", fmt.Sprintf("arg:%d", i), a)
		p.Do("GET", fmt.Sprintf("arg:%d", i))
	}
	p.Set("arg:ss", "str", &SetOptions{Px: Int(60000)})
	p.SetBytes("arg:sb", []byte("byt"))
	p.Set("arg:neg", false, nil) // refused: a bool is never a value (bindings/spec/README.md)
	p.SetBytes("arg:nil", nil)   // refused
	p.Get("arg:ss")
	p.Get("arg:sb")
	p.Do("PTTL", "arg:ss")
	res, err := p.Exec(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tail := res[2*len(args):]
	if s, _ := tail[0].Text(); s != "OK" {
		t.Fatalf("SetString: %v", tail[0])
	}
	if s, _ := tail[1].Text(); s != "OK" {
		t.Fatalf("SetBytes: %v", tail[1])
	}
	if !errors.Is(tail[2].Err, ErrInvalid) || !errors.Is(tail[3].Err, ErrInvalid) {
		t.Fatalf("refused SetString/SetBytes: %v %v", tail[2].Err, tail[3].Err)
	}
	if s, _ := tail[4].Text(); s != "str" {
		t.Fatalf("GET after SetString: %v", tail[4])
	}
	if s, _ := tail[5].Text(); s != "byt" {
		t.Fatalf("GET after SetBytes: %v", tail[5])
	}
	if ms, _ := tail[6].Int64(); ms <= 0 || ms > 60000 {
		t.Fatalf("PTTL after SetString with a ttl: %d", ms)
	}
	for i := range args {
		if s, err := res[2*i+1].Text(); err != nil || s != want[i] {
			t.Errorf("%T %v: stored %q %v, want %q", args[i], args[i], s, err, want[i])
		}
	}
}

func TestPipelineLargeValuesAndSplit(t *testing.T) {
	c := newTestClient(t, bundledURL, nil)
	ctx := testCtx(t)
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	p := c.Pipeline()
	p.Set("big:1", big, nil)
	p.Do("MSET", "sp:a", "1", "sp:b", "2", "sp:c", "3", "sp:d", "4") // split per slot by the core
	p.Do("MGET", "sp:a", "sp:b", "nokey", "sp:c", "sp:d")
	p.Get("big:1")
	p.Do("DEL", "sp:a", "sp:b", "nokey")
	res, err := p.Exec(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := res[1].Text(); s != "OK" {
		t.Fatalf("MSET: %v", res[1])
	}
	vals, err := res[2].Slice()
	if err != nil || len(vals) != 5 || vals[0].Text() != "1" || !vals[2].IsNil() || vals[4].Text() != "4" {
		t.Fatalf("MGET: %v %v", vals, err)
	}
	if b, err := res[3].Bytes(); err != nil || !bytes.Equal(b, big) {
		t.Fatalf("GET big: %d bytes, %v", len(b), err)
	}
	if n, err := res[4].Int64(); err != nil || n != 2 {
		t.Fatalf("DEL: %d %v", n, err)
	}
	// the bytes of one value never reach into another's
	b, _ := res[3].Bytes()
	_ = append(b, "overwrite"...)
	if s := vals[4].Text(); s != "4" {
		t.Fatal("append to a value changed another")
	}
}

func TestPipelineCrossSlotTransactionRefused(t *testing.T) {
	c := newTestClient(t, clusterURL, nil)
	ctx := testCtx(t)
	p := c.Pipeline()
	p.Do("MULTI")
	p.Do("SET", "tx:a", "1")
	p.Do("SET", "tx:zzz", "2")
	p.Do("EXEC")
	res, err := p.Exec(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sawCross := false
	for _, r := range res {
		var re *ResponseError
		if errors.As(r.Err, &re) && (strings.Contains(re.Msg, "CROSSSLOT") || re.Kind == ErrKindCluster) {
			sawCross = true
		}
	}
	if !sawCross {
		t.Fatalf("a transaction over two slots was not refused: %v", res)
	}
}
