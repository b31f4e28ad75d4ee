// async-cost: the async rows of the Go binding (issue 18): N concurrent callers
// (goroutines; N = 64 and 512), each doing one GET or SET at a time and waiting for it, rows
// plain (one port of slotlane-server, misrouted forward) and cluster (the cluster client
// over its 4 shards), for slotlane-go (today's default: a blocking cgo call per command
// with the handle pool, Options defaults) and go-redis v9 (redis.Client / ClusterClient,
// defaults), interleaved in every round, every reply checked (a wrong reply fails the row).
//
//	cd go/bench && go build -o /tmp/async-cost ./cmd/async-cost
//	taskset -c 1 /tmp/async-cost -server ../../build/server/slotlane-server -port 24740 \
//	    -server-cpu 0 -json ../../bench/records/
//	/tmp/async-cost -url redis://127.0.0.1:PORT [-server-desc TEXT] ...   (a slotlane-server the
//	    caller started, 4 shards per-shard with misrouted forward: bench/async/run.py, `make
//	    bench`'s async rows; no server is started)
//
// Figures per request: total CPU (user + system of the process over the timed loop,
// getrusage: every thread, cgo's included), user, system, requests per second, p50/p99
// of the calls. Record: schema slotlane.bench.async-cost/1 (bench/records/README.md),
// <host>-<date>-<time>-async-cost-go.json.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	slotlane "github.com/slotlane/slotlane/go"
)

const keys = 4096

func valueOf(i int) string { return fmt.Sprintf("%032d", i) }

func rusage() (user, sys int64) {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano(), ru.Stime.Nano()
}

func load1() float64 {
	b, _ := os.ReadFile("/proc/loadavg")
	f, _ := strconv.ParseFloat(strings.Fields(string(b) + " 0")[0], 64)
	return f
}

type caller struct {
	get func(ctx context.Context, k string) (string, bool, error)
	set func(ctx context.Context, k, v string) (bool, error)
}

type round struct {
	Requests     int     `json:"requests"`
	WallS        float64 `json:"wall_s"`
	UserNsPerReq float64 `json:"user_ns_per_req"`
	SysNsPerReq  float64 `json:"sys_ns_per_req"`
	CPUNsPerReq  float64 `json:"cpu_ns_per_req"`
	ReqPerS      float64 `json:"req_per_s"`
	P50Us        float64 `json:"p50_us"`
	P99Us        float64 `json:"p99_us"`
	Load1        float64 `json:"load1"`
}

type row struct {
	Client  string             `json:"client"`
	Row     string             `json:"row"`
	Op      string             `json:"op"`
	Callers int                `json:"callers"`
	OK      bool               `json:"ok"`
	Error   *string            `json:"error"`
	Rounds  []round            `json:"rounds"`
	Median  map[string]float64 `json:"median"`
}

func runRow(c caller, op string, callers, requests int, seed uint32) (round, error) {
	per := requests / callers
	lat := make([]float64, per*callers)
	var mu sync.Mutex
	var bad error
	ctx := context.Background()
	l1 := load1()
	var wg sync.WaitGroup
	u0, s0 := rusage()
	t0 := time.Now()
	for w := 0; w < callers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			s := seed + uint32(w)*7919
			for i := 0; i < per; i++ {
				s = s*1103515245 + 12345
				k := int(s % keys)
				key := "key:" + strconv.Itoa(k)
				a := time.Now()
				var err error
				if op == "GET" {
					var v string
					var ok bool
					v, ok, err = c.get(ctx, key)
					if err == nil && (!ok || v != valueOf(k)) {
						err = fmt.Errorf("GET %s -> %q", key, v)
					}
				} else {
					var ok bool
					ok, err = c.set(ctx, key, valueOf(k))
					if err == nil && !ok {
						err = fmt.Errorf("SET %s not OK", key)
					}
				}
				lat[w*per+i] = float64(time.Since(a).Nanoseconds()) / 1000
				if err != nil {
					mu.Lock()
					if bad == nil {
						bad = err
					}
					mu.Unlock()
					return
				}
			}
		}(w)
	}
	wg.Wait()
	wall := time.Since(t0).Seconds()
	u1, s1 := rusage()
	if bad != nil {
		return round{}, bad
	}
	n := per * callers
	sort.Float64s(lat)
	return round{
		Requests: n, WallS: wall, Load1: l1,
		UserNsPerReq: float64(u1-u0) / float64(n), SysNsPerReq: float64(s1-s0) / float64(n),
		CPUNsPerReq: float64(u1-u0+s1-s0) / float64(n), ReqPerS: float64(n) / wall,
		P50Us: lat[n/2], P99Us: lat[n*99/100],
	}, nil
}

