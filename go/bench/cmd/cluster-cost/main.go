// Command cluster-cost is the Go binding's cluster-cost tool (DESIGN.md, "The
// benchmarks"): user CPU per request of the client process for the rows plain (one
// node, no discovery), cluster (keys key:0..N-1 over every shard) and one-node (cluster
// client, every key in the {t} hash tag), GET and SET, 32-byte values (keys filled
// first), pipeline depths 16 and 64, W goroutines (8) with a core handle each, R rounds
// (3), medians. In the same run the same rows with go-redis v9 (redis.Client pipeline
// for plain, ClusterClient pipeline for cluster and one-node). With --c-record it also
// reads the record that the C tool (sl-cluster-cost) wrote against the same servers
// just before, so that the targets compare figures of one run.
//
// Method (the C tool's): every worker checks every reply (GET: exactly the key's value;
// SET: +OK); a wrong or error reply fails the row (no figure, non-zero exit). After a
// warmup the main goroutine takes getrusage(RUSAGE_SELF) and the clock, releases the
// workers, stops them after the timed loop, waits until each has finished its last
// pipeline and takes getrusage again: the CPU window holds exactly the timed pipelines
// (and whatever the Go runtime did meanwhile — GC included). Bytes written per request:
// slotlane-go from Client.Stats deltas (sl_stats.bytes_written), go-redis from the
// servers' total_net_input_bytes deltas (also recorded for slotlane-go).
//
//	go run ./cmd/cluster-cost --plain redis://127.0.0.1:7000 --cluster redis://127.0.0.1:7010 --json ../../bench/records/
//
// go/bench/run.sh starts the servers, pins them and this tool, runs the C tool first and
// writes the record.
package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	slotlane "github.com/slotlane/slotlane/go"
)

const valueLen = 32

var cfg struct {
	plainURL, clusterURL string
	rows, ops, depths    string
	clients              string
	seconds, warmup      float64
	rounds, workers      int
	keys                 int
	jsonPath, cRecord    string
	serverDesc, invoc    string
	timeout              time.Duration
	tlsCA                string
}

// slTLS is slotlane's TLS configuration for -tls-ca (nil without it: plaintext).
func slTLS() *slotlane.TLSConfig {
	if cfg.tlsCA == "" {
		return nil
	}
	return &slotlane.TLSConfig{CAFile: cfg.tlsCA}
}

// tlsDesc says in the record whether the run spoke TLS (nil: plaintext).
func tlsDesc() any {
	if cfg.tlsCA == "" {
		return nil
	}
	return map[string]any{"ca_file": cfg.tlsCA, "options": "slotlane: TLSConfig{CAFile}; go-redis: TLSConfig: &tls.Config{RootCAs}"}
}

