using System;
using System.Globalization;
using System.Runtime.InteropServices;
using System.Text;

namespace Slotlane
{
    /// <summary>A growable buffer in unmanaged memory (never moved by the GC, so the core can read
    /// or write it during a blocking call without any pinning). Freed by Dispose or the finalizer.</summary>
    internal sealed unsafe class NativeBuffer : IDisposable
    {
        internal byte* Ptr;
        internal long Capacity;

        internal NativeBuffer(long capacity)
        {
            Ptr = (byte*)Marshal.AllocHGlobal((IntPtr)capacity);
            Capacity = capacity;
        }

        /// <summary>Makes room for at least <paramref name="need"/> bytes; keeps the first <paramref name="keep"/>.</summary>
        internal void Ensure(long need, long keep)
        {
            if (need <= Capacity) return;
            long cap = Capacity * 2;
            if (cap < need) cap = need;
            Ptr = (byte*)Marshal.ReAllocHGlobal((IntPtr)Ptr, (IntPtr)cap);
            Capacity = cap;
        }

        public void Dispose()
        {
            if (Ptr != null)
            {
                Marshal.FreeHGlobal((IntPtr)Ptr);
                Ptr = null;
                Capacity = 0;
            }
            GC.SuppressFinalize(this);
        }

        ~NativeBuffer()
        {
            if (Ptr != null) Marshal.FreeHGlobal((IntPtr)Ptr);
        }
    }

    /// <summary>Encodes commands as RESP arrays of bulk strings into a <see cref="NativeBuffer"/>.
    /// Only the wire format lives here: what a command means (its keys, its slot) is the core's.</summary>
    internal sealed unsafe class RespWriter : IDisposable
    {
        private readonly NativeBuffer _buf;
        internal long Length;
        internal int Count;

        internal RespWriter(long capacity) { _buf = new NativeBuffer(capacity); }

        internal byte* Ptr { get { return _buf.Ptr; } }

        internal long Capacity { get { return _buf.Capacity; } }

        internal void Clear() { Length = 0; Count = 0; }

        public void Dispose() { _buf.Dispose(); }

        /// <summary>Appends one command. On a bad argument, nothing is appended and an
        /// <see cref="ArgumentException"/> says which argument and why.</summary>
        internal void Append(object[] args)
        {
            if (args == null) throw new ArgumentNullException(nameof(args), "a command needs at least its name");
            if (args.Length == 0) throw new ArgumentException("a command needs at least its name", nameof(args));
            long start = Length;
            try
            {
                WriteHeader((byte)'*', args.Length);
                for (int i = 0; i < args.Length; i++) WriteArg(args[i], i);
            }
            catch
            {
                Length = start;
                throw;
            }
            Count++;
        }

        /// <summary>Appends <paramref name="count"/> commands already encoded (another writer's buffer).</summary>
        internal void AppendEncoded(byte* src, long len, int count)
        {
            if (Length + len > _buf.Capacity) _buf.Ensure(Length + len, Length);
            if (len > 0) Buffer.MemoryCopy(src, _buf.Ptr + Length, _buf.Capacity - Length, len);
            Length += len;
            Count += count;
        }

        internal static readonly byte[] GetPrefix = Encoding.ASCII.GetBytes("*2\r\n$3\r\nGET\r\n");
        internal static readonly byte[] SetPrefix = Encoding.ASCII.GetBytes("*3\r\n$3\r\nSET\r\n");

        /// <summary>Appends a command from a pre-encoded prefix (array header and name) and one more argument.</summary>
        internal void Append(byte[] prefix, object a)
        {
            long start = Length;
            try
            {
                WriteRaw(prefix);
                WriteArg(a, 1);
            }
            catch { Length = start; throw; }
            Count++;
        }

        /// <summary>Fast path of <see cref="Append(byte[], object)"/> for a string argument: one capacity check,
        /// pointer writes, an ASCII loop (UTF-8 encoder only for non-ASCII text).</summary>
        internal void AppendKey(byte[] prefix, string key)
        {
            long need = Length + prefix.Length + 16 + 3L * key.Length;
            if (need > _buf.Capacity) _buf.Ensure(need, Length);
            byte* start = _buf.Ptr + Length;
            byte* p = PutText(PutPrefix(start, prefix), key);
            Length += p - start;
            Count++;
        }

        /// <summary>Fast path of <see cref="Append(byte[], object, object)"/> for a string key and a string or
        /// byte[] value (SET, GETSET, HGET...): one capacity check and pointer writes; other values go through
        /// the general path.</summary>
        internal void AppendKeyValue(byte[] prefix, string key, object value)
        {
            string vs = value as string;
            byte[] vb = vs == null ? value as byte[] : null;
            if (vs == null && vb == null)
            {
                Append(prefix, key, value);
                return;
            }
            long need = Length + prefix.Length + 40 + 3L * key.Length + (vs != null ? 3L * vs.Length : vb.Length);
            if (need > _buf.Capacity) _buf.Ensure(need, Length);
            byte* start = _buf.Ptr + Length;
            byte* p = PutText(PutPrefix(start, prefix), key);
            if (vs != null) p = PutText(p, vs);
            else
                fixed (byte* src = vb) p = PutBulk(p, src, vb.Length);
            Length += p - start;
            Count++;
        }

