package slotlane

import (
	"context"
	"fmt"
	"time"
)

// Typed helpers for the most common commands. Each one is Do with its arguments and a
// typed accessor; anything else goes through Do. Routing (and splitting multi-key
// commands such as DEL, EXISTS, MGET and MSET across slots) is the core's.

// NoExpiry is what TTL returns for a key that exists and has no expiry.
const NoExpiry time.Duration = -1

// Ping sends PING and checks the PONG.
func (c *Client) Ping(ctx context.Context) error {
	s, err := c.Do(ctx, "PING").Text()
	if err != nil {
		return err
	}
	if s != "PONG" {
		return fmt.Errorf("%w: PING answered %q", ErrUnexpectedType, s)
	}
	return nil
}

// Get returns the value of key, or ErrNil when the key does not exist.
func (c *Client) Get(ctx context.Context, key string) (string, error) {
	return c.Do(ctx, "GET", key).Text()
}

// Set sets key to value (string, []byte, number, bool), expiring after ttl when ttl >
// 0 (millisecond precision).
func (c *Client) Set(ctx context.Context, key string, value any, ttl time.Duration) error {
	args, err := setArgs(key, value, ttl)
	if err != nil {
		return err
	}
	return okStatus(c.Do(ctx, args...))
}

// SetNX sets key to value only if key does not exist, and reports whether it did.
func (c *Client) SetNX(ctx context.Context, key string, value any, ttl time.Duration) (bool, error) {
	args, err := setArgs(key, value, ttl)
	if err != nil {
		return false, err
	}
	r := c.Do(ctx, append(args, "NX")...)
	if r.Err == nil && r.Value.IsNil() {
		return false, nil
	}
	if err := okStatus(r); err != nil {
		return false, err
	}
	return true, nil
}

func setArgs(key string, value any, ttl time.Duration) ([]any, error) {
	if ttl < 0 {
		return nil, fmt.Errorf("%w: SET with a negative ttl", ErrInvalid)
	}
	args := []any{"SET", key, value}
	if ttl > 0 {
		args = append(args, "PX", int64((ttl+time.Millisecond-1)/time.Millisecond))
	}
	return args, nil
}

func okStatus(r Result) error {
	s, err := r.Text()
	if err != nil {
		return err
	}
	if s != "OK" {
		return fmt.Errorf("%w: expected OK, got %q", ErrUnexpectedType, s)
	}
	return nil
}

func keyArgs(name string, keys []string) []any {
	args := make([]any, 0, 1+len(keys))
	args = append(args, name)
	for _, k := range keys {
		args = append(args, k)
	}
	return args
}

// Del deletes keys and returns how many existed.
func (c *Client) Del(ctx context.Context, keys ...string) (int64, error) {
	if len(keys) == 0 {
		return 0, fmt.Errorf("%w: DEL needs at least one key", ErrInvalid)
	}
	return c.Do(ctx, keyArgs("DEL", keys)...).Int64()
}

// Exists returns how many of keys exist (a key given twice counts twice).
func (c *Client) Exists(ctx context.Context, keys ...string) (int64, error) {
	if len(keys) == 0 {
		return 0, fmt.Errorf("%w: EXISTS needs at least one key", ErrInvalid)
	}
	return c.Do(ctx, keyArgs("EXISTS", keys)...).Int64()
}

// Incr increments the integer at key by one and returns the new value.
func (c *Client) Incr(ctx context.Context, key string) (int64, error) {
	return c.Do(ctx, "INCR", key).Int64()
}

// IncrBy increments the integer at key by n and returns the new value.
func (c *Client) IncrBy(ctx context.Context, key string, n int64) (int64, error) {
	return c.Do(ctx, "INCRBY", key, n).Int64()
}

// Expire sets key to expire after ttl (millisecond precision) and reports whether the
// key exists.
func (c *Client) Expire(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	if ttl <= 0 {
		return false, fmt.Errorf("%w: EXPIRE needs a positive ttl", ErrInvalid)
	}
	return c.Do(ctx, "PEXPIRE", key, int64((ttl+time.Millisecond-1)/time.Millisecond)).Bool()
}