// goTLS is go-redis's for -tls-ca: the same CA as its users would pass it (tls.Config.RootCAs).
func goTLS() *tls.Config {
	if cfg.tlsCA == "" {
		return nil
	}
	pem, err := os.ReadFile(cfg.tlsCA)
	if err != nil {
		fmt.Fprintln(os.Stderr, "cluster-cost: -tls-ca:", err)
		os.Exit(2)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		fmt.Fprintln(os.Stderr, "cluster-cost: -tls-ca: no certificate in", cfg.tlsCA)
		os.Exit(2)
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}

type round struct {
	Requests          int64    `json:"requests"`
	Pipelines         int64    `json:"pipelines"`
	WallS             float64  `json:"wall_s"`
	UserNs            int64    `json:"user_ns"`
	SysNs             int64    `json:"sys_ns"`
	BytesWritten      *int64   `json:"bytes_written"`
	PayloadBytes      *int64   `json:"payload_bytes"`
	ServerInputBytes  *int64   `json:"server_input_bytes"`
	Moved             *int64   `json:"moved,omitempty"`
	Ask               *int64   `json:"ask,omitempty"`
	Refreshes         *int64   `json:"refreshes,omitempty"`
	Connects          *int64   `json:"connects,omitempty"`
	Reconnects        *int64   `json:"reconnects,omitempty"`
	Load1             float64  `json:"load1"`          // 1-minute load average at the start (the machine is shared)
	CPUNsPerReq       float64  `json:"cpu_ns_per_req"` // user + system: the headline
	UserNsPerReq      float64  `json:"user_ns_per_req"`
	SysNsPerReq       float64  `json:"sys_ns_per_req"`
	BytesPerReq       *float64 `json:"bytes_per_req"`
	ServerInputPerReq *float64 `json:"server_input_bytes_per_req"`
	ReqPerS           float64  `json:"req_per_s"`
	GCCycles          uint32   `json:"gc_cycles"`
}

type row struct {
	Client      string             `json:"client"`
	API         string             `json:"api"`
	Row         string             `json:"row"`
	Op          string             `json:"op"`
	Depth       int                `json:"depth"`
	OK          bool               `json:"ok"`
	Error       *string            `json:"error"`
	BytesSource string             `json:"bytes_source"`
	Rounds      []round            `json:"rounds"`
	Median      map[string]float64 `json:"median"`
	XPlain      *float64           `json:"x_plain"`
	Source      string             `json:"source,omitempty"` // "c-record" for rows copied from the C tool's record
}

type target struct {
	Name  string  `json:"name"`
	Row   string  `json:"row"`
	Op    string  `json:"op"`
	Depth int     `json:"depth"`
	Value float64 `json:"value"`
	Limit float64 `json:"limit"`
	Met   bool    `json:"met"`
}

func main() {
	flag.StringVar(&cfg.plainURL, "plain", "", "one node, for the plain rows (standalone Redis or a forwarding server)")
	flag.StringVar(&cfg.clusterURL, "cluster", "", "a seed of the cluster, for the cluster and one-node rows")
	flag.StringVar(&cfg.rows, "rows", "plain,one-node,cluster", "rows")
	flag.StringVar(&cfg.ops, "ops", "GET,SET", "ops")
	flag.StringVar(&cfg.depths, "depths", "16,64", "pipeline depths")
	flag.StringVar(&cfg.clients, "clients", "slotlane-go,go-redis", "clients")
	flag.Float64Var(&cfg.seconds, "seconds", 3, "timed loop per row and round")
	flag.Float64Var(&cfg.warmup, "warmup", 0.5, "warmup per row and round")
	flag.IntVar(&cfg.rounds, "rounds", 3, "rounds (medians over them)")
	flag.IntVar(&cfg.workers, "workers", 8, "goroutines, each with a core handle (go-redis: pool size)")
	flag.IntVar(&cfg.keys, "keys", 4096, "keys key:0..N-1")
	flag.StringVar(&cfg.jsonPath, "json", "", "write the JSON record: a FILE, or a DIR/ for an auto-named one")
	flag.StringVar(&cfg.cRecord, "c-record", "", "the C tool's record of the same run (its rows are copied, targets use them)")
	flag.StringVar(&cfg.serverDesc, "server-desc", "", "a description of the servers, kept in the record")
	flag.StringVar(&cfg.invoc, "invocation", "", "what started the run, kept in the record")
	flag.DurationVar(&cfg.timeout, "timeout", 10*time.Second, "deadline of one pipeline")
	flag.StringVar(&cfg.tlsCA, "tls-ca", "", "every client speaks TLS trusting this CA file (slotlane: TLSConfig.CAFile; go-redis: tls.Config.RootCAs)")
	flag.Parse()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "cluster-cost:", err)
		os.Exit(1)
	}
}

