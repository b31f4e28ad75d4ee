package slotlane

import (
	"fmt"
	"strconv"
)

// The spec's reply types as Go values (bindings/spec/README.md, "Reply types and the one
// normalisation of RESP2 and RESP3"), used by the generated methods of commands_gen.go.
// Each shaper turns a decoded Value into its type's Go value; nothing here knows a command.

// Pair is one element of a pairs<K,V> reply (ZRANGE WITHSCORES: member and score) and of a
// tuple-list parameter of two fields (HSET's field and value, ZADD's score and member).
type Pair[K, V any] struct {
	Key   K
	Value V
}

// Tuple2 is a tuple<A,B> reply (SCAN: the cursor and the keys; GEOPOS: longitude, latitude).
type Tuple2[A, B any] struct {
	First  A
	Second B
}

// Tuple3 is an element of a tuple-list parameter of three fields (GEOADD's longitude,
// latitude and member).
type Tuple3[A, B, C any] struct {
	A A
	B B
	C C
}

// Reply is a typed pipeline command: Result gives its shaped reply once the pipeline's Exec
// has run it (until the next Exec of that pipeline).
type Reply[T any] struct {
	p     *Pipeline
	i     int
	gen   int
	shape func(Value) (T, error)
	err   error // the command was refused while queueing
}

var errNotExecuted = fmt.Errorf("%w: the pipeline has not run this command (Exec first; a Reply is valid until the next Exec)", ErrInvalid)

// Result returns the command's reply as its type, or its error (a *ResponseError, the
// execution's error, ErrInvalid for an argument refused while queueing).
func (r Reply[T]) Result() (T, error) {
	var zero T
	if r.p == nil {
		return zero, errNotExecuted
	}
	if r.gen != r.p.lastGen || r.i >= len(r.p.last) {
		return zero, errNotExecuted
	}
	return shapeResult(r.p.last[r.i], r.shape)
}

// queue adds a typed command's arguments to the pipeline (or its refusal).
func queue[T any](p *Pipeline, args []any, err error, shape func(Value) (T, error)) Reply[T] {
	if err != nil {
		p.bad = append(p.bad, badCommand{p.n, err})
		p.n++
	} else {
		p.Do(args...)
	}
	return Reply[T]{p: p, i: p.n - 1, gen: p.gen, shape: shape}
}

func shapeResult[T any](r Result, f func(Value) (T, error)) (T, error) {
	if r.Err != nil {
		var zero T
		return zero, r.Err
	}
	return f(r.Value)
}

func unexpected(v Value, want string) error {
	return fmt.Errorf("%w: %s reply for %s", ErrUnexpectedType, v.kind, want)
}

func shapeOK(v Value) (bool, error) {
	if (v.kind == KindStatus || v.kind == KindString) && string(v.b) == "OK" {
		return true, nil
	}
	return false, unexpected(v, "ok")
}

func shapeOKNil(v Value) (bool, error) {
	if v.kind == KindNil {
		return false, nil
	}
	return shapeOK(v)
}

func shapeStatus(v Value) (string, error) {
	if v.kind == KindStatus || v.kind == KindString {
		return string(v.b), nil
	}
	return "", unexpected(v, "status")
}

func shapeString(v Value) (string, error) {
	switch v.kind {
	case KindString, KindVerbatim, KindStatus:
		return string(v.b), nil
	}
	return "", unexpected(v, "string")
}

func shapeInt(v Value) (int64, error) {
	if v.kind == KindInteger {
		return v.num, nil
	}
	return 0, unexpected(v, "int")
}

func shapeBool(v Value) (bool, error) {
	if (v.kind == KindInteger && (v.num == 0 || v.num == 1)) || v.kind == KindBool {
		return v.num != 0, nil
	}
	return false, unexpected(v, "bool")
}

func shapeDouble(v Value) (float64, error) {
	switch v.kind {
	case KindDouble, KindInteger, KindString:
		return v.Float64()
	}
	return 0, unexpected(v, "double")
}

func shapeCursor(v Value) (uint64, error) {
	if v.kind == KindString {
		n, err := strconv.ParseUint(string(v.b), 10, 64)
		if err == nil {
			return n, nil
		}
	}
	return 0, unexpected(v, "cursor")
}

func shapeAny(v Value) (Value, error) { return v, nil }

