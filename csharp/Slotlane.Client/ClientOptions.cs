using System;
using System.Runtime.InteropServices;
using System.Text;

namespace Slotlane
{
    /// <summary>How the client talks to its server (<c>sl_mode</c>).</summary>
    public enum ClientMode
    {
        /// <summary>Ask the seed: a cluster answers CLUSTER SLOTS, anything else is plain.</summary>
        Auto = 0,
        /// <summary>One node, no discovery, no routing: the server sees every command.</summary>
        Plain = 1,
        /// <summary>Discover the slot map and route every command by its key.</summary>
        Cluster = 2,
    }

    /// <summary>Where read-only commands go in a cluster with replicas (<c>sl_read_from</c>). A command is
    /// read-only when Redis's command table flags it so (GET, MGET, HGETALL, ZRANGE...); a replica's data may
    /// lag its primary's (replication is asynchronous).</summary>
    public enum ReadFrom
    {
        /// <summary>Every command to the slot's primary (the default).</summary>
        Primary = 0,
        /// <summary>Read-only commands to the first usable replica of the slot's primary (the same one while it
        /// works), else to the primary.</summary>
        PreferReplica = 1,
        /// <summary>Read-only commands rotate over the primary's usable replicas, else go to the primary.</summary>
        ReplicasRoundRobin = 2,
    }

    /// <summary>Options of <see cref="SlotlaneClient.Connect(ClientOptions)"/>. Give either
    /// <see cref="Url"/> or <see cref="Host"/> (and <see cref="Port"/>). Every value is checked when
    /// connecting; a bad one raises an <see cref="ArgumentException"/> naming it.</summary>
    public sealed class ClientOptions
    {
        /// <summary>Where to connect: <c>redis://[user:password@]host:port[/db]</c> (<c>rediss://</c>: TLS), <c>host:port</c>,
        /// or several seeds separated by commas. Parsed by the core.</summary>
        public string Url { get; set; }
        /// <summary>The host, when <see cref="Url"/> is not set.</summary>
        public string Host { get; set; }
        /// <summary>The port used with <see cref="Host"/> (1..65535); default 6379.</summary>
        public int Port { get; set; } = 6379;
        /// <summary>Plain, cluster, or detect (default).</summary>
        public ClientMode Mode { get; set; } = ClientMode.Auto;
        /// <summary>ACL user name; null: none (or the URL's).</summary>
        public string Username { get; set; }
        /// <summary>Password; null: none (or the URL's).</summary>
        public string Password { get; set; }
        /// <summary>Database selected in plain mode; null: the URL's, else 0.</summary>
        public int? Database { get; set; }
        /// <summary>RESP protocol version: 2 (default) or 3.</summary>
        public int Protocol { get; set; } = 2;
        /// <summary>Per connection attempt; default 2 s.</summary>
        public TimeSpan ConnectTimeout { get; set; } = TimeSpan.FromSeconds(2);
        /// <summary>Deadline of one execution (a command or a whole pipeline); <see cref="TimeSpan.Zero"/>
        /// means none; default 5 s.</summary>
        public TimeSpan CommandTimeout { get; set; } = TimeSpan.FromSeconds(5);
        /// <summary>MOVED/ASK/TRYAGAIN redirects followed per command; default 5.</summary>
        public int MaxRedirects { get; set; } = 5;
        /// <summary>Periodic slot-map refresh; <see cref="TimeSpan.Zero"/> (default): only after MOVED.</summary>
        public TimeSpan RefreshInterval { get; set; } = TimeSpan.Zero;
        /// <summary>Core handles (each with its own connections) the client keeps for concurrent callers;
        /// a caller beyond this many waits. Default: 2 × processor count, at least 4.</summary>
        public int MaxPoolSize { get; set; } = Math.Max(4, 2 * Environment.ProcessorCount);

        /// <summary>The async methods' bound (the core's <c>max_inflight_batches</c>): at most this many commands
        /// or pipelines of this client in flight at once (1..2^31-1; default 4096). Past it, a call fails fast:
        /// its task faults with <see cref="SlotlaneResourceException"/> and nothing is sent (retry after some
        /// tasks complete, or raise the bound).</summary>
        public int MaxInflightBatches { get; set; } = 4096;
        /// <summary>The async methods' bound on command bytes in flight at once (the core's
        /// <c>max_inflight_bytes</c>; default 64 MiB), with the same policy. A single call larger than it is
        /// admitted when nothing else is in flight.</summary>
        public long MaxInflightBytes { get; set; } = 64L << 20;

        /// <summary>TLS for every connection (see <see cref="TlsOptions"/>); null: none, unless the URL is
        /// <c>rediss://</c> (then the system's CAs and full verification).</summary>
        public TlsOptions Tls { get; set; }

        /// <summary>Where read-only commands go (the core's <c>read_from</c>): <see cref="Slotlane.ReadFrom.Primary"/>
        /// (default), <see cref="Slotlane.ReadFrom.PreferReplica"/> or <see cref="Slotlane.ReadFrom.ReplicasRoundRobin"/>.
        /// Replica connections send READONLY; with no usable replica a read goes to the primary.</summary>
        public ReadFrom ReadFrom { get; set; } = ReadFrom.Primary;