func split(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func keyName(oneNode bool, k int) string {
	if oneNode {
		return "{t}:key:" + strconv.Itoa(k)
	}
	return "key:" + strconv.Itoa(k)
}

// valueOf is the C tool's value_of: 32 bytes that depend on the key index.
func valueOf(idx int) []byte {
	v := []byte(fmt.Sprintf("v%07d:", idx))
	for i := len(v); i < valueLen; i++ {
		v = append(v, byte('a'+(idx*7+i*3)%26))
	}
	return v
}

func cpuNow() (user, sys int64) {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano(), ru.Stime.Nano()
}

// ---------------------------------------------------------------- workers

type spec struct {
	client string // slotlane-go | go-redis
	row    string // plain | cluster | one-node
	op     string // GET | SET
	depth  int
}

// pipeRunner runs pipeline p of a worker and checks every reply.
type pipeRunner interface {
	run(ctx context.Context, p int) error
}

type plan struct {
	keys  []string
	vals  [][]byte
	vstr  []string
	depth int
	start int
	op    string
}

func (pl *plan) idx(p, j int) int { return (pl.start + p*pl.depth + j) % len(pl.keys) }
func (pl *plan) npipes() int      { return (len(pl.keys) + pl.depth - 1) / pl.depth }

type slWorker struct {
	pl *plan
	p  *slotlane.Pipeline
}

func (w *slWorker) run(ctx context.Context, p int) error {
	pl := w.pl
	for j := 0; j < pl.depth; j++ {
		k := pl.idx(p, j)
		if pl.op == "GET" {
			w.p.Get(pl.keys[k])
		} else {
			w.p.SetBytes(pl.keys[k], pl.vals[k])
		}
	}
	res, err := w.p.Exec(ctx)
	if err != nil {
		return fmt.Errorf("Exec: %w", err)
	}
	for j, r := range res {
		k := pl.idx(p, j)
		if r.Err != nil {
			return fmt.Errorf("%s %s: %v", pl.op, pl.keys[k], r.Err)
		}
		if pl.op == "GET" {
			if r.Value.Kind() != slotlane.KindString || !bytes.Equal(r.Value.Bytes(), pl.vals[k]) {
				return fmt.Errorf("GET %s: wrong reply %v", pl.keys[k], r.Value)
			}
		} else if r.Value.Kind() != slotlane.KindStatus || string(r.Value.Bytes()) != "OK" {
			return fmt.Errorf("SET %s: wrong reply %v", pl.keys[k], r.Value)
		}
	}
	return nil
}

type grWorker struct {
	pl  *plan
	cmd redis.Cmdable
}

func (w *grWorker) run(ctx context.Context, p int) error {
	pl := w.pl
	pipe := w.cmd.Pipeline()
	for j := 0; j < pl.depth; j++ {
		k := pl.idx(p, j)
		if pl.op == "GET" {
			pipe.Get(ctx, pl.keys[k])
		} else {
			pipe.Set(ctx, pl.keys[k], pl.vals[k], 0)
		}
	}
	cmds, err := pipe.Exec(ctx)
	if err != nil {
		return fmt.Errorf("Exec: %w", err)
	}
	for j, c := range cmds {
		k := pl.idx(p, j)
		if pl.op == "GET" {
			v, err := c.(*redis.StringCmd).Result()
			if err != nil || v != pl.vstr[k] {
				return fmt.Errorf("GET %s: %q %v", pl.keys[k], v, err)
			}
		} else {
			v, err := c.(*redis.StatusCmd).Result()
			if err != nil || v != "OK" {
				return fmt.Errorf("SET %s: %q %v", pl.keys[k], v, err)
			}
		}
	}
	return nil
}

// ---------------------------------------------------------------- servers

type servers struct {
	addrs   []string
	clients []*slotlane.Client
}

func openServers(ctx context.Context, url string, cluster bool) (*servers, error) {
	s := &servers{}
	if !cluster {
		s.addrs = []string{strings.TrimPrefix(url, "redis://")}
	} else {
		c, err := slotlane.NewClient(ctx, &slotlane.Options{TLS: slTLS(), URL: url, Mode: slotlane.ModeCluster, PoolSize: 1})
		if err != nil {
			return nil, err
		}
		defer c.Close()
		ranges, err := c.Do(ctx, "CLUSTER", "SLOTS").Slice()
		if err != nil {
			return nil, err
		}
		seen := map[string]bool{}
		for _, r := range ranges {
			n := r.Elems()[2].Elems()
			port, _ := n[1].Int64()
			a := n[0].Text() + ":" + strconv.FormatInt(port, 10)
			if !seen[a] {
				seen[a] = true
				s.addrs = append(s.addrs, a)
			}
		}
		sort.Strings(s.addrs)
	}
	for _, a := range s.addrs {
		c, err := slotlane.NewClient(ctx, &slotlane.Options{TLS: slTLS(), Addrs: []string{a}, Mode: slotlane.ModePlain, PoolSize: 1})
		if err != nil {
			return nil, err
		}
		s.clients = append(s.clients, c)
	}
	return s, nil
}

// inputBytes sums total_net_input_bytes of the servers, -1 when unreadable.
func (s *servers) inputBytes(ctx context.Context) int64 {
	var sum int64
	for _, c := range s.clients {
		info, err := c.Do(ctx, "INFO", "stats").Text()
		if err != nil {
			return -1
		}
		found := false
		for _, l := range strings.Split(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(l), "total_net_input_bytes:"); ok {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					return -1
				}
				sum += n
				found = true
			}
		}
		if !found {
			return -1
		}
	}
	return sum
}

