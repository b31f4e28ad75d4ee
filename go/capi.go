package slotlane

// The one file that speaks C. Everything the binding needs from libslotlane crosses
// here: handle creation and destruction, one crossing per execution (slgo_run), stats,
// cancellation, version and key slots. Declarations, constants and the reply-record
// layout are taken from the vendored slotlane.h by cgo, never copied by hand. The core's
// include paths and definitions are in core_build.go, generated from core/build.cfg.

/*
#cgo CFLAGS: -O2
#cgo LDFLAGS: -lm -lpthread
#include <stdlib.h>
#include <string.h>
#include "slotlane.h"

// What one execution leaves for Go to read: pointers into the batch's own memory
// (valid until the batch's next execution) and the sizes. Allocated in C, once per
// handle, so that no Go pointer is ever stored by C.
typedef struct slgo_out {
	const sl_reply *recs;
	size_t nrecs;
	const uint8_t *data;
	size_t dlen;
	sl_sizes sizes;
	const char *errmsg;
} slgo_out;

// One execution, one crossing: the commands (concatenated RESP, count of them) are
// queued with the route (kind < 0: by key), executed, and the replies' location is
// written to out. The caller's bytes are only read during the call.
static int slgo_run(sl_client *cl, sl_batch *b, int route_kind, int slot, const char *node,
                    const void *cmds, size_t len, size_t count, int timeout_ms, slgo_out *out)
{
	int rc;
	if (route_kind < 0) {
		rc = sl_batch_run(b, cmds, len, count, timeout_ms, NULL, 0, NULL, 0, &out->sizes);
	} else {
		sl_route r = SL_ROUTE_INIT;
		r.kind = (sl_route_kind)route_kind;
		r.slot = slot;
		r.node = node;
		sl_batch_reset(b);
		rc = sl_batch_append(b, &r, cmds, len, count);
		if (rc == 0)
			rc = sl_batch_exec(b, timeout_ms, &out->sizes);
		else
			memset(&out->sizes, 0, sizeof out->sizes);
	}
	out->recs = sl_batch_replies(b, &out->nrecs, &out->data, &out->dlen);
	out->errmsg = rc ? sl_client_errmsg(cl) : "";
	return rc;
}

// One execution on the handle's transaction session (tx.go), like slgo_run: the commands
// run in order on the session's pinned connection.
static int slgo_session_run(sl_client *cl, sl_session *s, sl_batch *b, const void *cmds, size_t len, size_t count,
                            int timeout_ms, slgo_out *out)
{
	int rc = sl_session_run(s, b, cmds, len, count, timeout_ms, NULL, 0, NULL, 0, &out->sizes);
	out->recs = sl_batch_replies(b, &out->nrecs, &out->data, &out->dlen);
	out->errmsg = rc ? sl_client_errmsg(cl) : "";
	return rc;
}

// The event callback's Go side (events.go, exported); ctx is the id of the client's queue.
extern void slgoOnEvent(uintptr_t ctx, int type, char *addr);

static void slgo_event_tramp(void *ctx, sl_event_type type, const char *addr)
{
	slgoOnEvent((uintptr_t)ctx, (int)type, (char *)addr);
}

// The v4 replica options of a client: read_from, retry_writes, and the event callback
// when ev is not 0 (the id of the client's event queue, carried as the ctx).
typedef struct slgo_v4 {
	int read_from;
	int retry_writes;
	uintptr_t ev;
} slgo_v4;

// The client options of createParams (-1: the core's default), for clients and subscribers.
static sl_client_options slgo_opts(const char *url, int mode, const char *user, const char *pass,
                                   int db, int resp, int connect_ms, int command_ms, int max_redirects,
                                   int refresh_ms, int reconnect_min_ms, int reconnect_max_ms, sl_tls *tls)
{
	sl_client_options o = SL_CLIENT_OPTIONS_INIT;
	o.tls = tls;
	o.url = url;
	o.mode = (sl_mode)mode;
	o.username = user;
	o.password = pass;
	o.db = db;
	if (resp) o.resp_version = resp;
	if (connect_ms >= 0) o.connect_timeout_ms = connect_ms;
	if (command_ms >= 0) o.command_timeout_ms = command_ms;
	if (max_redirects >= 0) o.max_redirects = max_redirects;
	if (refresh_ms >= 0) o.refresh_interval_ms = refresh_ms;
	if (reconnect_min_ms >= 0) o.reconnect_min_ms = reconnect_min_ms;
	if (reconnect_max_ms >= 0) o.reconnect_max_ms = reconnect_max_ms;
	return o;
}

static int slgo_new(sl_client **out, const char *url, int mode, const char *user, const char *pass,
                    int db, int resp, int connect_ms, int command_ms, int max_redirects, int refresh_ms,
                    int reconnect_min_ms, int reconnect_max_ms, sl_tls *tls, slgo_v4 v4, char *errmsg, size_t cap)
{
	sl_client_options o = slgo_opts(url, mode, user, pass, db, resp, connect_ms, command_ms, max_redirects,
	                                refresh_ms, reconnect_min_ms, reconnect_max_ms, tls);
	o.read_from = (sl_read_from)v4.read_from;
	o.retry_writes = v4.retry_writes;
	if (v4.ev) {
		o.on_event = slgo_event_tramp;
		o.on_event_ctx = (void *)v4.ev;
	}
	return sl_client_new(out, &o, errmsg, cap);
}

// A subscriber (pubsub.go) with the same client options; max_queue 0 and hc_ms 0: defaults.
static int slgo_sub_new(sl_subscriber **out, const char *url, int mode, const char *user, const char *pass,
                        int db, int resp, int connect_ms, int max_redirects, int reconnect_min_ms,
                        int reconnect_max_ms, sl_tls *tls, uint64_t max_queue, int hc_ms, char *errmsg, size_t cap)
{
	sl_client_options o = slgo_opts(url, mode, user, pass, db, resp, connect_ms, -1, max_redirects, -1,
	                                reconnect_min_ms, reconnect_max_ms, tls);
	sl_subscriber_options so = SL_SUBSCRIBER_OPTIONS_INIT;
	so.max_queue_bytes = max_queue;
	so.health_check_interval_ms = hc_ms;
	return sl_subscriber_new(out, &o, &so, errmsg, cap);
}

static int slgo_sub_stats(const sl_subscriber *s, sl_subscriber_stats *st)
{
	memset(st, 0, sizeof *st);
	st->version = SL_SUBSCRIBER_STATS_VERSION;
	st->size = sizeof *st;
	return sl_subscriber_stats_get(s, st);
}

// The scan's next page and where it is (one crossing per page).
static int slgo_scan_next(sl_client *cl, sl_scan *s, sl_batch *b, int *done, slgo_out *out)
{
	int rc = sl_scan_next(s, b, done);
	out->recs = sl_batch_replies(b, &out->nrecs, &out->data, &out->dlen);
	out->errmsg = rc ? sl_client_errmsg(cl) : "";
	return rc;
}

static int slgo_scan_new(sl_client *cl, const char *match, size_t match_len, const char *type, int count, sl_scan **out)
{
	sl_scan_options o = SL_SCAN_OPTIONS_INIT;
	o.match = match;
	o.match_len = match_len;
	o.type = type;
	o.count = count;
	return sl_scan_new(cl, &o, out);
}

// One EVALSHA through sl_batch_run_script, like slgo_run.
static int slgo_run_script(sl_client *cl, sl_batch *b, const void *body, size_t body_len, const void *cmd,
                           size_t len, int timeout_ms, slgo_out *out)
{
	int rc = sl_batch_run_script(b, body, body_len, cmd, len, timeout_ms, NULL, 0, NULL, 0, &out->sizes);
	out->recs = sl_batch_replies(b, &out->nrecs, &out->data, &out->dlen);
	out->errmsg = rc ? sl_client_errmsg(cl) : "";
	return rc;
}

static int slgo_stats(const sl_client *cl, sl_stats *st)
{
	memset(st, 0, sizeof *st);
	st->version = SL_STATS_VERSION;
	st->size = sizeof *st;
	return sl_client_stats(cl, st);
}
*/
import "C"

