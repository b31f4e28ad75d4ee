using System;
using System.Collections.Generic;
using System.Runtime.InteropServices;
using System.Threading;

namespace Slotlane
{
    /// <summary>Where a command goes, overriding routing by key (<c>sl_route</c>).</summary>
    public struct Route
    {
        /// <summary>The kind of override.</summary>
        public RouteKind Kind { get; private set; }
        /// <summary>The slot, for <see cref="RouteKind.Slot"/>.</summary>
        public int SlotNumber { get; private set; }
        /// <summary>The node "host:port", for <see cref="RouteKind.Node"/>.</summary>
        public string NodeAddress { get; private set; }

        /// <summary>By the command's key (the default).</summary>
        public static Route ByKey { get { return new Route { Kind = RouteKind.ByKey }; } }
        /// <summary>To every primary; the replies are merged as the core documents (DBSIZE: the sum,
        /// KEYS: one array, FLUSHALL/PING: one status), others give one reply per primary.</summary>
        public static Route AllPrimaries { get { return new Route { Kind = RouteKind.AllPrimaries }; } }
        /// <summary>To a random primary.</summary>
        public static Route Random { get { return new Route { Kind = RouteKind.Random }; } }

        /// <summary>To the owner of a slot.</summary>
        /// <param name="slot">0..16383.</param>
        /// <returns>The route.</returns>
        public static Route Slot(int slot)
        {
            if (slot < 0 || slot > 16383) throw new ArgumentOutOfRangeException(nameof(slot), slot, "a slot is 0..16383");
            return new Route { Kind = RouteKind.Slot, SlotNumber = slot };
        }

        /// <summary>To a node given as "host:port".</summary>
        /// <param name="address">The node's address.</param>
        /// <returns>The route.</returns>
        public static Route Node(string address)
        {
            if (string.IsNullOrEmpty(address)) throw new ArgumentException("a node address \"host:port\" is needed", nameof(address));
            if (address.IndexOf('\0') >= 0) throw new ArgumentException("the node address contains a NUL character", nameof(address));
            return new Route { Kind = RouteKind.Node, NodeAddress = address };
        }
    }

    /// <summary>Kinds of <see cref="Route"/> (<c>sl_route_kind</c>).</summary>
    public enum RouteKind
    {
        /// <summary>By the command's key.</summary>
        ByKey = 0,
        /// <summary>Every primary.</summary>
        AllPrimaries = 1,
        /// <summary>A given node.</summary>
        Node = 2,
        /// <summary>The owner of a slot.</summary>
        Slot = 3,
        /// <summary>A random primary.</summary>
        Random = 4,
    }

    /// <summary>Counters of a client, summed over its pooled core handles (<c>sl_stats</c>).</summary>
    public sealed class ClientStats
    {
        /// <summary>Commands executed (a split command counts once).</summary>
        public long Commands { get; internal set; }
        /// <summary>MOVED redirects followed.</summary>
        public long Moved { get; internal set; }
        /// <summary>ASK redirects followed.</summary>
        public long Ask { get; internal set; }
        /// <summary>TRYAGAIN/CLUSTERDOWN retries.</summary>
        public long TryAgain { get; internal set; }
        /// <summary>Slot-map refreshes.</summary>
        public long Refreshes { get; internal set; }
        /// <summary>Successful connects.</summary>
        public long Connects { get; internal set; }
        /// <summary>Connects after a connection was lost.</summary>
        public long Reconnects { get; internal set; }
        /// <summary>Bytes written to sockets.</summary>
        public long BytesWritten { get; internal set; }
        /// <summary>Bytes read from sockets.</summary>
        public long BytesRead { get; internal set; }
        /// <summary>Core handles in the pool.</summary>
        public int Handles { get; internal set; }
        /// <summary>Nodes known, primaries and replicas (the largest over the handles).</summary>
        public long Nodes { get; internal set; }
        /// <summary>Promotions seen (<see cref="ClientEventKind.Failover"/>).</summary>
        public long Failovers { get; internal set; }
        /// <summary>Refreshes asked for by a MOVED, CLUSTERDOWN, READONLY...</summary>
        public long RefreshesMoved { get; internal set; }
        /// <summary>Refreshes asked for by a lost node.</summary>
        public long RefreshesLost { get; internal set; }
        /// <summary>Commands sent again after a lost connection or a -LOADING, -MASTERDOWN, -READONLY, -UNBLOCKED reply.</summary>
        public long Retries { get; internal set; }
        /// <summary>Read-only commands routed to a replica (<see cref="ClientOptions.ReadFrom"/>).</summary>
        public long ReplicaReads { get; internal set; }
        /// <summary><see cref="ClientEventKind.NodeDown"/> events.</summary>
        public long NodesDown { get; internal set; }
    }

