using System;
using System.Collections.Generic;
using System.Globalization;
using System.Numerics;
using System.Text;

namespace Slotlane
{
    /// <summary>A RESP3 verbatim string: its text and its three-letter format ("txt", "mkd").</summary>
    public sealed class VerbatimString
    {
        /// <summary>The format, e.g. "txt".</summary>
        public string Format { get; }
        /// <summary>The text, without the "fmt:" prefix.</summary>
        public string Text { get; }

        /// <summary>Creates a verbatim string.</summary>
        /// <param name="format">The three-letter format.</param>
        /// <param name="text">The text.</param>
        public VerbatimString(string format, string text) { Format = format; Text = text; }

        /// <summary>The text.</summary>
        /// <returns><see cref="Text"/>.</returns>
        public override string ToString() { return Text; }
    }

    /// <summary>Decodes the core's flat reply records into .NET values:
    /// bulk string → <c>byte[]</c>, simple string → <c>string</c>, integer → <c>long</c>, nil → <c>null</c>,
    /// array/set/push → <c>object[]</c>, map → <c>KeyValuePair&lt;object, object&gt;[]</c> (server order),
    /// double → <c>double</c>, boolean → <c>bool</c>, big number → <see cref="BigInteger"/>,
    /// verbatim → <see cref="VerbatimString"/>, error → a <see cref="SlotlaneException"/> subclass (not thrown).</summary>
    internal static unsafe class ReplyDecoder
    {
        internal static readonly object True = true;
        internal static readonly object False = false;
        private static readonly object[] SmallInts = MakeSmallInts();

        private static object[] MakeSmallInts()
        {
            var a = new object[257];
            for (int i = 0; i < a.Length; i++) a[i] = (long)(i - 1);
            return a;
        }

        internal static object BoxLong(long v)
        {
            if (v >= -1 && v <= 255) return SmallInts[v + 1];
            return v;
        }

        /// <summary>Decodes the reply starting at record <paramref name="i"/> and advances past its children.</summary>
        internal static object Decode(SlReply* recs, long nrecs, byte* data, ref long i)
        {
            if (i >= nrecs) throw new SlotlaneProtocolException("reply records end early (" + nrecs + " records)");
            SlReply* r = recs + i;
            i++;
            switch (r->type)
            {
                case 1: // string
                {
                    uint n = r->len;
                    var b = new byte[n];
                    if (n > 0)
                    {
                        byte* src = data + r->offset;
                        fixed (byte* d = b)
                        {
                            if (n <= 64)
                            {
                                uint k = 0;
                                for (; k + 8 <= n; k += 8) *(long*)(d + k) = *(long*)(src + k);
                                for (; k < n; k++) d[k] = src[k];
                            }
                            else Buffer.MemoryCopy(src, d, n, n);
                        }
                    }
                    return b;
                }
                case 2: return Status(data, r);
                case 3: return Errors.FromKind(r->flags, Utf8(data, r));
                case 4: return BoxLong(r->value);
                case 5: return null;
                case 6:
                case 8:
                case 13:
                {
                    var a = new object[r->len];
                    for (int k = 0; k < a.Length; k++) a[k] = Decode(recs, nrecs, data, ref i);
                    return a;
                }
                case 7:
                {
                    var m = new KeyValuePair<object, object>[r->len / 2];
                    for (int k = 0; k < m.Length; k++)
                    {
                        object key = Decode(recs, nrecs, data, ref i);
                        object val = Decode(recs, nrecs, data, ref i);
                        m[k] = new KeyValuePair<object, object>(key, val);
                    }
                    return m;
                }
                case 9: return BitConverter.Int64BitsToDouble(r->value);
                case 10: return r->value != 0 ? True : False;
                case 11: return BigInteger.Parse(Utf8(data, r), NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture);
                case 12:
                {
                    long f = r->value;
                    var fmt = new string(new[] { (char)(f & 0xff), (char)((f >> 8) & 0xff), (char)((f >> 16) & 0xff) });
                    return new VerbatimString(fmt, Utf8(data, r));
                }
                default:
                    throw new SlotlaneProtocolException("unknown reply record type " + r->type);
            }
        }

        // Statuses that answer most commands, returned without allocating.
        internal static string Status(byte* data, SlReply* r)
        {
            byte* p = data + r->offset;
            if (r->len == 2 && p[0] == 'O' && p[1] == 'K') return "OK";
            if (r->len == 4 && p[0] == 'P' && p[1] == 'O' && p[2] == 'N' && p[3] == 'G') return "PONG";
            if (r->len == 6 && p[0] == 'Q' && p[1] == 'U' && p[2] == 'E' && p[3] == 'U' && p[4] == 'E' && p[5] == 'D') return "QUEUED";
            return Utf8(data, r);
        }

        internal static string Utf8(byte* data, SlReply* r)
        {
            return r->len == 0 ? string.Empty : Encoding.UTF8.GetString(data + r->offset, (int)r->len);
        }

        /// <summary>Decodes <paramref name="count"/> top-level replies (bulk strings, statuses and integers
        /// inline; anything else through <see cref="Decode"/>).</summary>
        internal static object[] DecodeAll(SlReply* recs, long nrecs, byte* data, int count)
        {
            var res = new object[count];
            long i = 0;
            for (int k = 0; k < count; k++)
            {
                if (i >= nrecs) throw new SlotlaneProtocolException("reply records end early (" + nrecs + " records)");
                SlReply* r = recs + i;
                byte t = r->type;
                if (t == 1 && r->len <= 64)
                {
                    uint n = r->len;
                    var b = new byte[n];
                    if (n > 0)
                        fixed (byte* pinned = b)
                        {
                            byte* d = pinned, src = data + r->offset;
                            uint j = 0;
                            for (; j + 8 <= n; j += 8) *(long*)(d + j) = *(long*)(src + j);
                            for (; j < n; j++) d[j] = src[j];
                        }
                    res[k] = b;
                    i++;
                }
                else if (t == 2)
                {
                    res[k] = Status(data, r);
                    i++;
                }
                else if (t == 4)
                {
                    res[k] = BoxLong(r->value);
                    i++;
                }
                else res[k] = Decode(recs, nrecs, data, ref i);
            }
            if (i != nrecs) throw new SlotlaneProtocolException("reply records left over: " + (nrecs - i));
            return res;
        }
    }
}