import (
	"context"
	"runtime"
	"sync"
	"time"
	"unsafe"
)

// handle is one core client with its batch: a connection (per node) and a pipeline
// engine. A handle is used by one goroutine at a time (the pool hands it out); mu is
// held for the duration of an execution so that Close and Stats can wait for it.
type handle struct {
	mu    sync.Mutex
	cmu   sync.Mutex // orders cancel (from Close) against free; never held during an execution
	cl    *C.sl_client
	b     *C.sl_batch
	out   *C.slgo_out // C memory
	freed bool
	sess  *C.sl_session // the open transaction session (tx.go), or nil; closed before the client is freed

	buf        []byte        // encoding scratch for single commands
	cancelDone chan struct{} // the ctx watcher signals here after sl_client_cancel
	cancelFn   func()        // prebuilt: no closure allocation per execution
}

type createParams struct {
	url, username, password string
	mode                    Mode
	db, resp                int
	connectMs, commandMs    int
	maxRedirects, refreshMs int
	reconnMin, reconnMax    int
	tls                     *tlsRef // the client's TLS configuration (each handle takes a reference), or nil
	readFrom, retryWrites   int
	events                  uintptr // the id of the client's eventQueue (events.go), or 0: no OnEvent
}

// cStrings are the C copies of the address and credentials (NULL for an empty one).
func (p *createParams) cStrings() (url, user, pass *C.char) {
	url = C.CString(p.url)
	if p.username != "" {
		user = C.CString(p.username)
	}
	if p.password != "" {
		pass = C.CString(p.password)
	}
	return
}

