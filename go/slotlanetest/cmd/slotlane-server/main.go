// Command slotlane-server runs the bundled slotlane-server that package slotlanetest
// embeds, as a process of its own: for tests that cannot import slotlanetest (the slotlane
// package's own tests: slotlanetest imports slotlane) or want the server in another
// process. It needs nothing beyond the module and cgo:
//
//	go run github.com/slotlane/slotlane/go/slotlanetest/cmd/slotlane-server -shards 4 -port 7000
//
// Once every shard listens it prints one line, "ready URL PORT...", on standard output; it
// stops the server and exits on SIGTERM or SIGINT, or when its standard input reaches end of
// file (so a parent that dies, closing the pipe, takes it along).
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/slotlane/slotlane/go/slotlanetest"
)

func main() {
	shards := flag.Int("shards", 4, "number of shards")
	port := flag.Int("port", 0, "base port (0: ports chosen by the kernel)")
	bind := flag.String("bind", "127.0.0.1", "address to listen on")
	portMode := flag.String("port-mode", "per-shard", "per-shard or one-port")
	forward := flag.Bool("forward", false, "per-shard mode: forward keys of other shards instead of -MOVED")
	durability := flag.String("durability", "memory", "memory, everysec or always")
	dir := flag.String("dir", "", "the logs' directory")
	flag.Parse()

	o := &slotlanetest.Options{Shards: *shards, Port: *port, Bind: *bind, Forward: *forward, Dir: *dir}
	switch *portMode {
	case "per-shard":
		o.PortMode = slotlanetest.PerShard
	case "one-port":
		o.PortMode = slotlanetest.OnePort
	default:
		fail(fmt.Errorf("-port-mode %q: per-shard or one-port", *portMode))
	}
	switch *durability {
	case "memory":
		o.Durability = slotlanetest.Memory
	case "everysec":
		o.Durability = slotlanetest.Everysec
	case "always":
		o.Durability = slotlanetest.Always
	default:
		fail(fmt.Errorf("-durability %q: memory, everysec or always", *durability))
	}
	s, err := slotlanetest.Start(o)
	if err != nil {
		fail(err)
	}
	ports := make([]string, len(s.Ports))
	for i, p := range s.Ports {
		ports[i] = fmt.Sprint(p)
	}
	fmt.Printf("ready %s %s\n", s.URL, strings.Join(ports, " "))

	done := make(chan struct{}, 2)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() { <-sig; done <- struct{}{} }()
	go func() { _, _ = io.Copy(io.Discard, bufio.NewReader(os.Stdin)); done <- struct{}{} }()
	<-done
	s.Close()
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "slotlane-server:", err)
	os.Exit(1)
}