func (s *servers) nodes(ctx context.Context) []map[string]any {
	var out []map[string]any
	for i, c := range s.clients {
		n := map[string]any{"addr": s.addrs[i]}
		if info, err := c.Do(ctx, "INFO", "server").Text(); err == nil {
			for _, l := range strings.Split(info, "\n") {
				l = strings.TrimSpace(l)
				for _, f := range []string{"redis_version", "redis_mode", "process_id", "server_name"} {
					if v, ok := strings.CutPrefix(l, f+":"); ok {
						n[f] = v
					}
				}
			}
		}
		out = append(out, n)
	}
	return out
}

// ---------------------------------------------------------------- one row, one round

func fill(ctx context.Context, url string, mode slotlane.Mode, keys []string, vals [][]byte) error {
	c, err := slotlane.NewClient(ctx, &slotlane.Options{TLS: slTLS(), URL: url, Mode: mode, PoolSize: 1})
	if err != nil {
		return err
	}
	defer c.Close()
	p := c.Pipeline()
	for i := 0; i < len(keys); i += 256 {
		for k := i; k < len(keys) && k < i+256; k++ {
			p.Set(keys[k], vals[k], nil)
		}
		res, err := p.Exec(ctx)
		if err != nil {
			return err
		}
		for _, r := range res {
			if r.Err != nil {
				return r.Err
			}
		}
	}
	return nil
}