    /// <summary>A Redis-protocol client for a plain server or a cluster. Thread-safe: concurrent callers
    /// each use a pooled core handle with its own connections (at most <see cref="ClientOptions.MaxPoolSize"/>).
    /// Routing, redirects, splitting multi-key commands and discovery are done by libslotlane.
    /// Dispose it to close every connection.</summary>
    public sealed unsafe partial class SlotlaneClient : IDisposable
    {
        private readonly ClientOptions _options;
        private readonly object _lock = new object();
        private readonly Stack<CoreHandle> _idle = new Stack<CoreHandle>();
        private readonly List<CoreHandle> _all = new List<CoreHandle>();
        private int _creating;
        private int _waiters;
        private int _draining;
        private bool _disposed;
        private readonly ClientMode _mode;

        private SlotlaneClient(ClientOptions options, CoreHandle first)
        {
            _options = options;
            _all.Add(first);
            _idle.Push(first);
            _mode = (ClientMode)Native.sl_client_mode(first.Client);
        }

        /// <summary>Connects: parses the URL (or host and port), reaches a seed and, in cluster mode,
        /// discovers the slot map. More connections are made on demand for concurrent callers.</summary>
        /// <param name="options">Where and how to connect.</param>
        /// <returns>The connected client.</returns>
        /// <exception cref="ArgumentException">A bad option (also a URL the core cannot parse).</exception>
        /// <exception cref="SlotlaneConnectionException">No seed could be reached.</exception>
        /// <exception cref="SlotlaneClusterException">Cluster discovery failed.</exception>
        /// <exception cref="SlotlaneTlsException">TLS failed: a CA, certificate or key could not be loaded, or the
        /// server's certificate did not verify (the message says which).</exception>
        public static SlotlaneClient Connect(ClientOptions options)
        {
            if (options == null) throw new ArgumentNullException(nameof(options));
            options = options.Clone();
            options.Validate();
            if (options.Tls != null) options.TlsRef = options.Tls.Build();
            if (options.OnEvent != null) options.EventSinkId = ClientEvents.Register(options.OnEvent);
            try
            {
                return new SlotlaneClient(options, CoreHandle.Create(options));
            }
            catch
            {
                ClientEvents.Unregister(options.EventSinkId);
                throw;
            }
        }

        /// <summary>Connects to a URL (<c>redis://host:port</c>, <c>host:port</c>, or comma-separated seeds)
        /// with default options.</summary>
        /// <param name="url">Where to connect.</param>
        /// <returns>The connected client.</returns>
        public static SlotlaneClient Connect(string url)
        {
            if (url == null) throw new ArgumentNullException(nameof(url));
            return Connect(new ClientOptions { Url = url });
        }

        /// <summary>Whether the client routes by slot (cluster) or sends everything to one node (plain),
        /// after auto-detection.</summary>
        public ClientMode Mode { get { return _mode; } }

        /// <summary>The libslotlane version, e.g. "0.1.0".</summary>
        public static string CoreVersion { get { return Native.PtrToUtf8(Native.sl_version()); } }

        /// <summary>The cluster slot of a key (CRC16 with hash tags, mod 16384), as the core computes it.</summary>
        /// <param name="key">The key (UTF-8).</param>
        /// <returns>0..16383.</returns>
        public static int KeySlot(string key)
        {
            if (key == null) throw new ArgumentNullException(nameof(key));
            return KeySlot(System.Text.Encoding.UTF8.GetBytes(key));
        }