func freeCStrings(ss ...*C.char) {
	for _, s := range ss {
		C.free(unsafe.Pointer(s)) // free(NULL) is a no-op
	}
}

// newHandle creates a core client (connect, and in cluster mode discovery) and its batch.
func newHandle(p *createParams) (*handle, error) {
	curl, cuser, cpass := p.cStrings()
	defer freeCStrings(curl, cuser, cpass)
	var errbuf [512]C.char
	var cl *C.sl_client
	rc := C.slgo_new(&cl, curl, C.int(p.mode), cuser, cpass, C.int(p.db), C.int(p.resp),
		C.int(p.connectMs), C.int(p.commandMs), C.int(p.maxRedirects), C.int(p.refreshMs),
		C.int(p.reconnMin), C.int(p.reconnMax), p.tls.ptr(),
		C.slgo_v4{read_from: C.int(p.readFrom), retry_writes: C.int(p.retryWrites), ev: C.uintptr_t(p.events)},
		&errbuf[0], C.size_t(len(errbuf)))
	runtime.KeepAlive(p.tls) // the configuration outlives the call (the core took its own reference)
	if rc != 0 {
		return nil, newError(int(rc), C.GoString(&errbuf[0]), nil)
	}
	var b *C.sl_batch
	if rc = C.sl_batch_new(cl, &b); rc != 0 {
		msg := C.GoString(C.sl_client_errmsg(cl))
		C.sl_client_free(cl)
		return nil, newError(int(rc), msg, nil)
	}
	out := (*C.slgo_out)(C.calloc(1, C.sizeof_slgo_out))
	if out == nil {
		C.sl_batch_free(b)
		C.sl_client_free(cl)
		return nil, newError(int(C.SL_ENOMEM), "out of memory", nil)
	}
	h := &handle{cl: cl, b: b, out: out, cancelDone: make(chan struct{}, 1)}
	h.cancelFn = func() {
		C.sl_client_cancel(h.cl)
		h.cancelDone <- struct{}{}
	}
	return h, nil
}

// free releases the C objects; the caller holds h.mu (or owns h alone).
func (h *handle) free() {
	if h.freed {
		return
	}
	h.cmu.Lock()
	h.freed = true
	if h.sess != nil {
		C.sl_session_close(h.sess) // before the client (slotlane.h); UNWATCH/DISCARD when needed
		h.sess = nil
	}
	C.sl_batch_free(h.b)
	C.sl_client_free(h.cl)
	C.free(unsafe.Pointer(h.out))
	h.b, h.cl, h.out = nil, nil, nil
	h.cmu.Unlock()
}

func (h *handle) mode() Mode { return Mode(C.sl_client_mode(h.cl)) }

// cancel may be called from any goroutine, also while an execution runs (Close); a
// freed handle is left alone.
func (h *handle) cancel() {
	h.cmu.Lock()
	if !h.freed {
		C.sl_client_cancel(h.cl)
	}
	h.cmu.Unlock()
}

