// Package slotlanetest starts the bundled slotlane-server inside the test process: a real
// sharded cluster on loopback for an application's own tests — slots, MOVED and discovery
// as in production — stopped when the test ends.
//
//	func TestApp(t *testing.T) {
//		srv := slotlanetest.NewServer(t, nil) // 4 shards, ephemeral ports; t.Cleanup stops it
//		c, err := slotlane.NewClient(ctx, &slotlane.Options{URL: srv.URL})
//		...
//	}
//
// The server is compiled into this package from the module's copy of its sources
// (internal/ssrc, written by ci/vendor-core.sh from server/build.cfg): nothing is
// downloaded or started by hand. It needs libuv and Lua 5.1 with cjson and bit through
// pkg-config (Debian: libuv1-dev liblua5.1-0-dev lua-cjson-dev lua-bitop-dev). Several
// servers may run at once; they share nothing.
package slotlanetest

/*
#include <stdlib.h>
#include "slotlane_server.h"
*/
import "C"

import (
	"fmt"
	"testing"
	"unsafe"

	// the core's slot leaf module, which the server shares, is compiled there
	_ "github.com/slotlane/slotlane/go"
)

// PortMode: where shards listen.
type PortMode int

const (
	// PerShard: shard i on its own port, answering like a Redis Cluster primary (default).
	PerShard PortMode = 0
	// OnePort: every shard on one port; keys of other shards are forwarded.
	OnePort PortMode = 1
)

// Durability of the shards' logs.
type Durability int

const (
	Memory   Durability = 0 // nothing written (default)
	Everysec Durability = 1 // fsync'd once a second
	Always   Durability = 2 // fsync'd before any reply leaves
)

// Options of a server; nil or the zero value: 4 shards, per-shard ports, -MOVED, in
// memory, ephemeral ports on 127.0.0.1.
type Options struct {
	Shards     int // 0: 4
	PortMode   PortMode
	Forward    bool // per-shard mode: forward keys of other shards instead of -MOVED
	Durability Durability
	Dir        string // the logs' directory ("": the current one)
	Bind       string // "": 127.0.0.1
	Port       int    // 0: ports chosen by the kernel; else the base port
	// Settings are other flags of the slotlane-server executable, name then value
	// without the dashes: {"maxclients", "100"}.
	Settings []string
}

// Server is a running slotlane-server in this process.
type Server struct {
	// URL is redis://127.0.0.1:PORT of shard 0: a cluster client discovers the others.
	URL string
	// Ports are the shards' ports (all the same in one-port mode).
	Ports []int
	raw   *C.sl_server
}

// Start starts a server; the caller stops it with Close. An error: a bad option, a busy
// port, a directory in use.
func Start(opts *Options) (*Server, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Shards == 0 {
		o.Shards = 4
	}
	if len(o.Settings)%2 != 0 {
		return nil, fmt.Errorf("slotlanetest: Settings must be name/value pairs")
	}
	var co C.sl_server_options
	C.sl_server_options_init(&co, C.SL_SERVER_OPTIONS_VERSION)
	co.shards = C.int(o.Shards)
	co.port_mode = C.int(o.PortMode)
	if o.Forward {
		co.misrouted = 1
	}
	co.durability = C.int(o.Durability)
	co.port = C.int(o.Port)
	var frees []unsafe.Pointer
	defer func() {
		for _, p := range frees {
			C.free(p)
		}
	}()
	cstr := func(s string) *C.char {
		p := C.CString(s)
		frees = append(frees, unsafe.Pointer(p))
		return p
	}
	if o.Dir != "" {
		co.dir = cstr(o.Dir)
	}
	if o.Bind != "" {
		co.bind = cstr(o.Bind)
	}
	if n := len(o.Settings); n > 0 {
		arr := (*[1 << 20]*C.char)(C.malloc(C.size_t(n) * C.size_t(unsafe.Sizeof((*C.char)(nil)))))[:n:n]
		frees = append(frees, unsafe.Pointer(&arr[0]))
		for i, s := range o.Settings {
			arr[i] = cstr(s)
		}
		co.settings = &arr[0]
		co.nsettings = C.size_t(n)
	}
	var raw *C.sl_server
	var errbuf [512]C.char
	if rc := C.sl_server_start(&raw, &co, &errbuf[0], C.size_t(len(errbuf))); rc != 0 {
		return nil, fmt.Errorf("slotlanetest: %s", C.GoString(&errbuf[0]))
	}
	s := &Server{raw: raw}
	for i := 0; i < int(C.sl_server_shards(raw)); i++ {
		s.Ports = append(s.Ports, int(C.sl_server_port(raw, C.int(i))))
	}
	var url [128]C.char
	C.sl_server_url(raw, &url[0], C.size_t(len(url)))
	s.URL = C.GoString(&url[0])
	return s, nil
}

// NewServer starts a server for the test and registers t.Cleanup to stop it; a server
// that cannot start fails the test (t.Fatal).
func NewServer(t testing.TB, opts *Options) *Server {
	t.Helper()
	s, err := Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// Stop stops every shard and waits: connected clients see their connections end (I/O
// errors, not hangs), ports are released, logs flushed. A second call does nothing.
func (s *Server) Stop() {
	if s.raw != nil {
		C.sl_server_stop(s.raw)
	}
}

// Close stops the server and frees it; a second call does nothing.
func (s *Server) Close() {
	if s.raw != nil {
		C.sl_server_free(s.raw)
		s.raw = nil
	}
}
