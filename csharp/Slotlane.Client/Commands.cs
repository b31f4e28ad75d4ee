using System;
using System.Collections.Generic;
using System.Text;

namespace Slotlane
{
    // Typed helpers for the common commands. They only build arguments and convert replies;
    // routing and splitting (DEL/EXISTS/MGET/MSET over slots) are the core's.
    public sealed partial class SlotlaneClient
    {
        private static string Str(object r)
        {
            if (r == null) return null;
            var b = r as byte[];
            if (b != null) return Encoding.UTF8.GetString(b);
            var s = r as string;
            if (s != null) return s;
            throw new SlotlaneProtocolException("expected a string reply, got " + r.GetType().Name);
        }

        private static long Int(object r)
        {
            if (r is long) return (long)r;
            throw new SlotlaneProtocolException("expected an integer reply, got " + (r == null ? "nil" : r.GetType().Name));
        }

        private static object[] Arr(object r)
        {
            var a = r as object[];
            if (a != null) return a;
            throw new SlotlaneProtocolException("expected an array reply, got " + (r == null ? "nil" : r.GetType().Name));
        }

        private static void Key(string key, string name = "key")
        {
            if (key == null) throw new ArgumentNullException(name);
        }

        private static object[] KeysCommand(string cmd, string[] keys)
        {
            if (keys == null) throw new ArgumentNullException(nameof(keys));
            if (keys.Length == 0) throw new ArgumentException(cmd + " needs at least one key", nameof(keys));
            var args = new object[keys.Length + 1];
            args[0] = cmd;
            for (int i = 0; i < keys.Length; i++)
            {
                if (keys[i] == null) throw new ArgumentNullException(nameof(keys), "key " + i + " is null");
                args[i + 1] = keys[i];
            }
            return args;
        }

        /// <summary>PING: the server's answer ("PONG").</summary>
        /// <returns>"PONG".</returns>
        public string Ping() { return Str(Execute("PING")); }

        /// <summary>GET as UTF-8 text.</summary>
        /// <param name="key">The key.</param>
        /// <returns>The value, or null when the key does not exist.</returns>
        public string Get(string key) { Key(key); return Str(Execute("GET", key)); }

        /// <summary>GET as bytes.</summary>
        /// <param name="key">The key.</param>
        /// <returns>The value, or null when the key does not exist.</returns>
        public byte[] GetBytes(string key) { Key(key); return (byte[])Execute("GET", key); }

        /// <summary>SET key value [PX ms] [NX|XX].</summary>
        /// <param name="key">The key.</param>
        /// <param name="value">A string, byte array or number.</param>
        /// <param name="expiry">Time to live (at least 1 ms), or null for none.</param>
        /// <param name="when">Always, only if absent (NX) or only if present (XX).</param>
        /// <returns>True when the value was set (false when NX/XX prevented it).</returns>
        public bool Set(string key, object value, TimeSpan? expiry = null, SetWhen when = SetWhen.Always)
        {
            Key(key);
            if (value == null) throw new ArgumentNullException(nameof(value));
            var args = new List<object>(6) { "SET", key, value };
            if (expiry.HasValue)
            {
                if (expiry.Value < TimeSpan.FromMilliseconds(1)) throw new ArgumentOutOfRangeException(nameof(expiry), expiry, "expiry must be at least 1 ms");
                args.Add("PX");
                args.Add((long)Math.Ceiling(expiry.Value.TotalMilliseconds));
            }
            if (when == SetWhen.NotExists) args.Add("NX");
            else if (when == SetWhen.Exists) args.Add("XX");
            else if (when != SetWhen.Always) throw new ArgumentOutOfRangeException(nameof(when), when, "not a SetWhen");
            return Execute(args.ToArray()) != null;
        }

        /// <summary>DEL: deletes keys (over several slots the core splits the command and sums).</summary>
        /// <param name="keys">One or more keys.</param>
        /// <returns>The number of keys deleted.</returns>
        public long Del(params string[] keys) { return Int(Execute(KeysCommand("DEL", keys))); }

        /// <summary>EXISTS: how many of the keys exist.</summary>
        /// <param name="keys">One or more keys.</param>
        /// <returns>The count (a key given twice counts twice).</returns>
        public long Exists(params string[] keys) { return Int(Execute(KeysCommand("EXISTS", keys))); }

        /// <summary>INCRBY key by (INCR when by is 1).</summary>
        /// <param name="key">The key.</param>
        /// <param name="by">The increment.</param>
        /// <returns>The new value.</returns>
        public long Incr(string key, long by = 1) { Key(key); return Int(by == 1 ? Execute("INCR", key) : Execute("INCRBY", key, by)); }

        /// <summary>PEXPIRE: sets a key's time to live.</summary>
        /// <param name="key">The key.</param>
        /// <param name="ttl">At least 1 ms.</param>
        /// <returns>True when the key exists and the timeout was set.</returns>
        public bool Expire(string key, TimeSpan ttl)
        {
            Key(key);
            if (ttl < TimeSpan.FromMilliseconds(1)) throw new ArgumentOutOfRangeException(nameof(ttl), ttl, "ttl must be at least 1 ms");
            return Int(Execute("PEXPIRE", key, (long)Math.Ceiling(ttl.TotalMilliseconds))) == 1;
        }

        /// <summary>PTTL: a key's remaining time to live.</summary>
        /// <param name="key">The key.</param>
        /// <returns>The time left, or null when the key has no expiry or does not exist.</returns>
        public TimeSpan? Ttl(string key)
        {
            Key(key);
            long ms = Int(Execute("PTTL", key));
            return ms < 0 ? (TimeSpan?)null : TimeSpan.FromMilliseconds(ms);
        }