func pingPort(port int) bool {
	conn, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
	if err != nil {
		return false
	}
	defer conn.Close()
	_, _ = conn.Write([]byte("PING\r\n"))
	buf := make([]byte, 16)
	_ = conn.SetReadDeadline(time.Now().Add(time.Second))
	n, _ := conn.Read(buf)
	return strings.HasPrefix(string(buf[:n]), "+PONG")
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "async-cost:", err)
	os.Exit(1)
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// startServer starts slotlane-server (4 shards, per-shard, misrouted forward) on port..port+3,
// waits for every port to answer PING, and returns what stops it.
func startServer(server string, port int, serverCPU string) func() {
	dir, err := os.MkdirTemp("", "slotlane-go-async-")
	if err != nil {
		fail(err)
	}
	srv := exec.Command("taskset", "-c", serverCPU, server, "--shards", "4", "--port-mode", "per-shard",
		"--misrouted", "forward", "--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--durability", "memory", "--dir", dir)
	if err := srv.Start(); err != nil {
		fail(err)
	}
	for i := 0; i < 4; i++ {
		for t := 0; !pingPort(port + i); t++ {
			if t > 200 {
				_ = srv.Process.Kill()
				fail(fmt.Errorf("slotlane-server did not answer on %d", port+i))
			}
			time.Sleep(25 * time.Millisecond) // a start-up poll, not a verdict
		}
	}
	return func() {
		_ = srv.Process.Kill()
		_, _ = srv.Process.Wait()
		os.RemoveAll(dir)
	}
}

