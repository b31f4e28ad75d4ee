using System;
using System.Collections.Generic;
using System.Globalization;
using System.Text;

namespace Slotlane
{
    /// <summary>The spec's reply types as C# values (bindings/spec/README.md, "Reply types and the one
    /// normalisation of RESP2 and RESP3"): each shape turns a decoded reply (the values described on
    /// <see cref="Pipeline"/>) into its type's value, so RESP2 and RESP3 give the same value. Built from the
    /// type grammar by the generated code; nothing here knows a command. A reply of another type fails with
    /// a <see cref="SlotlaneProtocolException"/>.</summary>
    internal static class Shapes
    {
        private static SlotlaneProtocolException Unexpected(object v, string want)
        {
            string what = v == null ? "nil" : v is object[] ? "array" : v is KeyValuePair<object, object>[] ? "map" : v.GetType().Name;
            return new SlotlaneProtocolException("slotlane: a " + what + " reply for a " + want + " result");
        }

        /// <summary>An element of an aggregate: an error inside it is raised.</summary>
        private static T Elem<T>(Func<object, T> f, object v)
        {
            var e = v as SlotlaneException;
            if (e != null) throw e;
            return f(v);
        }

        internal static readonly Func<object, object> Any = v => v;

        internal static readonly Func<object, bool> Ok = v =>
        {
            var s = v as string;
            if (s == "OK") return true;
            var b = v as byte[];
            if (b != null && b.Length == 2 && b[0] == 'O' && b[1] == 'K') return true;
            throw Unexpected(v, "ok");
        };

        internal static readonly Func<object, bool> OkNil = v => v != null && Ok(v);

        internal static readonly Func<object, string> Status = v =>
        {
            var s = v as string;
            if (s != null) return s;
            var b = v as byte[];
            if (b != null) return Encoding.UTF8.GetString(b);
            throw Unexpected(v, "status");
        };

        internal static readonly Func<object, string> String = v =>
        {
            var b = v as byte[];
            if (b != null) return Encoding.UTF8.GetString(b);
            var s = v as string;
            if (s != null) return s;
            var vs = v as VerbatimString;
            if (vs != null) return vs.Text;
            throw Unexpected(v, "string");
        };

        internal static readonly Func<object, long> Int = v =>
        {
            if (v is long) return (long)v;
            throw Unexpected(v, "int");
        };

        internal static readonly Func<object, bool> Bool = v =>
        {
            if (v is bool) return (bool)v;
            if (v is long && ((long)v == 0 || (long)v == 1)) return (long)v == 1;
            throw Unexpected(v, "bool");
        };

        internal static readonly Func<object, double> Double = v =>
        {
            if (v is double) return (double)v;
            if (v is long) return (long)v;
            var b = v as byte[];
            if (b != null)
            {
                string s = Encoding.ASCII.GetString(b);
                switch (s)
                {
                    case "inf": case "+inf": return double.PositiveInfinity;
                    case "-inf": return double.NegativeInfinity;
                    case "nan": return double.NaN;
                }
                double d;
                if (double.TryParse(s, NumberStyles.Float, CultureInfo.InvariantCulture, out d)) return d;
            }
            throw Unexpected(v, "double");
        };

        internal static readonly Func<object, ulong> Cursor = v =>
        {
            var b = v as byte[];
            ulong n;
            if (b != null && ulong.TryParse(Encoding.ASCII.GetString(b), NumberStyles.None, CultureInfo.InvariantCulture, out n)) return n;
            throw Unexpected(v, "cursor");
        };

        /// <summary>T? of a value type: null for a nil reply.</summary>
        internal static Func<object, T?> NullableValue<T>(Func<object, T> f) where T : struct
        {
            return v => v == null ? (T?)null : f(v);
        }

        /// <summary>T? of a reference type: null for a nil reply.</summary>
        internal static Func<object, T> NullableRef<T>(Func<object, T> f) where T : class
        {
            return v => v == null ? null : f(v);
        }

        internal static Func<object, T[]> Array<T>(Func<object, T> of)
        {
            return v =>
            {
                var a = v as object[];
                if (a == null) throw Unexpected(v, "array");
                var r = new T[a.Length];
                for (int i = 0; i < a.Length; i++) r[i] = Elem(of, a[i]);
                return r;
            };
        }

        internal static Func<object, HashSet<T>> Set<T>(Func<object, T> of)
        {
            return v =>
            {
                var a = v as object[];
                if (a == null) throw Unexpected(v, "set");
                var r = new HashSet<T>();
                foreach (object x in a) r.Add(Elem(of, x));
                return r;
            };
        }

        /// <summary>The key, value, key, value... of a map or pairs reply: a RESP3 map, a flat RESP2 array
        /// or an array of [k, v] arrays.</summary>
        private static List<object> Flat(object v, string want)
        {
            var m = v as KeyValuePair<object, object>[];
            var r = new List<object>();
            if (m != null)
            {
                foreach (var kv in m) { r.Add(kv.Key); r.Add(kv.Value); }
                return r;
            }
            var a = v as object[];
            if (a == null) throw Unexpected(v, want);
            if (a.Length > 0 && a[0] is object[])
            {
                foreach (object x in a)
                {
                    var p = x as object[];
                    if (p == null || p.Length != 2) throw Unexpected(x, want);
                    r.Add(p[0]);
                    r.Add(p[1]);
                }
                return r;
            }
            if (a.Length % 2 != 0) throw Unexpected(v, want);
            r.AddRange(a);
            return r;
        }