        /// <summary>The cluster slot of a binary key.</summary>
        /// <param name="key">The key bytes.</param>
        /// <returns>0..16383.</returns>
        public static int KeySlot(byte[] key)
        {
            if (key == null) throw new ArgumentNullException(nameof(key));
            fixed (byte* p = key) return Native.sl_key_slot(p, (UIntPtr)key.Length);
        }

        // ---------------------------------------------------------------- the pool

        internal CoreHandle Rent()
        {
            lock (_lock)
            {
                while (true)
                {
                    if (_disposed) throw new ObjectDisposedException(nameof(SlotlaneClient));
                    if (_draining == 0)
                    {
                        if (_idle.Count > 0) return _idle.Pop();
                        if (_all.Count + _creating < _options.MaxPoolSize) { _creating++; break; }
                    }
                    _waiters++;
                    try { Monitor.Wait(_lock); }
                    finally { _waiters--; }
                }
            }
            CoreHandle h = null;
            try
            {
                h = CoreHandle.Create(_options);
            }
            finally
            {
                lock (_lock)
                {
                    _creating--;
                    if (h != null)
                    {
                        if (_disposed) { h.Dispose(); h = null; }
                        else _all.Add(h);
                    }
                    Monitor.PulseAll(_lock);
                }
            }
            if (h == null) throw new ObjectDisposedException(nameof(SlotlaneClient));
            return h;
        }

        internal void Return(CoreHandle h)
        {
            lock (_lock)
            {
                if (_disposed)
                {
                    _all.Remove(h);
                    h.Dispose();
                }
                else _idle.Push(h);
                if (_waiters > 0) Monitor.PulseAll(_lock);
            }
        }

        internal int TimeoutMs { get { return 0; } }

        // ---------------------------------------------------------------- commands

        /// <summary>Runs one command and returns its reply, decoded as described on <see cref="Pipeline"/>.
        /// Cluster routing is by the command's key; multi-key commands across slots are split by the core.</summary>
        /// <param name="args">The command name and its arguments: strings (UTF-8), byte arrays,
        /// <c>ArraySegment&lt;byte&gt;</c>, <c>ReadOnlyMemory&lt;byte&gt;</c>, integers, doubles or decimals.</param>
        /// <returns>The reply: <c>byte[]</c>, <c>string</c> (status), <c>long</c>, <c>double</c>, <c>bool</c>,
        /// <c>null</c>, <c>object[]</c>...</returns>
        /// <exception cref="ArgumentException">No arguments, a null argument or one of an unsupported type.</exception>
        /// <exception cref="SlotlaneException">The command failed: its subclass tells how.</exception>
        public object Execute(params object[] args)
        {
            CoreHandle h = Rent();
            object r;
            try
            {
                h.Cmd.Clear();
                h.Cmd.Append(args);
                r = h.Run(h.Cmd.Ptr, h.Cmd.Length, 1, TimeoutMs)[0];
            }
            finally { Return(h); }
            return ThrowIfError(r);
        }

        /// <summary>Runs one command with a routing override (all primaries, a node, a slot, random).</summary>
        /// <param name="route">Where the command goes.</param>
        /// <param name="args">The command and its arguments, as for <see cref="Execute(object[])"/>.</param>
        /// <returns>The reply.</returns>
        /// <exception cref="ArgumentException">Bad arguments or an unknown node address.</exception>
        /// <exception cref="SlotlaneException">The command failed.</exception>
        public object Execute(Route route, params object[] args)
        {
            CoreHandle h = Rent();
            object r;
            IntPtr node = IntPtr.Zero;
            try
            {
                h.Cmd.Clear();
                h.Cmd.Append(args);
                SlRoute sr = Native.NewRoute();
                sr.kind = (int)route.Kind;
                sr.slot = route.SlotNumber;
                node = ClientOptions.Utf8Z(route.NodeAddress);
                sr.node = node;
                r = h.RunRouted(&sr, h.Cmd.Ptr, h.Cmd.Length, 1, TimeoutMs)[0];
            }
            finally
            {
                if (node != IntPtr.Zero) Marshal.FreeHGlobal(node);
                Return(h);
            }
            return ThrowIfError(r);
        }

        internal static object ThrowIfError(object r)
        {
            var e = r as SlotlaneException;
            if (e != null) throw e;
            return r;
        }