        /// <summary>The core's <c>retry_writes</c>. In a cluster, a command that never reached a socket is always
        /// routed again and sent, and a read-only command that was sent is retried once after its connection broke;
        /// a write that was sent then fails with a <see cref="SlotlaneConnectionException"/> whose message ends
        /// "(the command was sent: it may have been executed)". True: such a write is sent once more instead —
        /// it may then run twice (an INCR counted twice). Default false.</summary>
        public bool RetryWrites { get; set; }

        /// <summary>Called with what the core reports about the cluster (<c>sl_client_options.on_event</c>):
        /// topology changes, nodes down and up, failovers (<see cref="ClientEventKind"/>), with the node's address.
        /// The handler runs on a thread-pool thread, one event at a time in the order the core reported them,
        /// never on the thread of an execution: it may use the client. Every core handle of the client (the
        /// pooled ones, the async one) reports its own events, so one change can be reported more than once.
        /// The sender is null. An exception it throws is written to <see cref="System.Diagnostics.Trace"/> and
        /// dropped. Null (default): no events.</summary>
        public EventHandler<ClientEventArgs> OnEvent { get; set; }

        // The registered sink of OnEvent (ClientEvents), made by SlotlaneClient.Connect; 0: none.
        internal long EventSinkId;

        // The core's configuration made from Tls by SlotlaneClient.Connect, shared by every core handle.
        internal TlsConfig TlsRef;

        /// <summary>Returns a copy.</summary>
        /// <returns>A new options object with the same values.</returns>
        public ClientOptions Clone()
        {
            var c = (ClientOptions)MemberwiseClone();
            c.Tls = Tls == null ? null : Tls.Clone();
            c.TlsRef = null;
            c.EventSinkId = 0;
            return c;
        }

        internal void Validate()
        {
            bool hasUrl = !string.IsNullOrEmpty(Url), hasHost = !string.IsNullOrEmpty(Host);
            if (hasUrl == hasHost)
                throw new ArgumentException("give exactly one of ClientOptions.Url and ClientOptions.Host", "options");
            if (Url != null && Url.IndexOf('\0') >= 0) throw new ArgumentException("ClientOptions.Url contains a NUL character", "options");
            if (hasHost && (Host.IndexOf(':') >= 0 && Host.IndexOf(']') < 0 || Host.IndexOf(',') >= 0 || Host.IndexOf('/') >= 0 || Host.IndexOf('\0') >= 0))
                throw new ArgumentException("ClientOptions.Host must be a bare host name or address, got \"" + Host + "\"", "options");
            if (Port < 1 || Port > 65535) throw new ArgumentOutOfRangeException("options", Port, "ClientOptions.Port must be 1..65535");
            if (Mode != ClientMode.Auto && Mode != ClientMode.Plain && Mode != ClientMode.Cluster)
                throw new ArgumentOutOfRangeException("options", Mode, "ClientOptions.Mode is not a ClientMode");
            if (ReadFrom != ReadFrom.Primary && ReadFrom != ReadFrom.PreferReplica && ReadFrom != ReadFrom.ReplicasRoundRobin)
                throw new ArgumentOutOfRangeException("options", ReadFrom, "ClientOptions.ReadFrom is not a ReadFrom");
            if (Database.HasValue && Database.Value < 0) throw new ArgumentOutOfRangeException("options", Database, "ClientOptions.Database must be >= 0");
            if (Protocol != 2 && Protocol != 3) throw new ArgumentOutOfRangeException("options", Protocol, "ClientOptions.Protocol must be 2 or 3");
            Ms(ConnectTimeout, "ConnectTimeout", false);
            Ms(CommandTimeout, "CommandTimeout", true);
            Ms(RefreshInterval, "RefreshInterval", true);
            if (MaxRedirects < 0 || MaxRedirects > 1000) throw new ArgumentOutOfRangeException("options", MaxRedirects, "ClientOptions.MaxRedirects must be 0..1000");
            if (Tls != null) Tls.Validate();
            if (MaxInflightBatches < 1) throw new ArgumentOutOfRangeException("options", MaxInflightBatches, "ClientOptions.MaxInflightBatches must be positive");
            if (MaxInflightBytes < 1) throw new ArgumentOutOfRangeException("options", MaxInflightBytes, "ClientOptions.MaxInflightBytes must be positive");
            if (MaxPoolSize < 1 || MaxPoolSize > 4096) throw new ArgumentOutOfRangeException("options", MaxPoolSize, "ClientOptions.MaxPoolSize must be 1..4096");
        }

        internal static int Ms(TimeSpan t, string name, bool zeroOk)
        {
            if (t < TimeSpan.Zero || (!zeroOk && t == TimeSpan.Zero) || t.TotalMilliseconds > int.MaxValue)
                throw new ArgumentOutOfRangeException("options", t, "ClientOptions." + name + " must be " + (zeroOk ? "zero or " : "") + "positive and under 24 days");
            if (t > TimeSpan.Zero && t.TotalMilliseconds < 1) return 1;
            return (int)Math.Ceiling(t.TotalMilliseconds);
        }

        internal string Target()
        {
            if (!string.IsNullOrEmpty(Url)) return Url;
            return Host + ":" + Port.ToString(System.Globalization.CultureInfo.InvariantCulture);
        }

        internal static IntPtr Utf8Z(string s)
        {
            if (s == null) return IntPtr.Zero;
            byte[] b = Encoding.UTF8.GetBytes(s);
            IntPtr p = Marshal.AllocHGlobal(b.Length + 1);
            Marshal.Copy(b, 0, p, b.Length);
            Marshal.WriteByte(p, b.Length, 0);
            return p;
        }
    }
}
