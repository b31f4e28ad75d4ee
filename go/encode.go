package slotlane

import (
	"encoding"
	"fmt"
	"strconv"
	"time"
)

// The binding encodes commands as RESP arrays of bulk strings in Go (DESIGN.md, "The
// batch ABI"); the core parses them to find the keys. Nothing else about a command is
// interpreted here: routing, splitting and redirects are the core's.

func appendArrayHeader(buf []byte, n int) []byte {
	buf = append(buf, '*')
	buf = appendUint(buf, uint64(n))
	return append(buf, '\r', '\n')
}

func appendUint(buf []byte, n uint64) []byte {
	if n < 10 {
		return append(buf, byte('0'+n))
	}
	if n < 100 {
		return append(buf, byte('0'+n/10), byte('0'+n%10))
	}
	return strconv.AppendUint(buf, n, 10)
}

func appendBulkString(buf []byte, s string) []byte {
	buf = append(buf, '$')
	buf = appendUint(buf, uint64(len(s)))
	buf = append(buf, '\r', '\n')
	buf = append(buf, s...)
	return append(buf, '\r', '\n')
}

func appendBulkBytes(buf []byte, b []byte) []byte {
	buf = append(buf, '$')
	buf = appendUint(buf, uint64(len(b)))
	buf = append(buf, '\r', '\n')
	buf = append(buf, b...)
	return append(buf, '\r', '\n')
}

// appendArg encodes one argument as a bulk string. Accepted: string, []byte, integer
// and float types, encoding.BinaryMarshaler and fmt.Stringer. Anything else is an error:
// nil, a bool (bindings/spec/README.md: never a key, value or number), and time.Duration
// (its unit would be a guess).
func appendArg(buf []byte, arg any) ([]byte, error) {
	var tmp [32]byte
	switch a := arg.(type) {
	case string:
		return appendBulkString(buf, a), nil
	case []byte:
		if a == nil {
			return buf, fmt.Errorf("a nil []byte argument")
		}
		return appendBulkBytes(buf, a), nil
	case int:
		return appendBulkBytes(buf, strconv.AppendInt(tmp[:0], int64(a), 10)), nil
	case int64:
		return appendBulkBytes(buf, strconv.AppendInt(tmp[:0], a, 10)), nil
	case int32:
		return appendBulkBytes(buf, strconv.AppendInt(tmp[:0], int64(a), 10)), nil
	case int16:
		return appendBulkBytes(buf, strconv.AppendInt(tmp[:0], int64(a), 10)), nil
	case int8:
		return appendBulkBytes(buf, strconv.AppendInt(tmp[:0], int64(a), 10)), nil
	case uint:
		return appendBulkBytes(buf, strconv.AppendUint(tmp[:0], uint64(a), 10)), nil
	case uint64:
		return appendBulkBytes(buf, strconv.AppendUint(tmp[:0], a, 10)), nil
	case uint32:
		return appendBulkBytes(buf, strconv.AppendUint(tmp[:0], uint64(a), 10)), nil
	case uint16:
		return appendBulkBytes(buf, strconv.AppendUint(tmp[:0], uint64(a), 10)), nil
	case uint8:
		return appendBulkBytes(buf, strconv.AppendUint(tmp[:0], uint64(a), 10)), nil
	case float64:
		return appendBulkBytes(buf, strconv.AppendFloat(tmp[:0], a, 'f', -1, 64)), nil
	case float32:
		return appendBulkBytes(buf, strconv.AppendFloat(tmp[:0], float64(a), 'f', -1, 32)), nil
	case bool:
		// the spec's argument rules: a bool is never a key, value or number (flags are options)
		return buf, fmt.Errorf("a bool argument (a bool is never a key, value or number; flags are options)")
	case nil:
		return buf, fmt.Errorf("a nil argument")
	case time.Duration:
		return buf, fmt.Errorf("a time.Duration argument (give seconds or milliseconds as an integer)")
	case encoding.BinaryMarshaler:
		b, err := a.MarshalBinary()
		if err != nil {
			return buf, fmt.Errorf("MarshalBinary of a %T argument: %v", arg, err)
		}
		return appendBulkBytes(buf, b), nil
	case fmt.Stringer:
		return appendBulkString(buf, a.String()), nil
	}
	return buf, fmt.Errorf("an argument of type %T (use string, []byte or a number)", arg)
}

// appendCommand encodes one command; on error buf is returned unchanged.
func appendCommand(buf []byte, args []any) ([]byte, error) {
	if len(args) == 0 {
		return buf, argError("a command needs at least its name")
	}
	start := len(buf)
	buf = appendArrayHeader(buf, len(args))
	var err error
	for i, a := range args {
		if buf, err = appendArg(buf, a); err != nil {
			return buf[:start], argError(fmt.Sprintf("argument %d: %v", i, err))
		}
	}
	return buf, nil
}
