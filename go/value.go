package slotlane

// #include "slotlane.h"
import "C"

import (
	"fmt"
	"math"
	"strconv"
)

// Kind is the type of a reply (the sl_reply_type of slotlane.h).
type Kind uint8

// Reply kinds. RESP2 servers produce String, Status, Error, Integer, Nil and Array;
// the others come with RESP3 (Options.Protocol = 3).
const (
	KindString    Kind = C.SL_REPLY_STRING  // bulk string
	KindStatus    Kind = C.SL_REPLY_STATUS  // simple string, e.g. OK
	KindError     Kind = C.SL_REPLY_ERROR   // an error (nested in an aggregate; top-level errors are Result.Err)
	KindInteger   Kind = C.SL_REPLY_INTEGER // integer
	KindNil       Kind = C.SL_REPLY_NIL     // RESP2 null bulk or array, RESP3 null
	KindArray     Kind = C.SL_REPLY_ARRAY   // array
	KindMap       Kind = C.SL_REPLY_MAP     // map: Elems holds key, value, key, value...
	KindSet       Kind = C.SL_REPLY_SET     // set
	KindDouble    Kind = C.SL_REPLY_DOUBLE  // double
	KindBool      Kind = C.SL_REPLY_BOOL    // boolean
	KindBigNumber Kind = C.SL_REPLY_BIGNUM  // big number: its decimal digits
	KindVerbatim  Kind = C.SL_REPLY_VERB    // verbatim string: its text; Format gives the 3-letter format
	KindPush      Kind = C.SL_REPLY_PUSH    // a RESP3 push that answered a command
)

var kindNames = [...]string{"invalid", "string", "status", "error", "integer", "nil", "array", "map",
	"set", "double", "bool", "bignum", "verb", "push"}

// String returns the kind's name as the conformance cases spell it ("string", "map"...).
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Value is one reply, or one element of an aggregate reply. The zero Value is invalid
// (Kind 0). A Value is immutable and safe to keep: its bytes are Go memory shared only
// with the other values of the same execution.
type Value struct {
	kind  Kind
	flags uint8  // the error kind of a KindError value
	num   int64  // integer, bool, the bits of a double, the verbatim format
	b     []byte // string-like data
	elems []Value
}

// Kind returns the reply's type.
func (v Value) Kind() Kind { return v.kind }

// IsNil reports whether the reply is nil.
func (v Value) IsNil() bool { return v.kind == KindNil }

func (v Value) stringLike() bool {
	switch v.kind {
	case KindString, KindStatus, KindError, KindDouble, KindBigNumber, KindVerbatim:
		return true
	}
	return false
}

// Bytes returns the bytes of a string-like reply (string, status, error message,
// double's text, big number, verbatim text) and nil for other kinds. The slice is
// shared with nothing else: appending to it never overwrites another value.
func (v Value) Bytes() []byte {
	if v.stringLike() {
		return v.b
	}
	return nil
}

// Text returns the reply as text: the bytes of a string-like reply, the decimal form
// of an integer, "true"/"false" for a bool, "" for nil and aggregates.
func (v Value) Text() string {
	switch v.kind {
	case KindInteger:
		return strconv.FormatInt(v.num, 10)
	case KindBool:
		return strconv.FormatBool(v.num != 0)
	}
	return string(v.Bytes())
}

// Int64 returns an integer reply, a bool as 0 or 1, or a string reply parsed as a
// base-10 integer (Redis answers numbers as bulk strings for HGET, GET...). Other
// kinds give ErrUnexpectedType; nil gives ErrNil.
func (v Value) Int64() (int64, error) {
	switch v.kind {
	case KindInteger, KindBool:
		return v.num, nil
	case KindString, KindStatus, KindBigNumber:
		n, err := strconv.ParseInt(string(v.b), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%w: %s is not an integer: %v", ErrUnexpectedType, v.kind, err)
		}
		return n, nil
	case KindNil:
		return 0, ErrNil
	}
	return 0, v.typeErr("an integer")
}

// Float64 returns a double reply, an integer as a float64, or a string reply parsed as
// a float. Other kinds give ErrUnexpectedType; nil gives ErrNil.
func (v Value) Float64() (float64, error) {
	switch v.kind {
	case KindDouble:
		return math.Float64frombits(uint64(v.num)), nil
	case KindInteger:
		return float64(v.num), nil
	case KindString, KindStatus, KindBigNumber:
		f, err := strconv.ParseFloat(string(v.b), 64)
		if err != nil {
			return 0, fmt.Errorf("%w: %s is not a number: %v", ErrUnexpectedType, v.kind, err)
		}
		return f, nil
	case KindNil:
		return 0, ErrNil
	}
	return 0, v.typeErr("a number")
}

// Bool returns a bool reply, or an integer reply != 0. Other kinds give
// ErrUnexpectedType; nil gives ErrNil.
func (v Value) Bool() (bool, error) {
	switch v.kind {
	case KindBool, KindInteger:
		return v.num != 0, nil
	case KindNil:
		return false, ErrNil
	}
	return false, v.typeErr("a bool")
}

// Elems returns the children of an aggregate (array, set, push; a map's keys and
// values alternating), nil for other kinds.
func (v Value) Elems() []Value { return v.elems }

// Len returns the number of children of an aggregate, or the length in bytes of a
// string-like reply.
func (v Value) Len() int {
	if v.elems != nil {
		return len(v.elems)
	}
	return len(v.b)
}

// Format returns the 3-letter format of a verbatim string ("txt", "mkd"), else "".
func (v Value) Format() string {
	if v.kind != KindVerbatim {
		return ""
	}
	return string([]byte{byte(v.num), byte(v.num >> 8), byte(v.num >> 16)})
}

