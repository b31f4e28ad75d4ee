package slotlane

// The servers the tests run against, started by TestMain and stopped by PID when it
// ends (ci/test-go.sh stops them too if the test binary dies):
//
//   - the bundled slotlane-server, 4 shards in per-shard mode (cluster), ports block+0..3:
//     the module's own slotlanetest/cmd/slotlane-server (slotlanetest's embedded server in a
//     process of its own), built here with the go tool;
//   - Debian's redis-server, standalone (plain), port block+10 (ci/redis-plain.sh);
//   - a 3-primary Redis Cluster, ports block+20..25 (ci/redis-cluster.sh), for the
//     conformance cases in cluster mode against Redis and the live-reshard test;
//   - the failure test starts its own cluster on block+40..45 (block: choosePorts).
//
// Ports 23000-23499 are this binding's (a block of them, see choosePorts). SL_GO_TEST_DIR (set by ci/test-go.sh) is where
// the servers keep their files.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The ports: a block of 60 in the Go range of ci/lib.sh's port map (23000-23479; the
// smoke run of ci/test-go.sh has 23480-23499), the first block whose lock file this
// process can hold (flock, until it exits) and whose ports are all free, so runs from
// other checkouts on the machine never share a port.
const portBlockSize = 60

var (
	portBlock   int
	bundledPort int // portBlock+0..3
	plainPort   int // +10
	clusterPort int // +20..25
	failurePort int // +40..45
	silentPort  int // +50 (listenSilent)
	stallPort   int // +51 (stallServer)
	blockLock   *os.File
)

func choosePorts() error {
	for base := 23000; base+portBlockSize <= 23480; base += portBlockSize {
		f, err := os.OpenFile(filepath.Join(os.TempDir(), fmt.Sprintf("slotlane-go-ports-%d.lock", base)), os.O_CREATE|os.O_RDWR, 0o666)
		if err != nil {
			return err
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
			f.Close() // another run holds this block
			continue
		}
		free := true
		for p := base; p < base+portBlockSize && free; p++ {
			free = !portOpen(p)
		}
		if !free {
			f.Close()
			continue
		}
		blockLock = f // held until the process exits
		portBlock = base
		bundledPort, plainPort, clusterPort, failurePort = base, base+10, base+20, base+40
		silentPort, stallPort = base+50, base+51
		return nil
	}
	return fmt.Errorf("no free block of %d ports in 23000-23479", portBlockSize)
}

var (
	repoRoot     string
	workDir      string
	bundledURL   string // the bundled server (cluster, per-shard)
	bundledDesc  string
	plainURL     string // standalone Redis
	clusterURL   string // Redis Cluster
	bundledPID   int
	bundledStdin io.WriteCloser // closed (or this process gone): the server stops
	startedDirs  []string       // ci/redis-*.sh dirs to stop: "plain:DIR" or "cluster:DIR"
	ownWorkDir   bool           // workDir was made here: removed at the end
)

func TestMain(m *testing.M) {
	code := 1
	func() {
		defer stopServers()
		if err := startServers(); err != nil {
			fmt.Fprintln(os.Stderr, "slotlane tests: cannot start the test servers:", err)
			return
		}
		code = m.Run()
	}()
	os.Exit(code)
}