        /// <summary>Creates a pipeline: commands queued with <see cref="Pipeline.Add(object[])"/> and sent
        /// together, with one crossing into the core, by <see cref="Pipeline.Execute()"/>.</summary>
        /// <returns>A new pipeline (dispose it to free its buffer).</returns>
        public Pipeline CreatePipeline()
        {
            if (_disposed) throw new ObjectDisposedException(nameof(SlotlaneClient));
            return new Pipeline(this);
        }

        /// <summary>Starts a transaction on a connection of its own (see <see cref="Slotlane.Transaction"/>):
        /// <c>tx.Watch(key)</c>, reads with <c>tx.Execute</c>, then <c>tx.Multi()</c>'s pipeline executed as
        /// MULTI ... EXEC. It holds one of the client's pooled handles until disposed.</summary>
        /// <returns>A new transaction (nothing is sent yet).</returns>
        /// <exception cref="ObjectDisposedException">The client is disposed.</exception>
        public global::Slotlane.Transaction CreateTransaction()
        {
            if (_disposed) throw new ObjectDisposedException(nameof(SlotlaneClient));
            return new global::Slotlane.Transaction(this);
        }

        /// <summary>Runs a transaction with <paramref name="keys"/> watched, retrying while it aborts: on one
        /// <see cref="Slotlane.Transaction"/>, WATCH the keys, then <paramref name="body"/> — it reads with the
        /// transaction (the reads are watched) and queues the transaction's commands on <c>tx.Multi()</c>'s
        /// pipeline (typed methods give <see cref="Reply{T}"/> handles) — then MULTI, the queue, EXEC (an
        /// empty one when the body never called Multi). When a watched key changed before EXEC
        /// (<see cref="SlotlaneWatchException"/>) or the slot moved (<see cref="SlotlaneWatchMovedException"/>:
        /// a new session on the new owner), it starts again from the WATCH; the body must therefore only
        /// act through the transaction. Any other exception (the body's too) ends it.</summary>
        /// <typeparam name="T">The body's value.</typeparam>
        /// <param name="keys">The keys to watch (strings, byte arrays...), of one slot (a <c>{hash tag}</c>).</param>
        /// <param name="body">Reads and queues; its value of the attempt that committed is returned.</param>
        /// <param name="maxAttempts">The most attempts before the last abort is thrown; 0: no limit.</param>
        /// <returns>The body's value of the committed attempt (EXEC's replies fill its Reply handles).</returns>
        /// <exception cref="ArgumentException">No keys, a null key, or a null body.</exception>
        /// <exception cref="SlotlaneClusterException">Keys of several slots (nothing sent).</exception>
        /// <exception cref="SlotlaneWatchException">Still aborted after <paramref name="maxAttempts"/> attempts.</exception>
        public T Transaction<T>(object[] keys, Func<global::Slotlane.Transaction, T> body, int maxAttempts = 0)
        {
            object[] replies;
            return RunTransaction(keys, body, maxAttempts, out replies);
        }

        /// <summary>As <see cref="Transaction{T}"/> for a body without a value: EXEC's replies, one per command
        /// the body queued on <c>tx.Multi()</c>'s pipeline.</summary>
        /// <param name="keys">The keys to watch, of one slot.</param>
        /// <param name="body">Reads and queues.</param>
        /// <param name="maxAttempts">The most attempts; 0: no limit.</param>
        /// <returns>EXEC's replies of the committed attempt.</returns>
        /// <exception cref="ArgumentException">No keys, a null key, or a null body.</exception>
        /// <exception cref="SlotlaneWatchException">Still aborted after <paramref name="maxAttempts"/> attempts.</exception>
        public object[] Transaction(object[] keys, Action<global::Slotlane.Transaction> body, int maxAttempts = 0)
        {
            if (body == null) throw new ArgumentNullException(nameof(body));
            object[] replies;
            RunTransaction<int>(keys, tx => { body(tx); return 0; }, maxAttempts, out replies);
            return replies;
        }