        internal static Func<object, Dictionary<K, V>> Map<K, V>(Func<object, K> k, Func<object, V> val)
        {
            return v =>
            {
                var f = Flat(v, "map");
                var r = new Dictionary<K, V>(f.Count / 2);
                for (int i = 0; i < f.Count; i += 2) r[Elem(k, f[i])] = Elem(val, f[i + 1]);
                return r;
            };
        }

        internal static Func<object, KeyValuePair<K, V>[]> Pairs<K, V>(Func<object, K> k, Func<object, V> val)
        {
            return v =>
            {
                var f = Flat(v, "pairs");
                var r = new KeyValuePair<K, V>[f.Count / 2];
                for (int i = 0; i < f.Count; i += 2) r[i / 2] = new KeyValuePair<K, V>(Elem(k, f[i]), Elem(val, f[i + 1]));
                return r;
            };
        }

        internal static Func<object, ValueTuple<A, B>> Tuple<A, B>(Func<object, A> a, Func<object, B> b)
        {
            return v =>
            {
                var x = v as object[];
                if (x == null || x.Length != 2) throw Unexpected(v, "tuple");
                return new ValueTuple<A, B>(Elem(a, x[0]), Elem(b, x[1]));
            };
        }
    }

    /// <summary>The reply shapes of the <see cref="Reply{T}"/> handles, by a one-byte id: the rendered ones are
    /// <c>CommandArgs.ShapeTable</c> (ids 0.., constants in Commands.g.cs); a hand-written shape gets an id
    /// here on first use.</summary>
    internal static class ShapeIds
    {
        private static readonly object s_lock = new object();
        private static readonly List<Delegate> s_more = new List<Delegate>();

        internal static int Of(Delegate shape)
        {
            Delegate[] t = CommandArgs.ShapeTable;
            for (int i = 0; i < t.Length; i++) if (ReferenceEquals(t[i], shape)) return i;
            lock (s_lock)
            {
                int k = s_more.IndexOf(shape);
                if (k < 0)
                {
                    if (t.Length + s_more.Count > 255) throw new InvalidOperationException("more than 256 reply shapes");
                    s_more.Add(shape);
                    k = s_more.Count - 1;
                }
                return t.Length + k;
            }
        }

        internal static Delegate Get(int id)
        {
            Delegate[] t = CommandArgs.ShapeTable;
            if (id < t.Length) return t[id];
            lock (s_lock) return s_more[id - t.Length];
        }
    }

    /// <summary>A typed command queued on a <see cref="Pipeline"/>: <see cref="Value"/> gives its reply, shaped
    /// by the command's reply type, once the pipeline has executed it (until its next execution). A struct:
    /// queueing a typed command allocates nothing for its handle.</summary>
    /// <typeparam name="T">The command's reply type.</typeparam>
    public struct Reply<T>
    {
        // 16 bytes, one reference: the pipeline, and a tag of the command's index (low 32 bits), the execution
        // it belongs to (24 bits: a handle 2^24 executions old is no longer told from a current one) and its
        // shape's id (8 bits, ShapeIds). Assigned field by field by the rendered fast paths (Commands.g.cs):
        // on Mono the constructor of a generic struct over a reference type is shared code, called with a
        // generic context per command, and each reference field costs a write barrier when it is returned.
        internal Pipeline _p;
        internal long _tag;

        internal Reply(Pipeline p, int index, int gen, Func<object, T> shape) : this(p, index, gen, ShapeIds.Of(shape)) { }

        internal Reply(Pipeline p, int index, int gen, int shapeId)
        {
            _p = p;
            _tag = Tag(index, gen, shapeId);
        }

        internal static long Tag(int index, int gen, int shapeId)
        {
            return (uint)index | ((long)(gen & 0xFFFFFF) << 32) | ((long)shapeId << 56);
        }

        /// <summary>The command's value.</summary>
        /// <exception cref="SlotlaneException">The command's failure (a <see cref="SlotlaneReplyException"/> for an error reply...).</exception>
        /// <exception cref="InvalidOperationException">The pipeline has not executed the command (a Reply is valid
        /// until the pipeline's next execution).</exception>
        public T Value
        {
            get
            {
                if (_p == null) throw new InvalidOperationException("a default Reply belongs to no pipeline");
                object v = _p.Result((int)_tag, (int)(_tag >> 32) & 0xFFFFFF);
                var e = v as SlotlaneException;
                if (e != null) throw e;
                return ((Func<object, T>)ShapeIds.Get((int)((ulong)_tag >> 56)))(v);
            }
        }

        /// <summary>Describes the reply handle.</summary>
        /// <returns>"Reply #index".</returns>
        public override string ToString() { return "Reply #" + (int)_tag; }
    }
}