func (h *handle) stats(s *Stats) error {
	var st C.sl_stats
	if rc := C.slgo_stats(h.cl, &st); rc != 0 {
		return newError(int(rc), C.GoString(C.sl_client_errmsg(h.cl)), nil)
	}
	s.Commands += uint64(st.commands)
	s.Moved += uint64(st.moved)
	s.Ask += uint64(st.ask)
	s.TryAgain += uint64(st.tryagain)
	s.Refreshes += uint64(st.refreshes)
	s.Connects += uint64(st.connects)
	s.Reconnects += uint64(st.reconnects)
	s.BytesWritten += uint64(st.bytes_written)
	s.BytesRead += uint64(st.bytes_read)
	if n := uint64(st.nodes); n > s.Nodes {
		s.Nodes = n
	}
	return nil
}

// execution is what run leaves for decoding: the return code and the message.
type execution struct {
	rc      int
	errmsg  string
	decoded bool // every command got its record, in dst
}

// run executes count commands (cmds: concatenated RESP) with one crossing and decodes
// the replies into dst (len(dst) == count) before the handle can run again. ctx's
// deadline is the execution's deadline (timeoutMs, already computed by the caller);
// ctx's cancellation cancels the execution through sl_client_cancel from a watcher: the
// handle's client runs this one execution only, so that cancels exactly it (what
// sl_batch_cancel does for the asynchronous API, which this binding does not use). A
// blocking command runs on a leased connection, which the cancel closes: a pop still
// armed on the server can never take an element meant for a later one. onSession runs
// the commands on the handle's open session (tx.go) instead of routing them.
func (h *handle) run(ctx context.Context, cmds []byte, count int, rt *Route, timeoutMs int, dst []Result, onSession bool) execution {
	var stop func() bool
	if ctx.Done() != nil {
		stop = context.AfterFunc(ctx, h.cancelFn)
	}
	kind, slot := C.int(-1), C.int(0)
	var node *C.char
	var nodeBuf []byte
	if rt != nil {
		kind, slot = C.int(rt.kind), C.int(rt.slot)
		if rt.kind == routeNode {
			nodeBuf = append(append(nodeBuf, rt.node...), 0)
			node = (*C.char)(unsafe.Pointer(&nodeBuf[0]))
		}
	}
	var rc C.int
	if onSession {
		rc = C.slgo_session_run(h.cl, h.sess, h.b, unsafe.Pointer(unsafe.SliceData(cmds)), C.size_t(len(cmds)),
			C.size_t(count), C.int(timeoutMs), h.out)
	} else {
		rc = C.slgo_run(h.cl, h.b, kind, slot, node, unsafe.Pointer(unsafe.SliceData(cmds)), C.size_t(len(cmds)),
			C.size_t(count), C.int(timeoutMs), h.out)
	}
	ex := execution{rc: int(rc)}
	if rc != 0 {
		ex.errmsg = C.GoString(h.out.errmsg)
	}
	ex.decoded = h.decode(count, dst)
	if stop != nil && !stop() {
		// The watcher ran (or is running): wait for its sl_client_cancel before the handle
		// can run again. A cancel that lands after the execution finished has no effect:
		// the core only cancels an execution that is running.
		<-h.cancelDone
	}
	return ex
}

// sessionNew opens the handle's transaction session (nothing is sent yet: the core leases
// the connection when the first batch runs). The caller holds h.mu.
func (h *handle) sessionNew() error {
	if rc := C.sl_session_new(h.cl, &h.sess); rc != 0 {
		h.sess = nil
		return newError(int(rc), C.GoString(C.sl_client_errmsg(h.cl)), nil)
	}
	return nil
}

// sessionClose ends the session: the core sends DISCARD or UNWATCH when needed and gives
// the connection back clean, or closes it (a broken session, a failed UNWATCH). The caller
// holds h.mu.
func (h *handle) sessionClose() error {
	if h.sess == nil {
		return nil
	}
	rc := C.sl_session_close(h.sess)
	h.sess = nil
	if rc != 0 {
		return newError(int(rc), C.GoString(C.sl_client_errmsg(h.cl)), nil)
	}
	return nil
}

