package slotlane

// #include "slotlane.h"
import "C"

import "strings"

// sentinel is the type of the package's error values that carry a property beyond
// their text: ErrTimeout reports Timeout() == true, as net.Error timeouts do.
type sentinel struct {
	msg     string
	timeout bool
}

// Error returns the sentinel's text.
func (e *sentinel) Error() string { return e.msg }

// Timeout reports whether the error is a timeout (true for ErrTimeout only).
func (e *sentinel) Timeout() bool { return e.timeout }

// Errors to test for with errors.Is. A command's *ResponseError and an execution's
// *Error wrap the one that matches their kind or code (errors_gen.go has the sentinels
// of errors.json's types: ErrInvalid, ErrConnection, ErrTimeout, ErrProtocol, ErrCluster,
// ErrCancelled, ErrResource); when ctx caused the failure, they wrap ctx.Err()
// (context.Canceled or context.DeadlineExceeded) as well. The Go-only ones:
var (
	// ErrNil is returned by the typed accessors and helpers when the reply is nil
	// (a missing key for GET, for example). It is not a failure of the command.
	ErrNil error = &sentinel{msg: "slotlane: nil reply"}
	// ErrClosed: the client was closed before or during the call.
	ErrClosed error = &sentinel{msg: "slotlane: client is closed"}
	// ErrRedirects: too many MOVED/ASK/TRYAGAIN/CLUSTERDOWN redirects for a command.
	ErrRedirects error = &sentinel{msg: "slotlane: too many redirects"}
	// ErrUnsupported: a feature this build does not have (TLS without OpenSSL, for example).
	ErrUnsupported error = &sentinel{msg: "slotlane: unsupported"}
	// ErrUnexpectedType: a typed accessor was used on a reply of another type.
	ErrUnexpectedType error = &sentinel{msg: "slotlane: unexpected reply type"}
)

// Error is the failure of a whole call: creating a client, or an execution as a whole
// (a timeout, cancellation, no node reachable). Code is the core's return code (a
// negative SL_E* value of slotlane.h).
type Error struct {
	Code  int    // the core's return code: SL_EINVAL, SL_EIO, SL_ETIMEOUT... (negative)
	Msg   string // the core's message (sl_client_errmsg), or the binding's
	cause error
}

func newError(code int, msg string, cause error) *Error {
	return &Error{Code: code, Msg: msg, cause: cause}
}

// Error returns "slotlane: <code's description>: <message>".
func (e *Error) Error() string {
	s := "slotlane: " + strerror(e.Code)
	if e.Msg != "" {
		s += ": " + e.Msg
	}
	if e.cause != nil {
		s += " (" + e.cause.Error() + ")"
	}
	return s
}

// Unwrap returns the sentinel that matches Code (ErrWatchMoved comes with ErrWatch, its
// parent in the error table: a transaction's retry loop takes both) and, when ctx caused
// the failure, ctx.Err().
func (e *Error) Unwrap() []error {
	var errs []error
	if s := sentinelOfCode(e.Code); s != nil {
		errs = append(errs, s)
		if s == ErrWatchMoved {
			errs = append(errs, ErrWatch) // errors.json: WatchMovedError's parent is WatchError
		}
	}
	if e.cause != nil {
		errs = append(errs, e.cause)
	}
	return errs
}

// ErrorKind tells who produced a command's error (the sl_err_kind of slotlane.h).
type ErrorKind uint8

// Error kinds of a *ResponseError.
const (
	ErrKindServer    ErrorKind = C.SL_ERR_SERVER    // the server's error reply (ERR, WRONGTYPE, MOVED...)
	ErrKindIO        ErrorKind = C.SL_ERR_IO        // the command's node failed (connect, write, read)
	ErrKindTimeout   ErrorKind = C.SL_ERR_TIMEOUT   // the execution's deadline passed before the reply
	ErrKindRedirects ErrorKind = C.SL_ERR_REDIRECTS // the redirect limit was reached
	ErrKindProtocol  ErrorKind = C.SL_ERR_PROTOCOL  // the node sent malformed RESP or exceeded a limit
	ErrKindCancelled ErrorKind = C.SL_ERR_CANCELLED // the execution was cancelled
	ErrKindCluster   ErrorKind = C.SL_ERR_CLUSTER   // no node owns the slot, or the core refused the command
	ErrKindArgument  ErrorKind = C.SL_ERR_ARGUMENT  // the client refused the command's arguments
)

var errKindNames = [...]string{"server", "io", "timeout", "redirects", "protocol", "cancelled", "cluster", "argument"}

// String returns the kind's name as the conformance cases spell it ("server", "io"...).
func (k ErrorKind) String() string {
	if int(k) < len(errKindNames) {
		return errKindNames[k]
	}
	return "unknown"
}

// ResponseError is the error of one command: the server's error reply (Kind ==
// ErrKindServer, Msg as the server sent it, e.g. "WRONGTYPE Operation against a key
// holding the wrong kind of value"), or a failure the core recorded for that command
// alone. It fails only its own command of a pipeline.
type ResponseError struct {
	Kind  ErrorKind // who failed the command: the server (ErrKindServer) or the core
	Msg   string    // the server's error text, or the core's message
	cause error
}

// Error returns the server's message for server errors, else "slotlane: <kind>: <msg>".
func (e *ResponseError) Error() string {
	if e.Kind == ErrKindServer {
		return e.Msg
	}
	return "slotlane: " + e.Kind.String() + ": " + e.Msg
}

// Prefix returns the first word of a server error ("ERR", "WRONGTYPE", "MOVED"...),
// or "" for errors of other kinds.
func (e *ResponseError) Prefix() string {
	if e.Kind != ErrKindServer {
		return ""
	}
	if i := strings.IndexByte(e.Msg, ' '); i >= 0 {
		return e.Msg[:i]
	}
	return e.Msg
}

// Unwrap returns the sentinel of the kind (ErrConnection for ErrKindIO, ErrTimeout,
// ErrRedirects, ErrProtocol, ErrCancelled, ErrCluster, ErrInvalid for ErrKindArgument;
// none for server errors) and, when ctx caused it, ctx.Err().
func (e *ResponseError) Unwrap() []error {
	var errs []error
	if s := sentinelOfKind(e.Kind); s != nil {
		errs = append(errs, s)
	}
	if e.cause != nil {
		errs = append(errs, e.cause)
	}
	return errs
}

// sentinelOfCode and sentinelOfKind: errors_gen.go (the table of bindings/spec/errors.json).

// argError is a bad argument found by the binding before anything was sent.
func argError(msg string) error {
	return &ResponseError{Kind: ErrKindArgument, Msg: msg}
}