func findRepoRoot() (string, error) {
	if r := os.Getenv("SL_ROOT"); r != "" {
		return r, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	root := filepath.Dir(wd)
	if _, err := os.Stat(filepath.Join(root, "ci", "redis-cluster.sh")); err != nil {
		return "", fmt.Errorf("the tests need the slotlane monorepo around go/ (ci/redis-cluster.sh not found from %s); set SL_ROOT", wd)
	}
	return root, nil
}

func startServers() error {
	var err error
	if repoRoot, err = findRepoRoot(); err != nil {
		return err
	}
	if err = choosePorts(); err != nil {
		return err
	}
	workDir = os.Getenv("SL_GO_TEST_DIR")
	if workDir == "" {
		if workDir, err = os.MkdirTemp("", "slotlane-go-test."); err != nil {
			return err
		}
		ownWorkDir = true
	}
	if err := startBundled(); err != nil {
		return err
	}
	dir := filepath.Join(workDir, "plain")
	if err := script("redis-plain.sh", "start", dir, strconv.Itoa(plainPort)); err != nil {
		return err
	}
	startedDirs = append(startedDirs, "plain:"+dir)
	plainURL = fmt.Sprintf("redis://127.0.0.1:%d", plainPort)
	dir = filepath.Join(workDir, "cluster")
	if err := script("redis-cluster.sh", "start", dir, strconv.Itoa(clusterPort), "3"); err != nil {
		return err
	}
	startedDirs = append(startedDirs, "cluster:"+dir)
	clusterURL = fmt.Sprintf("redis://127.0.0.1:%d", clusterPort)
	return nil
}

// startBundled runs the module's own slotlane-server command (slotlanetest/cmd/slotlane-server:
// the server slotlanetest embeds, in a process of its own, because this package's tests
// cannot import slotlanetest, which imports slotlane), built here with the go tool — so
// `go test ./...` needs nothing built beforehand.
func startBundled() error {
	for i := 0; i < 4; i++ {
		if portOpen(bundledPort + i) {
			return fmt.Errorf("port %d is in use", bundledPort+i)
		}
	}
	bin := filepath.Join(workDir, "slotlane-server")
	build := exec.Command("go", "build", "-o", bin, "./slotlanetest/cmd/slotlane-server")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./slotlanetest/cmd/slotlane-server: %v\n%s", err, out)
	}
	logf, err := os.Create(filepath.Join(workDir, "slotlane-server.log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(bin, "-shards", "4", "-port", strconv.Itoa(bundledPort), "-bind", "127.0.0.1")
	cmd.Stderr = logf
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	// its standard input stays open until this process exits: end of file stops it
	if bundledStdin, err = cmd.StdinPipe(); err != nil {
		return err
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return err
	}
	bundledPID = cmd.Process.Pid
	_ = os.WriteFile(filepath.Join(workDir, "slotlane-server.pid"), []byte(strconv.Itoa(bundledPID)+"\n"), 0o644)
	// "ready URL PORT..." once every shard listens; end of output first means it failed
	line, err := bufio.NewReader(stdout).ReadString('\n')
	go func() { _ = cmd.Wait() }()
	if !strings.HasPrefix(line, "ready ") {
		log, _ := os.ReadFile(filepath.Join(workDir, "slotlane-server.log"))
		return fmt.Errorf("slotlane-server did not start (%v): %s", err, log)
	}
	bundledURL = strings.Fields(line)[1]
	os.Setenv("SLOTLANE_URL", bundledURL) // for Example
	bundledDesc = fmt.Sprintf("slotlane-server (slotlanetest's, in a process of its own), 4 shards, per-shard ports %d-%d", bundledPort, bundledPort+3)
	return nil
}

func stopServers() {
	if bundledPID > 0 {
		_ = bundledStdin.Close()
		_ = syscall.Kill(bundledPID, syscall.SIGTERM)
		for i := 0; i < 100 && syscall.Kill(bundledPID, 0) == nil; i++ {
			time.Sleep(20 * time.Millisecond)
		}
		_ = syscall.Kill(bundledPID, syscall.SIGKILL)
		bundledPID = 0
	}
	for _, s := range startedDirs {
		kind, dir, _ := strings.Cut(s, ":")
		if kind == "plain" {
			_ = script("redis-plain.sh", "stop", dir)
		} else {
			_ = script("redis-cluster.sh", "stop", dir)
		}
	}
	startedDirs = nil
	if ownWorkDir {
		_ = os.RemoveAll(workDir)
	}
}

func portOpen(port int) bool {
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 200*time.Millisecond)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// script runs ci/NAME with args; its output goes to the test log on failure.
func script(name string, args ...string) error {
	cmd := exec.Command("bash", append([]string{filepath.Join(repoRoot, "ci", name)}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("ci/%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

// newTestClient connects to url with opts (URL filled in) and closes it at the end.
func newTestClient(t testing.TB, url string, opts *Options) *Client {
	t.Helper()
	if opts == nil {
		opts = &Options{}
	}
	o := *opts
	if len(o.Addrs) == 0 {
		o.URL = url
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := NewClient(ctx, &o)
	if err != nil {
		t.Fatalf("NewClient(%s): %v", url, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// testCtx is a test's context: its deadline is only a guard against a hang (a test whose
// verdict needs a deadline makes its own), long enough for the slowest test on a busy
// machine (TestRedisClusterLiveReshard ran out of a 30 s one at load average 27).
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// listenSilent accepts connections on 127.0.0.1:silentPort and never answers; it returns
// the address and closes at the end of the test.
func listenSilent(t testing.TB) (string, error) {
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", silentPort))
	if err != nil {
		return "", err
	}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String(), nil
}

// redisCLI runs redis-cli against a port and returns its output lines.
func redisCLI(t testing.TB, port int, args ...string) []string {
	t.Helper()
	out, err := exec.Command("redis-cli", append([]string{"-h", "127.0.0.1", "-p", strconv.Itoa(port)}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli -p %d %v: %v: %s", port, args, err, out)
	}
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines
}

// stallServer is a server that stalls on purpose, on 127.0.0.1:stallPort: it answers PING
// with +PONG (NewClient's check) and other commands with +OK; on its first connection
// after the first `answer` commands other than PING it closes the returned channel (the
// answers are written: on loopback they are in the client's socket) and reads on
// without answering anything. It closes at the end of the test.
func stallServer(t testing.TB, answer int) (string, <-chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", stallPort))
	if err != nil {
		t.Fatal(err)
	}
	stalled := make(chan struct{})
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for first := true; ; first = false {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
			limit := -1
			if first {
				limit = answer
			}
			go serveStalling(c, limit, stalled)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String(), stalled
}

// serveStalling answers RESP array requests on c: all of them when limit < 0, else
// until limit commands other than PING were answered; then it closes stalled and
// answers nothing more.
func serveStalling(c net.Conn, limit int, stalled chan struct{}) {
	r := bufio.NewReaderSize(c, 1<<16)
	w := bufio.NewWriterSize(c, 1<<16)
	line := func() (string, error) {
		s, err := r.ReadString('\n')
		return strings.TrimRight(s, "\r\n"), err
	}
	for n := 0; ; {
		hdr, err := line()
		if err != nil || !strings.HasPrefix(hdr, "*") {
			return
		}
		argc, _ := strconv.Atoi(hdr[1:])
		var name string
		for i := 0; i < argc; i++ {
			h, err := line()
			if err != nil || !strings.HasPrefix(h, "$") {
				return
			}
			l, _ := strconv.Atoi(h[1:])
			buf := make([]byte, l+2)
			if _, err := io.ReadFull(r, buf); err != nil {
				return
			}
			if i == 0 {
				name = strings.ToUpper(string(buf[:l]))
			}
		}
		if limit >= 0 && n >= limit {
			continue // stalled: read on, answer nothing
		}
		if name == "PING" {
			w.WriteString("+PONG\r\n")
		} else {
			w.WriteString("+OK\r\n")
			n++
		}
		if limit >= 0 && n == limit {
			if w.Flush() != nil {
				return
			}
			close(stalled)
			continue
		}
		if r.Buffered() == 0 && w.Flush() != nil {
			return
		}
	}
}
