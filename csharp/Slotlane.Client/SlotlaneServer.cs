using System;
using System.Collections.Generic;
using System.Runtime.InteropServices;
using System.Text;

namespace Slotlane.Testing
{
    /// <summary>Where the shards of a <see cref="SlotlaneServer"/> listen.</summary>
    public enum PortMode
    {
        /// <summary>Shard i on its own port, answering like a Redis Cluster primary (the default).</summary>
        PerShard = 0,
        /// <summary>Every shard on one port; keys of other shards are forwarded to their owner.</summary>
        OnePort = 1,
    }

    /// <summary>The shards' append-only logs.</summary>
    public enum Durability
    {
        /// <summary>Nothing written (the default).</summary>
        Memory = 0,
        /// <summary>fsync'd once a second.</summary>
        Everysec = 1,
        /// <summary>fsync'd before any reply leaves.</summary>
        Always = 2,
    }

    /// <summary>How to start a <see cref="SlotlaneServer"/>: 4 shards, per-shard ports, -MOVED,
    /// in memory, ephemeral ports on 127.0.0.1 unless set.</summary>
    public sealed class SlotlaneServerOptions
    {
        /// <summary>1..256; default 4.</summary>
        public int Shards { get; set; } = 4;
        /// <summary>Per-shard ports or one port.</summary>
        public PortMode PortMode { get; set; } = PortMode.PerShard;
        /// <summary>Per-shard mode: forward keys of other shards instead of answering -MOVED.</summary>
        public bool Forward { get; set; }
        /// <summary>The logs' policy.</summary>
        public Durability Durability { get; set; } = Durability.Memory;
        /// <summary>The logs' directory (created if missing); null: the current one.</summary>
        public string Dir { get; set; }
        /// <summary>The listen address; null: 127.0.0.1.</summary>
        public string Bind { get; set; }
        /// <summary>0: ports chosen by the kernel; else the base port (shard i on Port + i).</summary>
        public int Port { get; set; }
        /// <summary>Other flags of the slotlane-server executable, without the dashes: {"maxclients", "100"}.</summary>
        public IDictionary<string, string> Settings { get; } = new Dictionary<string, string>();
    }

    /// <summary>The bundled slotlane-server inside this process (libslotlane_server.so, built with the
    /// package's native library from server/build.cfg): a real sharded cluster on loopback for an
    /// application's tests. Dispose stops every shard (connected clients get errors, not hangs) and
    /// waits for its threads. Several may run at once; they share nothing.</summary>
    public sealed class SlotlaneServer : IDisposable
    {
        private const string Lib = "slotlane_server";
        private IntPtr _s;

        [StructLayout(LayoutKind.Sequential)]
        private struct Options
        {
            public uint Version, Size;
            public int Shards, PortMode, Misrouted, Durability;
            public IntPtr Dir, Bind;
            public int Port, LogLevel;
            public IntPtr LogFn, LogUd, Settings;
            public UIntPtr NSettings;
        }

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        private static extern int sl_server_options_init(ref Options o, uint version);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        private static extern int sl_server_start(out IntPtr s, ref Options o, byte[] err, UIntPtr cap);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        private static extern int sl_server_shards(IntPtr s);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        private static extern int sl_server_port(IntPtr s, int i);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        private static extern int sl_server_url(IntPtr s, byte[] buf, UIntPtr cap);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        private static extern void sl_server_stop(IntPtr s);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        private static extern void sl_server_free(IntPtr s);

        /// <summary>redis://127.0.0.1:PORT of shard 0: a cluster client discovers the others.</summary>
        public string Url { get; }
        /// <summary>Each shard's port (all the same in one-port mode).</summary>
        public IReadOnlyList<int> Ports { get; }

        /// <summary>Starts a server of 4 shards on ephemeral ports.</summary>
        public SlotlaneServer() : this(new SlotlaneServerOptions()) { }

        /// <summary>Starts a server; throws <see cref="InvalidOperationException"/> when it cannot
        /// (a bad option, a busy port, a directory in use: the message says which).</summary>
        public SlotlaneServer(SlotlaneServerOptions options)
        {
            if (options == null) throw new ArgumentNullException(nameof(options));
            var o = new Options();
            sl_server_options_init(ref o, 1);
            o.Shards = options.Shards;
            o.PortMode = (int)options.PortMode;
            o.Misrouted = options.Forward ? 1 : 0;
            o.Durability = (int)options.Durability;
            o.Port = options.Port;
            var strings = new List<IntPtr>();
            IntPtr arr = IntPtr.Zero;
            try
            {
                if (options.Dir != null) o.Dir = Utf8(options.Dir, strings);
                if (options.Bind != null) o.Bind = Utf8(options.Bind, strings);
                if (options.Settings.Count > 0)
                {
                    var ptrs = new List<IntPtr>();
                    foreach (var kv in options.Settings)
                    {
                        ptrs.Add(Utf8(kv.Key, strings));
                        ptrs.Add(Utf8(kv.Value, strings));
                    }
                    arr = Marshal.AllocHGlobal(IntPtr.Size * ptrs.Count);
                    for (int i = 0; i < ptrs.Count; i++) Marshal.WriteIntPtr(arr, i * IntPtr.Size, ptrs[i]);
                    o.Settings = arr;
                    o.NSettings = (UIntPtr)ptrs.Count;
                }
                var err = new byte[512];
                if (sl_server_start(out _s, ref o, err, (UIntPtr)err.Length) != 0)
                    throw new InvalidOperationException("slotlane-server: " + CString(err));
            }
            finally
            {
                foreach (var p in strings) Marshal.FreeHGlobal(p);
                if (arr != IntPtr.Zero) Marshal.FreeHGlobal(arr);
            }
            var ports = new List<int>();
            for (int i = 0; i < sl_server_shards(_s); i++) ports.Add(sl_server_port(_s, i));
            Ports = ports;
            var buf = new byte[128];
            sl_server_url(_s, buf, (UIntPtr)buf.Length);
            Url = CString(buf);
        }

        private static IntPtr Utf8(string s, List<IntPtr> owned)
        {
            byte[] b = Encoding.UTF8.GetBytes(s);
            IntPtr p = Marshal.AllocHGlobal(b.Length + 1);
            Marshal.Copy(b, 0, p, b.Length);
            Marshal.WriteByte(p, b.Length, 0);
            owned.Add(p);
            return p;
        }

        private static string CString(byte[] b)
        {
            int n = Array.IndexOf(b, (byte)0);
            return Encoding.UTF8.GetString(b, 0, n < 0 ? b.Length : n);
        }

        /// <summary>Stops every shard and waits; a second call does nothing. Dispose does it too.</summary>
        public void Stop()
        {
            if (_s != IntPtr.Zero) sl_server_stop(_s);
        }

        /// <summary>Stops the server and frees it.</summary>
        public void Dispose()
        {
            if (_s != IntPtr.Zero)
            {
                sl_server_free(_s);
                _s = IntPtr.Zero;
            }
            GC.SuppressFinalize(this);
        }

        /// <summary>Frees a server whose Dispose was forgotten.</summary>
        ~SlotlaneServer() { Dispose(); }
    }
}