// decode turns the batch's records into dst. When the execution left no record per
// command (a malformed command buffer, out of memory), dst is left untouched and the
// caller fills it with the execution's error.
func (h *handle) decode(count int, dst []Result) bool {
	out := h.out
	nrecs := int(out.nrecs)
	if int(out.sizes.commands) != count || nrecs < count || out.recs == nil {
		return false
	}
	recs := unsafe.Slice(out.recs, nrecs)
	var data []byte
	if out.dlen > 0 {
		data = make([]byte, int(out.dlen))
		copy(data, unsafe.Slice((*byte)(unsafe.Pointer(out.data)), int(out.dlen)))
	}
	d := decoder{recs: recs, data: data}
	if extra := nrecs - count; extra > 0 {
		d.pool = make([]Value, extra)
	}
	for k := 0; k < count; k++ {
		v := d.value()
		if v.kind == KindError {
			dst[k] = Result{Err: v.responseError()}
		} else {
			dst[k] = Result{Value: v}
		}
	}
	return true
}

type decoder struct {
	recs []C.sl_reply
	data []byte
	i    int
	pool []Value // children of every aggregate, carved in order
}

func (d *decoder) value() Value {
	r := &d.recs[d.i]
	d.i++
	v := Value{kind: Kind(r._type), flags: uint8(r.flags)}
	switch v.kind {
	case KindInteger, KindBool, KindVerbatim:
		v.num = *(*int64)(unsafe.Pointer(&r.value))
	case KindDouble:
		v.num = *(*int64)(unsafe.Pointer(&r.value)) // the bits of the double
	}
	switch v.kind {
	case KindArray, KindMap, KindSet, KindPush:
		n := int(r.len)
		elems := d.pool[:n:n]
		d.pool = d.pool[n:]
		for j := range elems {
			elems[j] = d.value()
		}
		v.elems = elems
	case KindString, KindStatus, KindError, KindDouble, KindBigNumber, KindVerbatim:
		off, n := int(r.offset), int(r.len)
		v.b = d.data[off : off+n : off+n]
	}
	return v
}

// nodes copies the core's node list out.
func (h *handle) nodes() ([]Node, error) {
	var list *C.sl_node_info
	var n C.size_t
	if rc := C.sl_client_nodes(h.cl, &list, &n); rc != 0 {
		return nil, newError(int(rc), C.GoString(C.sl_client_errmsg(h.cl)), nil)
	}
	defer C.sl_client_nodes_free(h.cl, list)
	raw := unsafe.Slice(list, int(n))
	out := make([]Node, len(raw))
	for i := range raw {
		r := &raw[i]
		out[i] = Node{Addr: C.GoString(r.addr), Primary: r.is_primary != 0}
		ranges := unsafe.Slice(r.ranges, 2*int(r.nranges))
		for k := 0; k < int(r.nranges); k++ {
			out[i].Slots = append(out[i].Slots, [2]int{int(ranges[2*k]), int(ranges[2*k+1])})
		}
	}
	for i := range raw {
		if p := int(raw[i].primary); p >= 0 && p < len(out) {
			out[i].PrimaryAddr = out[p].Addr
		}
	}
	return out, nil
}

// scanNew starts a core scan iterator on the handle's client (freed with scanFree).
func (h *handle) scanNew(o *scanFilterT) (*C.sl_scan, error) {
	var match, typ *C.char
	if o.match != "" {
		match = C.CString(o.match)
		defer C.free(unsafe.Pointer(match))
	}
	if o.typ != "" {
		typ = C.CString(o.typ)
		defer C.free(unsafe.Pointer(typ))
	}
	var s *C.sl_scan
	if rc := C.slgo_scan_new(h.cl, match, C.size_t(len(o.match)), typ, C.int(o.count), &s); rc != 0 {
		return nil, newError(int(rc), C.GoString(C.sl_client_errmsg(h.cl)), nil)
	}
	return s, nil
}

func (h *handle) scanFree(s *C.sl_scan) { C.sl_scan_free(s) }