func runRound(ctx context.Context, sp spec, srv *servers, keys []string, vals [][]byte, vstr []string) (round, error) {
	var rd round
	url := cfg.plainURL
	if sp.row != "plain" {
		url = cfg.clusterURL
	}
	// clients
	var sl *slotlane.Client
	var gr redis.UniversalClient
	var err error
	switch {
	case sp.client == "slotlane-go":
		mode := slotlane.ModeCluster
		if sp.row == "plain" {
			mode = slotlane.ModePlain
		}
		sl, err = slotlane.NewClient(ctx, &slotlane.Options{TLS: slTLS(), URL: url, Mode: mode, PoolSize: cfg.workers, CommandTimeout: cfg.timeout})
		if err != nil {
			return rd, err
		}
		defer sl.Close()
	case sp.row == "plain":
		gr = redis.NewClient(&redis.Options{Addr: strings.TrimPrefix(url, "redis://"), PoolSize: cfg.workers,
			ReadTimeout: cfg.timeout, WriteTimeout: cfg.timeout, Protocol: 2, TLSConfig: goTLS()})
		defer gr.Close()
	default:
		gr = redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{strings.TrimPrefix(url, "redis://")},
			PoolSize: cfg.workers, ReadTimeout: cfg.timeout, WriteTimeout: cfg.timeout, Protocol: 2, TLSConfig: goTLS()})
		defer gr.Close()
	}
	workers := make([]pipeRunner, cfg.workers)
	plans := make([]*plan, cfg.workers)
	for w := range workers {
		pl := &plan{keys: keys, vals: vals, vstr: vstr, depth: sp.depth, op: sp.op, start: w * len(keys) / cfg.workers}
		plans[w] = pl
		if sl != nil {
			workers[w] = &slWorker{pl: pl, p: sl.Pipeline()}
		} else {
			workers[w] = &grWorker{pl: pl, cmd: gr}
		}
	}
	var phase atomic.Int32 // 0 warmup, 1 timed, 2 stop
	var ready, finished sync.WaitGroup
	start := make(chan struct{})
	counts := make([]int64, cfg.workers)
	payload := make([]int64, cfg.workers)
	errs := make([]error, cfg.workers)
	// the RESP bytes of each pipeline (what a minimal client writes), computed before the timed loop
	payloadOf := func(op string, key string) int64 {
		if op == "GET" {
			return int64(len(fmt.Sprintf("*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n", len(key), key)))
		}
		return int64(len(fmt.Sprintf("*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n", len(key), key, valueLen)) + valueLen + 2)
	}
	pipePayload := make([][]int64, cfg.workers)
	for w, pl := range plans {
		pipePayload[w] = make([]int64, pl.npipes())
		for p := range pipePayload[w] {
			for j := 0; j < pl.depth; j++ {
				pipePayload[w][p] += payloadOf(pl.op, pl.keys[pl.idx(p, j)])
			}
		}
	}
	for w := range workers {
		ready.Add(1)
		finished.Add(1)
		go func(w int) {
			defer finished.Done()
			pl := plans[w]
			np := pl.npipes()
			p := 0
			deadlineWarm := time.Now().Add(time.Duration(cfg.warmup * float64(time.Second)))
			for time.Now().Before(deadlineWarm) {
				if err := workers[w].run(ctx, p); err != nil {
					errs[w] = err
					break
				}
				p = (p + 1) % np
			}
			ready.Done()
			<-start
			var n, pay int64
			for errs[w] == nil && phase.Load() == 1 {
				if err := workers[w].run(ctx, p); err != nil {
					errs[w] = err
					break
				}
				pay += pipePayload[w][p]
				n++
				p = (p + 1) % np
			}
			counts[w], payload[w] = n, pay
		}(w)
	}
	ready.Wait()
	for _, e := range errs {
		if e != nil {
			close(start)
			finished.Wait()
			return rd, e
		}
	}
	var st0, st1 slotlane.Stats
	if sl != nil {
		if st0, err = sl.Stats(); err != nil {
			return rd, err
		}
	}
	in0 := srv.inputBytes(ctx)
	runtime.GC()
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	load1 := loadAvg1()
	u0, s0 := cpuNow()
	t0 := time.Now()
	phase.Store(1)
	close(start)
	time.Sleep(time.Duration(cfg.seconds * float64(time.Second)))
	phase.Store(2)
	finished.Wait()
	wall := time.Since(t0)
	u1, s1 := cpuNow()
	runtime.ReadMemStats(&ms1)
	in1 := srv.inputBytes(ctx)
	for _, e := range errs {
		if e != nil {
			return rd, e
		}
	}
	if sl != nil {
		if st1, err = sl.Stats(); err != nil {
			return rd, err
		}
	}
	var pipes, pay int64
	for w := range counts {
		pipes += counts[w]
		pay += payload[w]
	}
	if pipes == 0 {
		return rd, errors.New("no pipeline completed in the timed loop")
	}
	req := pipes * int64(sp.depth)
	rd = round{Requests: req, Pipelines: pipes, WallS: wall.Seconds(), UserNs: u1 - u0, SysNs: s1 - s0,
		PayloadBytes: &pay, GCCycles: ms1.NumGC - ms0.NumGC, Load1: load1}
	rd.CPUNsPerReq = float64(rd.UserNs+rd.SysNs) / float64(req)
	rd.UserNsPerReq = float64(rd.UserNs) / float64(req)
	rd.SysNsPerReq = float64(rd.SysNs) / float64(req)
	rd.ReqPerS = float64(req) / wall.Seconds()
	if in0 >= 0 && in1 >= 0 {
		d := in1 - in0
		rd.ServerInputBytes = &d
		f := float64(d) / float64(req)
		rd.ServerInputPerReq = &f
	}
	if sl != nil {
		bw := int64(st1.BytesWritten - st0.BytesWritten)
		rd.BytesWritten = &bw
		f := float64(bw) / float64(req)
		rd.BytesPerReq = &f
		i64 := func(a, b uint64) *int64 { d := int64(b - a); return &d }
		rd.Moved, rd.Ask, rd.Refreshes = i64(st0.Moved, st1.Moved), i64(st0.Ask, st1.Ask), i64(st0.Refreshes, st1.Refreshes)
		rd.Connects, rd.Reconnects = i64(st0.Connects, st1.Connects), i64(st0.Reconnects, st1.Reconnects)
	} else if rd.ServerInputBytes != nil {
		rd.BytesWritten = rd.ServerInputBytes
		rd.BytesPerReq = rd.ServerInputPerReq
	}
	return rd, nil
}