        /// <summary>MGET as UTF-8 text (over several slots the core splits it and keeps the key order).</summary>
        /// <param name="keys">One or more keys.</param>
        /// <returns>One value per key, null where absent.</returns>
        public string[] MGet(params string[] keys)
        {
            object[] a = Arr(Execute(KeysCommand("MGET", keys)));
            var r = new string[a.Length];
            for (int i = 0; i < a.Length; i++) r[i] = Str(a[i]);
            return r;
        }

        /// <summary>MSET (over several slots the core splits it; not atomic across slots).</summary>
        /// <param name="pairs">Keys and values.</param>
        public void MSet(IEnumerable<KeyValuePair<string, object>> pairs)
        {
            if (pairs == null) throw new ArgumentNullException(nameof(pairs));
            var args = new List<object> { "MSET" };
            foreach (var kv in pairs)
            {
                if (kv.Key == null) throw new ArgumentNullException(nameof(pairs), "a key is null");
                if (kv.Value == null) throw new ArgumentNullException(nameof(pairs), "the value of \"" + kv.Key + "\" is null");
                args.Add(kv.Key);
                args.Add(kv.Value);
            }
            if (args.Count == 1) throw new ArgumentException("MSET needs at least one key", nameof(pairs));
            Execute(args.ToArray());
        }

        /// <summary>HSET key field value.</summary>
        /// <param name="key">The hash.</param>
        /// <param name="field">The field.</param>
        /// <param name="value">A string, byte array or number.</param>
        /// <returns>True when the field is new.</returns>
        public bool HSet(string key, string field, object value)
        {
            Key(key);
            Key(field, nameof(field));
            if (value == null) throw new ArgumentNullException(nameof(value));
            return Int(Execute("HSET", key, field, value)) == 1;
        }

        /// <summary>HGET as UTF-8 text.</summary>
        /// <param name="key">The hash.</param>
        /// <param name="field">The field.</param>
        /// <returns>The value, or null.</returns>
        public string HGet(string key, string field) { Key(key); Key(field, nameof(field)); return Str(Execute("HGET", key, field)); }

        /// <summary>HGETALL as UTF-8 text (RESP2 and RESP3 replies alike).</summary>
        /// <param name="key">The hash.</param>
        /// <returns>Field → value.</returns>
        public Dictionary<string, string> HGetAll(string key)
        {
            Key(key);
            object r = Execute("HGETALL", key);
            var d = new Dictionary<string, string>();
            var map = r as KeyValuePair<object, object>[];
            if (map != null)
            {
                foreach (var kv in map) d[Str(kv.Key)] = Str(kv.Value);
                return d;
            }
            object[] a = Arr(r);
            for (int i = 0; i + 1 < a.Length; i += 2) d[Str(a[i])] = Str(a[i + 1]);
            return d;
        }

        /// <summary>RPUSH key values...</summary>
        /// <param name="key">The list.</param>
        /// <param name="values">One or more values.</param>
        /// <returns>The list's new length.</returns>
        public long RPush(string key, params object[] values) { return Int(Execute(Prepend("RPUSH", key, values))); }

        /// <summary>LPUSH key values...</summary>
        /// <param name="key">The list.</param>
        /// <param name="values">One or more values.</param>
        /// <returns>The list's new length.</returns>
        public long LPush(string key, params object[] values) { return Int(Execute(Prepend("LPUSH", key, values))); }

        /// <summary>LRANGE as UTF-8 text.</summary>
        /// <param name="key">The list.</param>
        /// <param name="start">First index (negative: from the end).</param>
        /// <param name="stop">Last index, inclusive.</param>
        /// <returns>The elements.</returns>
        public string[] LRange(string key, long start = 0, long stop = -1)
        {
            Key(key);
            object[] a = Arr(Execute("LRANGE", key, start, stop));
            var r = new string[a.Length];
            for (int i = 0; i < a.Length; i++) r[i] = Str(a[i]);
            return r;
        }

        /// <summary>SADD key members...</summary>
        /// <param name="key">The set.</param>
        /// <param name="members">One or more members.</param>
        /// <returns>How many were added.</returns>
        public long SAdd(string key, params object[] members) { return Int(Execute(Prepend("SADD", key, members))); }

        /// <summary>SMEMBERS as UTF-8 text.</summary>
        /// <param name="key">The set.</param>
        /// <returns>The members, in the server's order.</returns>
        public string[] SMembers(string key)
        {
            Key(key);
            object[] a = Arr(Execute("SMEMBERS", key));
            var r = new string[a.Length];
            for (int i = 0; i < a.Length; i++) r[i] = Str(a[i]);
            return r;
        }

        /// <summary>DBSIZE over every primary (summed by the core in cluster mode).</summary>
        /// <returns>The number of keys.</returns>
        public long DbSize() { return Int(Execute(Route.AllPrimaries, "DBSIZE")); }

        /// <summary>FLUSHALL on every primary.</summary>
        public void FlushAll() { Execute(Route.AllPrimaries, "FLUSHALL"); }

        private static object[] Prepend(string cmd, string key, object[] values)
        {
            Key(key);
            if (values == null) throw new ArgumentNullException(nameof(values));
            if (values.Length == 0) throw new ArgumentException(cmd + " needs at least one value", nameof(values));
            var args = new object[values.Length + 2];
            args[0] = cmd;
            args[1] = key;
            Array.Copy(values, 0, args, 2, values.Length);
            return args;
        }
    }

    /// <summary>Condition of <see cref="SlotlaneClient.Set"/>.</summary>
    public enum SetWhen
    {
        /// <summary>Set unconditionally.</summary>
        Always = 0,
        /// <summary>Only if the key does not exist (NX).</summary>
        NotExists = 1,
        /// <summary>Only if the key exists (XX).</summary>
        Exists = 2,
    }
}