// scanNext fetches the next page: its keys (one copy of the page's bytes, the keys share
// it) and whether the scan is over.
func (h *handle) scanNext(s *C.sl_scan) ([]string, bool, error) {
	var done C.int
	if rc := C.slgo_scan_next(h.cl, s, h.b, &done, h.out); rc != 0 {
		return nil, false, newError(int(rc), C.GoString(h.out.errmsg), nil)
	}
	out := h.out
	if out.nrecs == 0 || out.recs == nil {
		return nil, done != 0, nil
	}
	recs := unsafe.Slice(out.recs, int(out.nrecs))
	var data []byte
	if out.dlen > 0 {
		data = make([]byte, int(out.dlen))
		copy(data, unsafe.Slice((*byte)(unsafe.Pointer(out.data)), int(out.dlen)))
	}
	keys := make([]string, 0, len(recs)-1)
	for i := 1; i < len(recs); i++ {
		off, n := int(recs[i].offset), int(recs[i].len)
		if n == 0 {
			keys = append(keys, "")
			continue
		}
		keys = append(keys, unsafe.String(&data[off], n))
	}
	return keys, done != 0, nil
}

// runScript runs one encoded EVALSHA with the script's body for a NOSCRIPT reload and
// decodes its reply into dst[0].
func (h *handle) runScript(body string, cmd []byte, timeoutMs int, dst []Result) execution {
	b := []byte(body)
	var bp unsafe.Pointer
	if len(b) > 0 {
		bp = unsafe.Pointer(&b[0])
	}
	rc := C.slgo_run_script(h.cl, h.b, bp, C.size_t(len(b)), unsafe.Pointer(unsafe.SliceData(cmd)),
		C.size_t(len(cmd)), C.int(timeoutMs), h.out)
	ex := execution{rc: int(rc)}
	if rc != 0 {
		ex.errmsg = C.GoString(h.out.errmsg)
	}
	ex.decoded = h.decode(1, dst)
	return ex
}

// scriptSHA1 is the core's SHA1 of a script body, as EVALSHA names it.
func scriptSHA1(body string) string {
	b := []byte(body)
	var bp unsafe.Pointer
	if len(b) > 0 {
		bp = unsafe.Pointer(&b[0])
	}
	var out [41]C.char
	C.sl_script_sha1(bp, C.size_t(len(b)), &out[0])
	return C.GoString(&out[0])
}

// Version returns the version of the libslotlane core compiled into this package.
func Version() string { return C.GoString(C.sl_version()) }

// KeySlot returns the Redis Cluster slot (0..16383) of a key: CRC16 of the key, or of
// its {hash tag}, modulo 16384 — computed by the core.
func KeySlot(key string) int {
	if len(key) == 0 {
		return int(C.sl_key_slot(nil, 0))
	}
	b := []byte(key)
	return int(C.sl_key_slot(unsafe.Pointer(&b[0]), C.size_t(len(b))))
}

// strerror is the core's short description of a return code.
func strerror(code int) string { return C.GoString(C.sl_strerror(C.int(code))) }

// Core return codes, from slotlane.h.
const (
	codeOK          = int(C.SL_OK)
	codeInvalid     = int(C.SL_EINVAL)
	codeNoMemory    = int(C.SL_ENOMEM)
	codeIO          = int(C.SL_EIO)
	codeTimeout     = int(C.SL_ETIMEOUT)
	codeProtocol    = int(C.SL_EPROTO)
	codeServer      = int(C.SL_ESERVER)
	codeRedirect    = int(C.SL_EREDIRECT)
	codeCancelled   = int(C.SL_ECANCELLED)
	codeCluster     = int(C.SL_ECLUSTER)
	codeTooSmall    = int(C.SL_ETOOSMALL)
	codeUnsupported = int(C.SL_EUNSUPPORTED)
	codeState       = int(C.SL_ESTATE)
	codeAborted     = int(C.SL_EABORTED)
	codeWatchMoved  = int(C.SL_EWATCHMOVED)
)

// Route kinds, from slotlane.h.
const (
	routeKey          = int(C.SL_ROUTE_KEY)
	routeAllPrimaries = int(C.SL_ROUTE_ALL_PRIMARIES)
	routeNode         = int(C.SL_ROUTE_NODE)
	routeSlot         = int(C.SL_ROUTE_SLOT)
	routeRandom       = int(C.SL_ROUTE_RANDOM)
)