// loadAvg1 is the 1-minute load average from /proc/loadavg (0 when unreadable).
func loadAvg1() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func medians(rs []round) map[string]float64 {
	m := map[string]float64{}
	get := func(name string, f func(r round) (float64, bool)) {
		var xs []float64
		for _, r := range rs {
			if v, ok := f(r); ok {
				xs = append(xs, v)
			}
		}
		if len(xs) > 0 {
			m[name] = median(xs)
		}
	}
	get("cpu_ns_per_req", func(r round) (float64, bool) { return r.CPUNsPerReq, true })
	get("user_ns_per_req", func(r round) (float64, bool) { return r.UserNsPerReq, true })
	get("sys_ns_per_req", func(r round) (float64, bool) { return r.SysNsPerReq, true })
	get("bytes_per_req", func(r round) (float64, bool) {
		if r.BytesPerReq == nil {
			return 0, false
		}
		return *r.BytesPerReq, true
	})
	get("payload_bytes_per_req", func(r round) (float64, bool) {
		return float64(*r.PayloadBytes) / float64(r.Requests), true
	})
	get("server_input_bytes_per_req", func(r round) (float64, bool) {
		if r.ServerInputPerReq == nil {
			return 0, false
		}
		return *r.ServerInputPerReq, true
	})
	get("req_per_s", func(r round) (float64, bool) { return r.ReqPerS, true })
	if b, ok := m["bytes_per_req"]; ok {
		m["extra_bytes_per_req"] = b - m["payload_bytes_per_req"]
	}
	return m
}

// ---------------------------------------------------------------- the run