// TTL returns the time key has left to live (millisecond precision), NoExpiry when it
// has no expiry, and ErrNil when it does not exist.
func (c *Client) TTL(ctx context.Context, key string) (time.Duration, error) {
	ms, err := c.Do(ctx, "PTTL", key).Int64()
	switch {
	case err != nil:
		return 0, err
	case ms == -2:
		return 0, ErrNil
	case ms == -1:
		return NoExpiry, nil
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// MGet returns the values of keys in order; a missing key is a Value with IsNil().
// In cluster mode the core splits the command per slot and merges the replies.
func (c *Client) MGet(ctx context.Context, keys ...string) ([]Value, error) {
	if len(keys) == 0 {
		return nil, fmt.Errorf("%w: MGET needs at least one key", ErrInvalid)
	}
	return c.Do(ctx, keyArgs("MGET", keys)...).Slice()
}

// MSet sets keys to values, given as alternating key, value arguments.
func (c *Client) MSet(ctx context.Context, keyValues ...any) error {
	if len(keyValues) == 0 || len(keyValues)%2 != 0 {
		return fmt.Errorf("%w: MSET needs key, value pairs (got %d arguments)", ErrInvalid, len(keyValues))
	}
	return okStatus(c.Do(ctx, append([]any{"MSET"}, keyValues...)...))
}

// HSet sets fields of the hash at key, given as alternating field, value arguments,
// and returns how many fields were added.
func (c *Client) HSet(ctx context.Context, key string, fieldValues ...any) (int64, error) {
	if len(fieldValues) == 0 || len(fieldValues)%2 != 0 {
		return 0, fmt.Errorf("%w: HSET needs field, value pairs (got %d arguments)", ErrInvalid, len(fieldValues))
	}
	return c.Do(ctx, append([]any{"HSET", key}, fieldValues...)...).Int64()
}

// HGet returns a field of the hash at key, or ErrNil.
func (c *Client) HGet(ctx context.Context, key, field string) (string, error) {
	return c.Do(ctx, "HGET", key, field).Text()
}

// HGetAll returns every field and value of the hash at key (empty when it does not exist).
func (c *Client) HGetAll(ctx context.Context, key string) (map[string]string, error) {
	return c.Do(ctx, "HGETALL", key).StringMap()
}

// LPush prepends values to the list at key and returns its new length.
func (c *Client) LPush(ctx context.Context, key string, values ...any) (int64, error) {
	if len(values) == 0 {
		return 0, fmt.Errorf("%w: LPUSH needs at least one value", ErrInvalid)
	}
	return c.Do(ctx, append([]any{"LPUSH", key}, values...)...).Int64()
}

// RPush appends values to the list at key and returns its new length.
func (c *Client) RPush(ctx context.Context, key string, values ...any) (int64, error) {
	if len(values) == 0 {
		return 0, fmt.Errorf("%w: RPUSH needs at least one value", ErrInvalid)
	}
	return c.Do(ctx, append([]any{"RPUSH", key}, values...)...).Int64()
}

// LRange returns the elements start..stop (inclusive; negative from the end) of the
// list at key.
func (c *Client) LRange(ctx context.Context, key string, start, stop int64) ([]string, error) {
	return c.Do(ctx, "LRANGE", key, start, stop).Strings()
}

// SAdd adds members to the set at key and returns how many were new.
func (c *Client) SAdd(ctx context.Context, key string, members ...any) (int64, error) {
	if len(members) == 0 {
		return 0, fmt.Errorf("%w: SADD needs at least one member", ErrInvalid)
	}
	return c.Do(ctx, append([]any{"SADD", key}, members...)...).Int64()
}

// SMembers returns the members of the set at key, in the server's order.
func (c *Client) SMembers(ctx context.Context, key string) ([]string, error) {
	return c.Do(ctx, "SMEMBERS", key).Strings()
}

// FlushAll deletes every key of every primary (FLUSHALL routed to all primaries in
// cluster mode).
func (c *Client) FlushAll(ctx context.Context) error {
	if c.mode == ModeCluster {
		return okStatus(c.DoRoute(ctx, RouteAllPrimaries(), "FLUSHALL"))
	}
	return okStatus(c.Do(ctx, "FLUSHALL"))
}