        private T RunTransaction<T>(object[] keys, Func<global::Slotlane.Transaction, T> body, int maxAttempts, out object[] replies)
        {
            if (body == null) throw new ArgumentNullException(nameof(body));
            if (keys == null || keys.Length == 0) throw new ArgumentException("a transaction needs at least one key to watch", nameof(keys));
            if (maxAttempts < 0) throw new ArgumentOutOfRangeException(nameof(maxAttempts), maxAttempts, "0 (no limit) or more");
            using (var tx = CreateTransaction())
            {
                for (int attempt = 1; ; attempt++)
                {
                    try
                    {
                        tx.Watch(keys);
                        T value = body(tx);
                        replies = tx.ExecuteQueued();
                        return value;
                    }
                    catch (SlotlaneWatchException) when (maxAttempts == 0 || attempt < maxAttempts)
                    {
                        tx.Reset();
                    }
                }
            }
        }

        /// <summary>Re-reads the cluster's slot map now, on every pooled handle that is idle.</summary>
        public void Refresh()
        {
            CoreHandle h = Rent();
            try
            {
                int rc = Native.sl_client_refresh(h.Client);
                if (rc != 0) throw Errors.FromCode(rc, h.ErrMsg());
            }
            finally { Return(h); }
        }

        /// <summary>The counters of every pooled handle, summed. Waits until no command is running.</summary>
        /// <returns>A snapshot.</returns>
        public ClientStats GetStats()
        {
            var st = new ClientStats();
            lock (_lock)
            {
                if (_disposed) throw new ObjectDisposedException(nameof(SlotlaneClient));
                _draining++;
                try
                {
                    while (_idle.Count < _all.Count || _creating > 0)
                    {
                        _waiters++;
                        try { Monitor.Wait(_lock); }
                        finally { _waiters--; }
                    }
                    foreach (var h in _all)
                    {
                        SlStats s = h.Stats();
                        st.Commands += (long)s.commands;
                        st.Moved += (long)s.moved;
                        st.Ask += (long)s.ask;
                        st.TryAgain += (long)s.tryagain;
                        st.Refreshes += (long)s.refreshes;
                        st.Connects += (long)s.connects;
                        st.Reconnects += (long)s.reconnects;
                        st.BytesWritten += (long)s.bytes_written;
                        st.BytesRead += (long)s.bytes_read;
                        st.Nodes = Math.Max(st.Nodes, (long)s.nodes);
                        st.Failovers += (long)s.failovers;
                        st.RefreshesMoved += (long)s.refreshes_moved;
                        st.RefreshesLost += (long)s.refreshes_lost;
                        st.Retries += (long)s.retries;
                        st.ReplicaReads += (long)s.replica_reads;
                        st.NodesDown += (long)s.nodes_down;
                    }
                    st.Handles = _all.Count;
                }
                finally
                {
                    _draining--;
                    Monitor.PulseAll(_lock);
                }
            }
            return st;
        }

        /// <summary>Closes every connection. Commands running on other threads finish first on their handles,
        /// which are then freed; later calls raise <see cref="ObjectDisposedException"/>.</summary>
        public void Dispose()
        {
            List<CoreHandle> free;
            lock (_lock)
            {
                if (_disposed) return;
                _disposed = true;
                free = new List<CoreHandle>(_idle);
                foreach (var h in free) _all.Remove(h);
                _idle.Clear();
                Monitor.PulseAll(_lock);
            }
            DisposeAsyncEngine();
            foreach (var h in free) h.Dispose();
            // a handle still running on another thread reports into a removed sink: its events are dropped
            ClientEvents.Unregister(_options.EventSinkId);
        }

        /// <summary>Makes a <see cref="Subscriber"/> for this client's servers, with the client's options
        /// (URL or seeds, mode, credentials, protocol, TLS, timeouts): connections of its own, never the
        /// client's command connections. Dispose it on its own (it outlives the client if need be).</summary>
        /// <param name="options">The subscriber's queue bound and health check; null: the defaults.</param>
        /// <returns>A connected subscriber with nothing subscribed.</returns>
        /// <exception cref="SlotlaneConnectionException">No server could be reached.</exception>
        public Subscriber CreateSubscriber(SubscriberOptions options = null)
        {
            if (_disposed) throw new ObjectDisposedException(nameof(SlotlaneClient));
            return Subscriber.Create(_options, options);
        }
    }
}