// Err returns the error of a KindError value (an error nested in an aggregate, such as
// one command's error in an EXEC reply) as a *ResponseError, else nil.
func (v Value) Err() error {
	if v.kind != KindError {
		return nil
	}
	return v.responseError()
}

func (v Value) responseError() *ResponseError {
	return &ResponseError{Kind: ErrorKind(v.flags), Msg: string(v.b)}
}

// Interface converts the value to plain Go values: string for string-like replies,
// int64, float64, bool, nil, []any for arrays, sets and pushes, map[string]any for
// maps (keys by their Text), and *ResponseError for errors.
func (v Value) Interface() any {
	switch v.kind {
	case KindString, KindStatus, KindBigNumber, KindVerbatim:
		return string(v.b)
	case KindInteger:
		return v.num
	case KindDouble:
		return math.Float64frombits(uint64(v.num))
	case KindBool:
		return v.num != 0
	case KindNil:
		return nil
	case KindError:
		return v.responseError()
	case KindMap:
		m := make(map[string]any, len(v.elems)/2)
		for i := 0; i+1 < len(v.elems); i += 2 {
			m[v.elems[i].Text()] = v.elems[i+1].Interface()
		}
		return m
	case KindArray, KindSet, KindPush:
		s := make([]any, len(v.elems))
		for i, e := range v.elems {
			s[i] = e.Interface()
		}
		return s
	}
	return nil
}

// String formats the value for people (fmt's %v): kind and content.
func (v Value) String() string {
	switch v.kind {
	case 0:
		return "invalid"
	case KindNil:
		return "nil"
	case KindArray, KindMap, KindSet, KindPush:
		return fmt.Sprintf("%s%v", v.kind, v.elems)
	case KindError:
		return fmt.Sprintf("error(%s %q)", ErrorKind(v.flags), v.b)
	case KindInteger, KindBool, KindDouble:
		if v.kind == KindDouble {
			return strconv.FormatFloat(math.Float64frombits(uint64(v.num)), 'g', -1, 64)
		}
		return v.Text()
	}
	return strconv.Quote(string(v.b))
}

func (v Value) typeErr(want string) error {
	return fmt.Errorf("%w: the reply is %s, not %s", ErrUnexpectedType, v.kind, want)
}

// Result is the outcome of one command: its Value, or its Err (a *ResponseError for a
// failed command, or the execution's error when the command could not run). A nil
// reply is not an error: Value.IsNil() is true and the typed accessors return ErrNil.
type Result struct {
	Value Value // the reply (the zero Value when Err is set)
	Err   error // the command's *ResponseError, or the execution's error; nil otherwise
}

// Bytes returns the bytes of a string-like reply. Errors: Err, ErrNil, ErrUnexpectedType.
func (r Result) Bytes() ([]byte, error) {
	if r.Err != nil {
		return nil, r.Err
	}
	if r.Value.kind == KindNil {
		return nil, ErrNil
	}
	if !r.Value.stringLike() {
		return nil, r.Value.typeErr("a string")
	}
	return r.Value.b, nil
}

// Text returns the reply as a string (string-like replies; integers in decimal).
// Errors: Err, ErrNil, ErrUnexpectedType for aggregates.
func (r Result) Text() (string, error) {
	if r.Err != nil {
		return "", r.Err
	}
	switch r.Value.kind {
	case KindNil:
		return "", ErrNil
	case KindArray, KindMap, KindSet, KindPush:
		return "", r.Value.typeErr("a string")
	}
	return r.Value.Text(), nil
}

// Int64 returns the reply as an integer (see Value.Int64). Errors: Err, ErrNil, ErrUnexpectedType.
func (r Result) Int64() (int64, error) {
	if r.Err != nil {
		return 0, r.Err
	}
	return r.Value.Int64()
}

// Float64 returns the reply as a float64 (see Value.Float64).
func (r Result) Float64() (float64, error) {
	if r.Err != nil {
		return 0, r.Err
	}
	return r.Value.Float64()
}

// Bool returns the reply as a bool (see Value.Bool).
func (r Result) Bool() (bool, error) {
	if r.Err != nil {
		return false, r.Err
	}
	return r.Value.Bool()
}

// Slice returns the children of an aggregate reply. Errors: Err, ErrNil, ErrUnexpectedType.
func (r Result) Slice() ([]Value, error) {
	if r.Err != nil {
		return nil, r.Err
	}
	switch r.Value.kind {
	case KindArray, KindMap, KindSet, KindPush:
		return r.Value.elems, nil
	case KindNil:
		return nil, ErrNil
	}
	return nil, r.Value.typeErr("an aggregate")
}

// Strings returns the children of an aggregate reply as text (nil elements as "").
func (r Result) Strings() ([]string, error) {
	elems, err := r.Slice()
	if err != nil {
		return nil, err
	}
	out := make([]string, len(elems))
	for i, e := range elems {
		if e.kind == KindError {
			return nil, e.Err()
		}
		out[i] = e.Text()
	}
	return out, nil
}

// StringMap returns a map reply (RESP3), or an array of alternating keys and values
// (RESP2 HGETALL, CONFIG GET), as a map of text.
func (r Result) StringMap() (map[string]string, error) {
	elems, err := r.Slice()
	if err != nil {
		return nil, err
	}
	if len(elems)%2 != 0 {
		return nil, fmt.Errorf("%w: %d elements are not key-value pairs", ErrUnexpectedType, len(elems))
	}
	m := make(map[string]string, len(elems)/2)
	for i := 0; i < len(elems); i += 2 {
		m[elems[i].Text()] = elems[i+1].Text()
	}
	return m, nil
}

// Interface returns Value.Interface(), or the error.
func (r Result) Interface() (any, error) {
	if r.Err != nil {
		return nil, r.Err
	}
	return r.Value.Interface(), nil
}