func run() error {
	if cfg.workers < 1 || cfg.rounds < 1 || cfg.keys < 1 || cfg.seconds <= 0 || cfg.warmup < 0 {
		return errors.New("bad --workers/--rounds/--keys/--seconds/--warmup")
	}
	rowsWanted := split(cfg.rows)
	for _, r := range rowsWanted {
		if r != "plain" && r != "cluster" && r != "one-node" {
			return fmt.Errorf("unknown row %q", r)
		}
		if r == "plain" && cfg.plainURL == "" {
			return errors.New("the plain row needs --plain URL")
		}
		if r != "plain" && cfg.clusterURL == "" {
			return errors.New("the cluster and one-node rows need --cluster URL")
		}
	}
	var depths []int
	for _, d := range split(cfg.depths) {
		n, err := strconv.Atoi(d)
		if err != nil || n < 1 {
			return fmt.Errorf("bad depth %q", d)
		}
		depths = append(depths, n)
	}
	ops := split(cfg.ops)
	for _, o := range ops {
		if o != "GET" && o != "SET" {
			return fmt.Errorf("unknown op %q", o)
		}
	}
	clients := split(cfg.clients)
	for _, c := range clients {
		if c != "slotlane-go" && c != "go-redis" {
			return fmt.Errorf("unknown client %q", c)
		}
	}
	ctx := context.Background()
	started := time.Now().UTC()
	keysets := map[bool][]string{}
	vals := make([][]byte, cfg.keys)
	vstr := make([]string, cfg.keys)
	for k := 0; k < cfg.keys; k++ {
		vals[k] = valueOf(k)
		vstr[k] = string(vals[k])
	}
	for _, one := range []bool{false, true} {
		ks := make([]string, cfg.keys)
		for k := range ks {
			ks[k] = keyName(one, k)
		}
		keysets[one] = ks
	}
	var plainSrv, clusterSrv *servers
	var err error
	if cfg.plainURL != "" {
		if plainSrv, err = openServers(ctx, cfg.plainURL, false); err != nil {
			return fmt.Errorf("plain server: %w", err)
		}
		if err := fill(ctx, cfg.plainURL, slotlane.ModePlain, keysets[false], vals); err != nil {
			return fmt.Errorf("fill plain: %w", err)
		}
	}
	if cfg.clusterURL != "" {
		if clusterSrv, err = openServers(ctx, cfg.clusterURL, true); err != nil {
			return fmt.Errorf("cluster: %w", err)
		}
		for _, one := range []bool{false, true} {
			if err := fill(ctx, cfg.clusterURL, slotlane.ModeCluster, keysets[one], vals); err != nil {
				return fmt.Errorf("fill cluster: %w", err)
			}
		}
	}
	var rows []*row
	failed := false
	for _, op := range ops {
		for _, d := range depths {
			for _, rw := range rowsWanted {
				byClient := map[string]*row{}
				for _, cl := range clients {
					r := &row{Client: cl, API: "resp", Row: rw, Op: op, Depth: d, OK: true, Rounds: []round{}}
					if cl == "slotlane-go" {
						r.BytesSource = "sl_stats.bytes_written deltas (Client.Stats)"
					} else {
						r.BytesSource = "servers' total_net_input_bytes deltas"
					}
					byClient[cl] = r
					rows = append(rows, r)
				}
				srv := plainSrv
				if rw != "plain" {
					srv = clusterSrv
				}
				for rd := 0; rd < cfg.rounds; rd++ {
					for _, cl := range clients { // alternate the clients within each round
						r := byClient[cl]
						if !r.OK {
							continue
						}
						res, err := runRound(ctx, spec{client: cl, row: rw, op: op, depth: d}, srv, keysets[rw == "one-node"], vals, vstr)
						if err != nil {
							msg := err.Error()
							r.OK, r.Error = false, &msg
							failed = true
							fmt.Fprintf(os.Stderr, "%s %s %s d%d round %d FAILED: %s\n", cl, rw, op, d, rd+1, msg)
							continue
						}
						r.Rounds = append(r.Rounds, res)
						fmt.Fprintf(os.Stderr, "%-11s %-8s %s d%-3d round %d: user %7.0f ns/req  sys %7.0f ns/req  %9.0f req/s\n",
							cl, rw, op, d, rd+1, res.UserNsPerReq, res.SysNsPerReq, res.ReqPerS)
					}
				}
				for _, r := range byClient {
					if r.OK {
						r.Median = medians(r.Rounds)
					}
				}
			}
		}
	}
	// x_plain: over the slotlane-go plain row of the same op and depth (go-redis: over go-redis plain)
	for _, r := range rows {
		for _, p := range rows {
			if p.Row == "plain" && p.Op == r.Op && p.Depth == r.Depth && p.Client == r.Client && p.OK && r.OK {
				x := r.Median["user_ns_per_req"] / p.Median["user_ns_per_req"]
				r.XPlain = &x
			}
		}
	}
	// the C tool's rows of the same run
	var cRec map[string]any
	if cfg.cRecord != "" {
		b, err := os.ReadFile(cfg.cRecord)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(b, &cRec); err != nil {
			return fmt.Errorf("%s: %w", cfg.cRecord, err)
		}
		crows, _ := cRec["rows"].([]any)
		for _, x := range crows {
			b, _ := json.Marshal(x)
			var r row
			if json.Unmarshal(b, &r) == nil {
				if r.Client == "slotlane" {
					r.Client = "slotlane-c"
				}
				r.Source = "c-record"
				rows = append(rows, &r)
			}
		}
	}
	find := func(client, rw, op string, d int) *row {
		for _, r := range rows {
			if r.Client == client && r.Row == rw && r.Op == op && r.Depth == d && r.OK && r.Median != nil {
				return r
			}
		}
		return nil
	}
	var targets []target
	for _, op := range ops {
		for _, d := range depths {
			for _, rw := range rowsWanted {
				g := find("slotlane-go", rw, op, d)
				if g == nil {
					continue
				}
				if gr := find("go-redis", rw, op, d); gr != nil {
					v := g.Median["user_ns_per_req"] / gr.Median["user_ns_per_req"]
					targets = append(targets, target{Name: "user CPU <= 0.5 x go-redis", Row: rw, Op: op, Depth: d, Value: v, Limit: 0.5, Met: v <= 0.5})
				}
				if c := find("slotlane-c", rw, op, d); c != nil {
					v := g.Median["user_ns_per_req"] / c.Median["user_ns_per_req"]
					targets = append(targets, target{Name: "user CPU <= 1.3 x the C tool", Row: rw, Op: op, Depth: d, Value: v, Limit: 1.3, Met: v <= 1.3})
				}
			}
		}
	}
	printTable(rows, targets)
	if cfg.jsonPath != "" {
		if err := writeRecord(started, rows, targets, cRec, plainSrv, clusterSrv, !failed); err != nil {
			return err
		}
	}
	if failed {
		return errors.New("a row failed its reply checks")
	}
	return nil
}

func printTable(rows []*row, targets []target) {
	fmt.Printf("\n| client | row | op | depth | user ns/req | sys ns/req | bytes/req | req/s | x plain |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		if !r.OK || r.Median == nil {
			fmt.Printf("| %s | %s | %s | %d | FAILED | | | | |\n", r.Client, r.Row, r.Op, r.Depth)
			continue
		}
		xp := ""
		if r.XPlain != nil {
			xp = fmt.Sprintf("%.2f", *r.XPlain)
		}
		b := ""
		if v, ok := r.Median["bytes_per_req"]; ok {
			b = fmt.Sprintf("%.1f", v)
		}
		fmt.Printf("| %s | %s | %s | %d | %.0f | %.0f | %s | %.0f | %s |\n", r.Client, r.Row, r.Op, r.Depth,
			r.Median["user_ns_per_req"], r.Median["sys_ns_per_req"], b, r.Median["req_per_s"], xp)
	}
	fmt.Printf("\n| target | row | op | depth | value | met |\n|---|---|---|---|---|---|\n")
	for _, t := range targets {
		fmt.Printf("| %s | %s | %s | %d | %.2f | %v |\n", t.Name, t.Row, t.Op, t.Depth, t.Value, t.Met)
	}
}