        // The Put* helpers write at p, whose room the caller has ensured, and return the end. Inlined into the
        // fast paths (every call costs Mono a prologue and a safepoint poll).
        [System.Runtime.CompilerServices.MethodImpl(System.Runtime.CompilerServices.MethodImplOptions.AggressiveInlining)]
        private static byte* PutPrefix(byte* p, byte[] prefix)
        {
            int pl = prefix.Length;
            // (Mono keeps pinned locals in memory: the loops use plain copies of the pinned pointers)
            fixed (byte* pinnedPrefix = prefix)
            {
                byte* src = pinnedPrefix;
                int i = 0;
                for (; i + 8 <= pl; i += 8) *(long*)(p + i) = *(long*)(src + i);
                for (; i < pl; i++) p[i] = src[i];
            }
            return p + pl;
        }

        [System.Runtime.CompilerServices.MethodImpl(System.Runtime.CompilerServices.MethodImplOptions.AggressiveInlining)]
        private static byte* PutLength(byte* p, long n)
        {
            if (n < 10) *p++ = (byte)('0' + n);           // most keys and values: the digits written here, no call
            else if (n < 100) { *p++ = (byte)('0' + n / 10); *p++ = (byte)('0' + n % 10); }
            else p = WriteDigits(p, n);
            *p++ = (byte)'\r';
            *p++ = (byte)'\n';
            return p;
        }

        /// <summary>A bulk string of the text's UTF-8 bytes (room: 16 + 3 x its length).</summary>
        [System.Runtime.CompilerServices.MethodImpl(System.Runtime.CompilerServices.MethodImplOptions.AggressiveInlining)]
        private static byte* PutText(byte* p, string s)
        {
            int n = s.Length;
            fixed (char* c = s)
            {
                // optimistic: the header for n bytes, then the chars as ASCII; redone with the UTF-8
                // encoder when a non-ASCII char shows up (the header's width may differ then)
                byte* h = p;
                *p++ = (byte)'$';
                p = PutLength(p, n);
                if (CopyAscii(c, p, n) == n) p += n;
                else
                {
                    int len = Encoding.UTF8.GetByteCount(c, n);
                    p = h;
                    *p++ = (byte)'$';
                    p = PutLength(p, len);
                    Encoding.UTF8.GetBytes(c, n, p, len);
                    p += len;
                }
            }
            *p++ = (byte)'\r';
            *p++ = (byte)'\n';
            return p;
        }

        /// <summary>A bulk string of len bytes (room: 24 + len).</summary>
        [System.Runtime.CompilerServices.MethodImpl(System.Runtime.CompilerServices.MethodImplOptions.AggressiveInlining)]
        private static byte* PutBulk(byte* p, byte* src, long len)
        {
            *p++ = (byte)'$';
            p = PutLength(p, len);
            if (len <= 64)
            {
                long i = 0;
                for (; i + 8 <= len; i += 8) *(long*)(p + i) = *(long*)(src + i);
                for (; i < len; i++) p[i] = src[i];
            }
            else Buffer.MemoryCopy(src, p, len, len);
            p[len] = (byte)'\r';
            p[len + 1] = (byte)'\n';
            return p + len + 2;
        }

        /// <summary>Appends a command from a pre-encoded prefix and two more arguments.</summary>
        internal void Append(byte[] prefix, object a, object b)
        {
            long start = Length;
            try
            {
                WriteRaw(prefix);
                WriteArg(a, 1);
                WriteArg(b, 2);
            }
            catch { Length = start; throw; }
            Count++;
        }

        private void WriteRaw(byte[] b)
        {
            _buf.Ensure(Length + b.Length, Length);
            byte* p = _buf.Ptr + Length;
            for (int i = 0; i < b.Length; i++) p[i] = b[i];
            Length += b.Length;
        }

        /// <summary>Copies n chars as bytes while they are ASCII, 4 at a time; returns how many were copied
        /// (n when the text is all ASCII).</summary>
        [System.Runtime.CompilerServices.MethodImpl(System.Runtime.CompilerServices.MethodImplOptions.AggressiveInlining)]
        private static int CopyAscii(char* c, byte* dst, int n)
        {
            int i = 0;
            for (; i + 4 <= n; i += 4)
            {
                ulong v = *(ulong*)(c + i);
                if ((v & 0xFF80FF80FF80FF80UL) != 0) break;
                *(uint*)(dst + i) = (uint)((v & 0xFF) | ((v >> 8) & 0xFF00) | ((v >> 16) & 0xFF0000) | ((v >> 24) & 0xFF000000));
            }
            for (; i < n; i++)
            {
                char ch = c[i];
                if (ch >= 0x80) return i;
                dst[i] = (byte)ch;
            }
            return n;
        }