// timeoutMillis is the execution deadline for ctx: its deadline rounded up to a
// millisecond, or 0 (the client's CommandTimeout) when ctx has none. ok is false when
// the deadline has already passed.
func timeoutMillis(ctx context.Context) (ms int, ok bool) {
	d, has := ctx.Deadline()
	if !has {
		return 0, true
	}
	left := time.Until(d)
	if left <= 0 {
		return 0, false
	}
	ms64 := (left + time.Millisecond - 1) / time.Millisecond
	if ms64 > 1<<31-1 {
		ms64 = 1<<31 - 1
	}
	return int(ms64), true
}

// subscriber is the core's sl_subscriber with its drain buffers (pubsub.go).
type subscriber struct {
	s    *C.sl_subscriber
	msgs []C.sl_message
	data []byte
}

const (
	subChannel = int(C.SL_SUB_CHANNEL)
	subPattern = int(C.SL_SUB_PATTERN)
	subShard   = int(C.SL_SUB_SHARD)
	msgResub   = int(C.SL_MSG_RESUBSCRIBED)
)

func newSubscriber(p *createParams, maxQueue int64, hcMs int) (*subscriber, error) {
	curl, cuser, cpass := p.cStrings()
	defer freeCStrings(curl, cuser, cpass)
	var errbuf [512]C.char
	var s *C.sl_subscriber
	rc := C.slgo_sub_new(&s, curl, C.int(p.mode), cuser, cpass, C.int(p.db), C.int(p.resp), C.int(p.connectMs),
		C.int(p.maxRedirects), C.int(p.reconnMin), C.int(p.reconnMax), p.tls.ptr(), C.uint64_t(maxQueue),
		C.int(hcMs), &errbuf[0], C.size_t(len(errbuf)))
	runtime.KeepAlive(p.tls)
	if rc != 0 {
		return nil, newError(int(rc), C.GoString(&errbuf[0]), nil)
	}
	return &subscriber{s: s, msgs: make([]C.sl_message, 256), data: make([]byte, 64<<10)}, nil
}

// op subscribes (or unsubscribes) name of kind; all: every subscription of kind.
func (s *subscriber) op(subscribe bool, kind int, name []byte, all bool) int {
	if all {
		return int(C.sl_subscriber_unsubscribe(s.s, C.int(kind), nil, 0))
	}
	var one [1]byte
	ptr := unsafe.Pointer(&one[0]) // the empty name
	if len(name) > 0 {
		ptr = unsafe.Pointer(&name[0])
	}
	if subscribe {
		return int(C.sl_subscriber_subscribe(s.s, C.int(kind), ptr, C.size_t(len(name))))
	}
	return int(C.sl_subscriber_unsubscribe(s.s, C.int(kind), ptr, C.size_t(len(name))))
}

// drain waits for records (no limit: the core's close wakes it) and gives each to f; the
// byte slices are valid only during f. It returns the code: 0, or SL_ESTATE when the
// subscriber is closed and empty.
func (s *subscriber) drain(f func(kind, flags int, ch, pat, pay []byte, count int64)) int {
	var n, used C.size_t
	for {
		rc := C.sl_subscriber_drain(s.s, -1, &s.msgs[0], C.size_t(len(s.msgs)), unsafe.Pointer(&s.data[0]),
			C.size_t(len(s.data)), &n, &used)
		if rc == C.SL_ETOOSMALL {
			s.data = make([]byte, int(used)+len(s.data))
			continue
		}
		if rc != 0 {
			return int(rc)
		}
		for i := 0; i < int(n); i++ {
			m := &s.msgs[i]
			off := int(m.offset)
			chl, patl, payl := int(m.channel_len), int(m.pattern_len), int(m.payload_len)
			f(int(m.kind), int(m.flags), s.data[off:off+chl], s.data[off+chl:off+chl+patl],
				s.data[off+chl+patl:off+chl+patl+payl], int64(m.count))
		}
		return 0
	}
}

func (s *subscriber) stats() PubSubStats {
	var st C.sl_subscriber_stats
	C.slgo_sub_stats(s.s, &st)
	return PubSubStats{uint64(st.messages), uint64(st.dropped), uint64(st.connection_losses),
		uint64(st.resubscribed), uint64(st.pings), uint64(st.refreshes), uint64(st.confirmed),
		uint64(st.queued_bytes), uint64(st.bytes_read)}
}

func (s *subscriber) close() { C.sl_subscriber_close(s.s) }

func (s *subscriber) free() {
	C.sl_subscriber_free(s.s)
	s.s = nil
}