func cmdOut(name string, args ...string) string {
	b, err := exec.Command(name, args...).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func writeRecord(started time.Time, rows []*row, targets []target, cRec map[string]any, plainSrv, clusterSrv *servers, ok bool) error {
	ctx := context.Background()
	host, _ := os.Hostname()
	cpuModel := ""
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "model name"); ok {
				cpuModel = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	goRedis := ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/redis/go-redis/v9" {
				goRedis = d.Version
			}
		}
	}
	root := cmdOut("git", "rev-parse", "--show-toplevel")
	commit := cmdOut("git", "rev-parse", "HEAD")
	if commit == "" {
		commit = "unknown"
	}
	var dirty any
	if root != "" {
		dirty = cmdOut("git", "status", "--porcelain") != ""
	}
	srvObj := func(s *servers, url string) any {
		if s == nil {
			return nil
		}
		return map[string]any{"url": url, "nodes": s.nodes(ctx)}
	}
	finished := time.Now().UTC()
	rec := map[string]any{
		"schema":      "slotlane.bench.cluster-cost/1",
		"benchmark":   "cluster-cost",
		"tool":        "go/bench/cmd/cluster-cost (Go binding) + the C tool's rows from --c-record",
		"ok":          ok,
		"started_at":  started.Format(time.RFC3339),
		"finished_at": finished.Format(time.RFC3339),
		"machine": map[string]any{"hostname": host, "cpu_model": cpuModel, "cores": runtime.NumCPU(),
			"kernel": cmdOut("uname", "-sr"), "client_cpus": strings.TrimSpace(strings.SplitN(cmdOut("taskset", "-pc", strconv.Itoa(os.Getpid()))+":", ":", 3)[1]),
			"gomaxprocs": runtime.GOMAXPROCS(0)},
		"versions": map[string]any{"slotlane": slotlane.Version(), "go": runtime.Version(), "go_redis": goRedis},
		"git":      map[string]any{"commit": commit, "dirty": dirty},
		"command":  os.Args,
		"invocation": func() any {
			if cfg.invoc == "" {
				return nil
			}
			return cfg.invoc
		}(),
		"servers": map[string]any{"description": cfg.serverDesc, "plain": srvObj(plainSrv, cfg.plainURL),
			"cluster": srvObj(clusterSrv, cfg.clusterURL)},
		"config": map[string]any{"workers": cfg.workers, "seconds": cfg.seconds, "warmup_seconds": cfg.warmup,
			"rounds": cfg.rounds, "keys": cfg.keys, "value_bytes": valueLen,
			"api":        "slotlane-go: Pipeline.Get/Set + Exec (Go encodes RESP, one cgo call per pipeline, every reply decoded and checked); go-redis: Pipeline() + Exec",
			"timeout_ms": cfg.timeout.Milliseconds(), "order": "per op, depth and row: rounds, each running slotlane-go then go-redis",
			"pool": "slotlane-go: one Client with PoolSize = workers; go-redis: one Client/ClusterClient with PoolSize = workers, RESP2",
			"tls":  tlsDesc()},
		"rows":    rows,
		"targets": targets,
	}
	if cRec != nil {
		rec["c_record"] = map[string]any{"path": cfg.cRecord, "command": cRec["command"], "config": cRec["config"],
			"started_at": cRec["started_at"], "versions": cRec["versions"]}
	}
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	path := cfg.jsonPath
	if strings.HasSuffix(path, "/") {
		if err := os.MkdirAll(path, 0o755); err != nil {
			return err
		}
		for {
			name := fmt.Sprintf("%s-%s-cluster-cost-go.json", host, time.Now().UTC().Format("2006-01-02-150405"))
			p := filepath.Join(path, name)
			if _, err := os.Stat(p); err == nil {
				time.Sleep(time.Second)
				continue
			}
			path = p
			break
		}
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, path); err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "record:", path)
	return nil
}