        private void WriteHeader(byte kind, long n)
        {
            _buf.Ensure(Length + 24, Length);
            byte* p = _buf.Ptr + Length;
            *p++ = kind;
            p = WriteDigits(p, n);
            *p++ = (byte)'\r';
            *p++ = (byte)'\n';
            Length = p - _buf.Ptr;
        }

        private static byte* WriteDigits(byte* p, long n)
        {
            if (n < 0) { *p++ = (byte)'-'; n = -n; }
            if (n < 10) { *p++ = (byte)('0' + n); return p; }
            if (n < 100) { *p++ = (byte)('0' + n / 10); *p++ = (byte)('0' + n % 10); return p; }
            byte* tmp = stackalloc byte[24];
            int k = 0;
            while (n > 0) { tmp[k++] = (byte)('0' + n % 10); n /= 10; }
            while (k > 0) *p++ = tmp[--k];
            return p;
        }

        private void WriteBulk(byte* src, long len)
        {
            _buf.Ensure(Length + 24 + len, Length);
            Length = PutBulk(_buf.Ptr + Length, src, len) - _buf.Ptr;
        }

        private void WriteString(string s)
        {
            _buf.Ensure(Length + 16 + 3L * s.Length, Length);
            Length = PutText(_buf.Ptr + Length, s) - _buf.Ptr;
        }

        private void WriteInteger(long v)
        {
            byte* tmp = stackalloc byte[24];
            byte* e = WriteDigits(tmp, v);
            WriteBulk(tmp, e - tmp);
        }

        private void WriteAscii(string s) { WriteString(s); }

        private void WriteArg(object a, int index)
        {
            if (a == null)
                throw new ArgumentNullException("args", "argument " + index + " is null: Redis arguments are strings, byte arrays or numbers");
            string s = a as string;
            if (s != null) { WriteString(s); return; }
            byte[] b = a as byte[];
            if (b != null)
            {
                fixed (byte* p = b) WriteBulk(p, b.Length);
                return;
            }
            if (a is int) { WriteInteger((int)a); return; }
            if (a is long) { WriteInteger((long)a); return; }
            if (a is uint) { WriteInteger((uint)a); return; }
            if (a is short) { WriteInteger((short)a); return; }
            if (a is ushort) { WriteInteger((ushort)a); return; }
            if (a is byte) { WriteInteger((byte)a); return; }
            if (a is sbyte) { WriteInteger((sbyte)a); return; }
            if (a is ulong) { WriteAscii(((ulong)a).ToString(CultureInfo.InvariantCulture)); return; }
            if (a is double) { WriteAscii(FormatDouble((double)a, index)); return; }
            if (a is float) { WriteAscii(FormatDouble((float)a, index)); return; }
            if (a is decimal) { WriteAscii(((decimal)a).ToString(CultureInfo.InvariantCulture)); return; }
            if (a is ArraySegment<byte>)
            {
                var seg = (ArraySegment<byte>)a;
                if (seg.Array == null) throw new ArgumentException("argument " + index + " is a default ArraySegment<byte> (no array)", "args");
                fixed (byte* p = seg.Array) WriteBulk(p + seg.Offset, seg.Count);
                return;
            }
            if (a is ReadOnlyMemory<byte>)
            {
                var rom = (ReadOnlyMemory<byte>)a;
                fixed (byte* p = &MemoryMarshal.GetReference(rom.Span)) WriteBulk(p, rom.Length);
                return;
            }
            if (a is Memory<byte>)
            {
                var mem = (Memory<byte>)a;
                fixed (byte* p = &MemoryMarshal.GetReference(mem.Span)) WriteBulk(p, mem.Length);
                return;
            }
            if (a is char) { WriteString(((char)a).ToString()); return; }
            if (a is bool)
                throw new ArgumentException("argument " + index + " is a bool: Redis has no boolean argument; pass 1/0 or a string", "args");
            throw new ArgumentException("argument " + index + " has type " + a.GetType().FullName +
                                        "; expected string, byte[], ArraySegment<byte>, ReadOnlyMemory<byte>, an integer type, double, float or decimal", "args");
        }

        private static string FormatDouble(double d, int index)
        {
            if (double.IsNaN(d)) throw new ArgumentException("argument " + index + " is NaN, which Redis does not accept", "args");
            if (double.IsPositiveInfinity(d)) return "+inf";
            if (double.IsNegativeInfinity(d)) return "-inf";
            return d.ToString("R", CultureInfo.InvariantCulture);
        }
    }
}