// optional scalars: nil for a nil reply
func opt[T any](f func(Value) (T, error)) func(Value) (*T, error) {
	return func(v Value) (*T, error) {
		if v.kind == KindNil {
			return nil, nil
		}
		x, err := f(v)
		if err != nil {
			return nil, err
		}
		return &x, nil
	}
}

var (
	shapeOptStatus = opt(shapeStatus)
	shapeOptString = opt(shapeString)
	shapeOptInt    = opt(shapeInt)
	shapeOptBool   = opt(shapeBool)
	shapeOptDouble = opt(shapeDouble)
	shapeOptCursor = opt(shapeCursor)
)

func shapeOpt[T any](f func(Value) (T, error)) func(Value) (*T, error) { return opt(f) }

func shapeArray[T any](f func(Value) (T, error)) func(Value) ([]T, error) {
	return func(v Value) ([]T, error) {
		switch v.kind {
		case KindNil:
			return nil, nil
		case KindArray, KindSet, KindPush:
		default:
			return nil, unexpected(v, "array")
		}
		out := make([]T, len(v.elems))
		for i, e := range v.elems {
			x, err := f(e)
			if err != nil {
				return nil, err
			}
			out[i] = x
		}
		return out, nil
	}
}

// entries: a map or pairs reply in any layout -- a RESP3 map, a RESP2 flat array k, v, k,
// v, or an array of [k, v] arrays (told apart by the first element).
func entries(v Value) ([]Value, error) {
	switch v.kind {
	case KindMap:
		return v.elems, nil
	case KindArray:
		if len(v.elems) > 0 && v.elems[0].kind == KindArray {
			flat := make([]Value, 0, 2*len(v.elems))
			for _, p := range v.elems {
				if p.kind != KindArray || len(p.elems) != 2 {
					return nil, unexpected(p, "a [key, value] pair")
				}
				flat = append(flat, p.elems[0], p.elems[1])
			}
			return flat, nil
		}
		if len(v.elems)%2 != 0 {
			return nil, fmt.Errorf("%w: an odd number of elements for a map", ErrUnexpectedType)
		}
		return v.elems, nil
	}
	return nil, unexpected(v, "map")
}

func shapeMap[K comparable, V any](fk func(Value) (K, error), fv func(Value) (V, error)) func(Value) (map[K]V, error) {
	return func(v Value) (map[K]V, error) {
		if v.kind == KindNil {
			return nil, nil
		}
		flat, err := entries(v)
		if err != nil {
			return nil, err
		}
		out := make(map[K]V, len(flat)/2)
		for i := 0; i+1 < len(flat); i += 2 {
			k, err := fk(flat[i])
			if err != nil {
				return nil, err
			}
			x, err := fv(flat[i+1])
			if err != nil {
				return nil, err
			}
			out[k] = x
		}
		return out, nil
	}
}

func shapePairs[K, V any](fk func(Value) (K, error), fv func(Value) (V, error)) func(Value) ([]Pair[K, V], error) {
	return func(v Value) ([]Pair[K, V], error) {
		if v.kind == KindNil {
			return nil, nil
		}
		flat, err := entries(v)
		if err != nil {
			return nil, err
		}
		out := make([]Pair[K, V], 0, len(flat)/2)
		for i := 0; i+1 < len(flat); i += 2 {
			k, err := fk(flat[i])
			if err != nil {
				return nil, err
			}
			x, err := fv(flat[i+1])
			if err != nil {
				return nil, err
			}
			out = append(out, Pair[K, V]{k, x})
		}
		return out, nil
	}
}

func shapeTuple2[A, B any](fa func(Value) (A, error), fb func(Value) (B, error)) func(Value) (Tuple2[A, B], error) {
	return func(v Value) (Tuple2[A, B], error) {
		var t Tuple2[A, B]
		if v.kind != KindArray || len(v.elems) != 2 {
			return t, unexpected(v, "a 2-tuple")
		}
		a, err := fa(v.elems[0])
		if err != nil {
			return t, err
		}
		b, err := fb(v.elems[1])
		if err != nil {
			return t, err
		}
		return Tuple2[A, B]{a, b}, nil
	}
}

// Int, Float and Str make the pointers of the options structs' optional scalars:
// &SetOptions{Ex: slotlane.Int(60)} (a nil pointer leaves the option out).
func Int(v int64) *int64 { return &v }

// Float: see Int.
func Float(v float64) *float64 { return &v }

// Str: see Int.
func Str(v string) *string { return &v }