func main() {
	server := flag.String("server", "../../build/server/slotlane-server", "slotlane-server binary")
	port := flag.Int("port", 24740, "first of the 4 shard ports (the bench range 24700-24799)")
	serverCPU := flag.String("server-cpu", "0", "CPU the server is pinned to")
	rounds := flag.Int("rounds", 3, "rounds")
	requests := flag.Int("requests", 20480, "requests per row and round")
	jsonDest := flag.String("json", "../../bench/records/", "record file or directory/")
	given := flag.String("url", "", "a slotlane-server the caller started (redis://127.0.0.1:PORT, its first port): no server is started")
	serverDesc := flag.String("server-desc", "", "with -url: the server's description for the record")
	only := flag.String("clients", "slotlane-go,go-redis", "the clients to run (for a profile of one: strace -c -f, pprof)")
	flag.Parse()
	if *given != "" {
		p, err := strconv.Atoi(strings.TrimPrefix(strings.TrimSuffix(*given, "/"), "redis://127.0.0.1:"))
		if err != nil || !strings.HasPrefix(*given, "redis://127.0.0.1:") {
			fail(fmt.Errorf("-url: redis://127.0.0.1:PORT expected, not %q", *given))
		}
		*port = p
		if *serverDesc == "" {
			*serverDesc = "the slotlane-server at " + *given + " (started by the caller)"
		}
	} else {
		*serverDesc = fmt.Sprintf("slotlane-server (%s): 4 shards, per-shard, misrouted forward, ports %d-%d, pinned to CPU %s", *server, *port, *port+3, *serverCPU)
		stop := startServer(*server, *port, *serverCPU)
		defer stop()
	}
	ctx := context.Background()
	url := "redis://127.0.0.1:" + strconv.Itoa(*port)
	addr := "127.0.0.1:" + strconv.Itoa(*port)
	callers := map[string]caller{}
	var closers []func()
	for _, r := range []string{"plain", "cluster"} {
		mode := slotlane.ModePlain
		if r == "cluster" {
			mode = slotlane.ModeCluster
		}
		c, err := slotlane.NewClient(ctx, &slotlane.Options{URL: url, Mode: mode})
		if err != nil {
			fail(err)
		}
		closers = append(closers, func() { c.Close() })
		callers["slotlane-go/"+r] = caller{
			get: func(ctx context.Context, k string) (string, bool, error) {
				v, err := c.Get(ctx, k)
				if err != nil || v == nil {
					return "", false, err
				}
				return *v, true, nil
			},
			set: func(ctx context.Context, k, v string) (bool, error) { return c.Set(ctx, k, v, nil) },
		}
		var g redis.UniversalClient
		if r == "cluster" {
			g = redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{addr}})
		} else {
			g = redis.NewClient(&redis.Options{Addr: addr})
		}
		closers = append(closers, func() { g.Close() })
		callers["go-redis/"+r] = caller{
			get: func(ctx context.Context, k string) (string, bool, error) {
				v, err := g.Get(ctx, k).Result()
				if err == redis.Nil {
					return "", false, nil
				}
				return v, err == nil, err
			},
			set: func(ctx context.Context, k, v string) (bool, error) {
				s, err := g.Set(ctx, k, v, 0).Result()
				return s == "OK", err
			},
		}
	}
	for i := 0; i < keys; i++ {
		if _, err := callers["slotlane-go/cluster"].set(ctx, "key:"+strconv.Itoa(i), valueOf(i)); err != nil {
			fail(err)
		}
	}
	clients := strings.Split(*only, ",")
	type spec struct {
		row, op string
		n       int
	}
	var specs []spec
	for _, r := range []string{"plain", "cluster"} {
		for _, op := range []string{"GET", "SET"} {
			for _, n := range []int{64, 512} {
				specs = append(specs, spec{r, op, n})
			}
		}
	}
	rows := map[string]*row{}
	var order []string
	seed := uint32(12345)
	for rd := 0; rd < *rounds; rd++ {
		for _, s := range specs {
			for _, cl := range clients { // interleaved: both clients in every round
				k := fmt.Sprintf("%s/%s/%s/%d", cl, s.row, s.op, s.n)
				e := rows[k]
				if e == nil {
					e = &row{Client: cl, Row: s.row, Op: s.op, Callers: s.n, OK: true}
					rows[k] = e
					order = append(order, k)
				}
				if !e.OK {
					continue
				}
				runtime.GC() // the previous row's garbage is not this row's
				r, err := runRow(callers[cl+"/"+s.row], s.op, s.n, *requests, seed)
				seed++
				if err != nil {
					msg := err.Error()
					e.OK, e.Error = false, &msg
					continue
				}
				e.Rounds = append(e.Rounds, r)
			}
		}
		fmt.Fprintf(os.Stderr, "async-cost go: round %d/%d done\n", rd+1, *rounds)
	}
	for _, f := range closers {
		f()
	}
	var out []*row
	var targets []map[string]any
	ok := true
	for _, k := range order {
		e := rows[k]
		ok = ok && e.OK
		if e.OK {
			e.Median = map[string]float64{}
			pick := map[string]func(r round) float64{
				"cpu_ns_per_req": func(r round) float64 { return r.CPUNsPerReq }, "user_ns_per_req": func(r round) float64 { return r.UserNsPerReq },
				"sys_ns_per_req": func(r round) float64 { return r.SysNsPerReq }, "req_per_s": func(r round) float64 { return r.ReqPerS },
				"p50_us": func(r round) float64 { return r.P50Us }, "p99_us": func(r round) float64 { return r.P99Us },
			}
			for f, get := range pick {
				var xs []float64
				for _, r := range e.Rounds {
					xs = append(xs, get(r))
				}
				e.Median[f] = median(xs)
			}
		}
		out = append(out, e)
	}
	for _, e := range out {
		if e.Client != "slotlane-go" || !e.OK {
			continue
		}
		g := rows[fmt.Sprintf("go-redis/%s/%s/%d", e.Row, e.Op, e.Callers)]
		if g == nil || !g.OK {
			continue
		}
		v := e.Median["cpu_ns_per_req"] / g.Median["cpu_ns_per_req"]
		targets = append(targets, map[string]any{"name": "total CPU/req <= 0.5 x go-redis", "row": e.Row, "op": e.Op,
			"callers": e.Callers, "value": v, "limit": 0.5, "met": v <= 0.5})
	}
	host, _ := os.Hostname()
	commit, _ := exec.Command("git", "rev-parse", "HEAD").Output()
	rec := map[string]any{
		"schema": "slotlane.bench.async-cost/1", "benchmark": "async-cost", "ok": ok, "command": os.Args,
		"commit": strings.TrimSpace(string(commit)), "started_at_unix": time.Now().Unix(),
		"machine":   map[string]any{"hostname": host, "cores": runtime.NumCPU(), "gomaxprocs": runtime.GOMAXPROCS(0)},
		"runtime":   runtime.Version() + " (goroutines; slotlane-go: a blocking cgo call per command on a pooled core handle)",
		"config":    map[string]any{"keys": keys, "value_bytes": 32, "requests_per_round": *requests, "rounds": *rounds},
		"servers":   map[string]any{"description": *serverDesc},
		"load_note": "a shared 2-core machine (other engineers' builds and tests run on it): see rounds[].load1",
		"rows":      out, "targets": targets,
	}
	data, _ := json.MarshalIndent(rec, "", "  ")
	dest := *jsonDest
	if strings.HasSuffix(dest, "/") {
		if err := os.MkdirAll(dest, 0o755); err != nil {
			fail(err)
		}
		for {
			name := filepath.Join(dest, fmt.Sprintf("%s-%s-async-cost-go.json", host, time.Now().UTC().Format("2006-01-02-150405")))
			tmp := fmt.Sprintf("%s.%d.tmp", name, os.Getpid())
			if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err != nil {
				fail(err)
			}
			err := os.Link(tmp, name) // never replaces a record
			os.Remove(tmp)
			if err == nil {
				dest = name
				break
			}
			if !os.IsExist(err) {
				fail(err)
			}
			time.Sleep(time.Second)
		}
	} else if err := os.WriteFile(dest, append(data, '\n'), 0o644); err != nil {
		fail(err)
	}
	for _, e := range out {
		if !e.OK {
			fmt.Printf("%-12s %-8s %s %4d FAILED %s\n", e.Client, e.Row, e.Op, e.Callers, *e.Error)
			continue
		}
		m := e.Median
		fmt.Printf("%-12s %-8s %s %4d  cpu %6.0f ns  user %6.0f  sys %6.0f  req/s %7.0f  p50 %6.0f us  p99 %6.0f us\n",
			e.Client, e.Row, e.Op, e.Callers, m["cpu_ns_per_req"], m["user_ns_per_req"], m["sys_ns_per_req"], m["req_per_s"], m["p50_us"], m["p99_us"])
	}
	for _, t := range targets {
		fmt.Printf("target %s %s %v: %.2f\n", t["row"], t["op"], t["callers"], t["value"])
	}
	fmt.Println("record:", dest)
}
