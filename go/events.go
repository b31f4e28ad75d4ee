package slotlane

// The core's event callback (sl_client_options.on_event) handed to Go. The core calls it
// on the thread running an execution of one of the client's handles (inside the cgo call
// of that execution, or of NewClient's connect), from inside the library, where it must
// neither block nor call the client. So slgoOnEvent only appends the event to the
// client's queue; a goroutine of the client's own calls Options.OnEvent, in order, outside
// every execution. The C side carries the queue as an id in a registry (no Go pointer is
// stored by C); the id is removed from the registry by Client.Close, and
// an event reported after that (by a handle whose creation NewClient or an execution
// abandoned when its ctx ended) finds no queue and is dropped.

// #include <stdint.h>
import "C"

import "sync"

var (
	eventsMu   sync.Mutex
	eventsNext uintptr
	eventsByID = map[uintptr]*eventQueue{}
)

// registerEvents gives q an id (never 0) for the C side.
func registerEvents(q *eventQueue) uintptr {
	eventsMu.Lock()
	defer eventsMu.Unlock()
	eventsNext++
	eventsByID[eventsNext] = q
	return eventsNext
}

func unregisterEvents(id uintptr) {
	eventsMu.Lock()
	delete(eventsByID, id)
	eventsMu.Unlock()
}

// EventType is what an Event reports (the core's SL_EVENT_* kinds).
type EventType int

// Event types (slotlane.h, sl_event_type).
const (
	// EventTopologyChanged: a refresh changed the slot map or the replicas; Addr is the
	// node that answered the refresh.
	EventTopologyChanged EventType = 1
	// EventNodeDown: a working connection to Addr broke, or a connect to a node that had
	// worked failed (once per outage).
	EventNodeDown EventType = 2
	// EventNodeUp: Addr, reported down, connected again.
	EventNodeUp EventType = 3
	// EventFailover: Addr, a replica of a slot's primary, owns the slot now (once per
	// promotion).
	EventFailover EventType = 4
)

// String returns "topology-changed", "node-down", "node-up" or "failover".
func (t EventType) String() string {
	switch t {
	case EventTopologyChanged:
		return "topology-changed"
	case EventNodeDown:
		return "node-down"
	case EventNodeUp:
		return "node-up"
	case EventFailover:
		return "failover"
	}
	return "EventType(" + itoa(int(t)) + ")"
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	neg := n < 0
	if neg {
		n = -n
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}

// Event is one topology or node event of a client (see Options.OnEvent).
type Event struct {
	Type EventType
	Addr string // "host:port"
}

// eventQueue holds the events the core reported and not yet delivered; run delivers
// them to fn until close.
type eventQueue struct {
	mu     sync.Mutex
	queue  []Event
	wake   chan struct{} // capacity 1: "the queue is not empty"
	closed bool
	done   chan struct{} // closed when run returns
	fn     func(Event)
}

func newEventQueue(fn func(Event)) *eventQueue {
	q := &eventQueue{wake: make(chan struct{}, 1), done: make(chan struct{}), fn: fn}
	go q.run()
	return q
}

func (q *eventQueue) push(ev Event) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	q.queue = append(q.queue, ev)
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *eventQueue) run() {
	defer close(q.done)
	for range q.wake {
		for {
			q.mu.Lock()
			evs := q.queue
			q.queue = nil
			closed := q.closed
			q.mu.Unlock()
			for _, ev := range evs {
				q.fn(ev)
			}
			if len(evs) == 0 {
				if closed {
					return
				}
				break
			}
		}
	}
}

// close delivers what is queued, then stops the goroutine; later pushes are dropped.
// Called once.
func (q *eventQueue) close() {
	q.mu.Lock()
	q.closed = true
	close(q.wake) // run drains the queue once more, sees closed, returns
	q.mu.Unlock()
	<-q.done
}

//export slgoOnEvent
func slgoOnEvent(ctx C.uintptr_t, typ C.int, addr *C.char) {
	eventsMu.Lock()
	q := eventsByID[uintptr(ctx)]
	eventsMu.Unlock()
	if q == nil {
		return
	}
	q.push(Event{Type: EventType(typ), Addr: C.GoString(addr)})
}
