// The node list, cluster-wide SCAN and scripts: thin over the core's sl_client_nodes,
// sl_scan_* and sl_batch_run_script, which hold the logic.
using System;
using System.Collections;
using System.Collections.Generic;
using System.Runtime.InteropServices;
using System.Text;
using System.Threading;
using System.Threading.Tasks;

namespace Slotlane
{
    /// <summary>One node of a client's current topology (<see cref="List"/>).</summary>
    public sealed class ClusterNode
    {
        /// <summary>"host:port": a <see cref="Route"/> node target, so a per-node command is one loop.</summary>
        public string Address { get; }
        /// <summary>A primary (it serves slots), else a replica.</summary>
        public bool IsPrimary { get; }
        /// <summary>A replica's primary ("host:port"); null for a primary.</summary>
        public string PrimaryAddress { get; }
        /// <summary>The slot ranges served, first and last inclusive (empty for a replica).</summary>
        public IReadOnlyList<int[]> Slots { get; }

        internal ClusterNode(string address, bool primary, string primaryAddress, List<int[]> slots)
        {
            Address = address;
            IsPrimary = primary;
            PrimaryAddress = primaryAddress;
            Slots = slots;
        }

        /// <summary>The current topology: every primary (in the order of all-primaries replies) with its
        /// slot ranges, then the replicas the slot map names. Nothing is sent.</summary>
        /// <param name="client">The client.</param>
        /// <returns>The nodes.</returns>
        public static unsafe IReadOnlyList<ClusterNode> List(SlotlaneClient client)
        {
            CoreHandle h = client.Rent();
            try
            {
                IntPtr list;
                UIntPtr n;
                int rc = Native.sl_client_nodes(h.Client, &list, &n);
                if (rc != 0) throw Errors.FromCode(rc, h.ErrMsg());
                try
                {
                    var raw = (SlNodeInfo*)list;
                    int count = (int)n;
                    var addr = new string[count];
                    for (int i = 0; i < count; i++) addr[i] = Native.PtrToUtf8(raw[i].addr);
                    var result = new List<ClusterNode>(count);
                    for (int i = 0; i < count; i++)
                    {
                        var slots = new List<int[]>();
                        var r = (ushort*)raw[i].ranges;
                        for (long k = 0; k < (long)raw[i].nranges; k++) slots.Add(new int[] { r[2 * k], r[2 * k + 1] });
                        int p = raw[i].primary;
                        result.Add(new ClusterNode(addr[i], raw[i].is_primary != 0, p >= 0 && p < count ? addr[p] : null, slots));
                    }
                    return result;
                }
                finally { Native.sl_client_nodes_free(h.Client, list); }
            }
            finally { client.Return(h); }
        }

        /// <summary>"primary host:port" or "replica host:port".</summary>
        public override string ToString() { return (IsPrimary ? "primary " : "replica ") + Address; }
    }

    /// <summary>Every key of a cluster (every primary; the one node in plain mode), as an
    /// <c>IEnumerable&lt;byte[]&gt;</c>: <c>foreach (var key in ClusterScan.Keys(client, "user:*"))</c>. The
    /// core tracks slots, not node cursors: across a reshard or a failover every key that existed
    /// throughout is returned at least once, and a key of a moved slot may come twice. An
    /// enumeration holds one core handle of the client until it ends or is disposed.</summary>
    public static class ClusterScan
    {
        /// <summary>The keys, filtered.</summary>
        /// <param name="client">The client.</param>
        /// <param name="match">A glob pattern (MATCH), or null for every key.</param>
        /// <param name="count">The per-call hint (COUNT), 0 for the server's default.</param>
        /// <param name="type">A type name (TYPE: "string", "hash"...), or null for any.</param>
        /// <returns>The keys.</returns>
        public static IEnumerable<byte[]> Keys(SlotlaneClient client, string match = null, int count = 0, string type = null)
        {
            if (client == null) throw new ArgumentNullException(nameof(client));
            if (count < 0) throw new ArgumentException("count must not be negative", nameof(count));
            if (match != null && match.Length == 0) throw new ArgumentException("an empty MATCH pattern", nameof(match));
            return new Enumerable(client, match, count, type);
        }

        /// <summary>The same scan paged asynchronously (C# 7.2 has no <c>IAsyncEnumerable</c>): each
        /// <see cref="ScanCursor.NextPageAsync"/> runs one page on the core's loop thread, so no thread waits
        /// on the network. <c>using (var cur = ClusterScan.Cursor(client, "user:*")) while (!cur.IsDone)
        /// foreach (byte[] key in await cur.NextPageAsync()) ...</c>. The keys are those
        /// <see cref="Keys"/> returns (the same guarantees across reshards and failovers).</summary>
        /// <param name="client">The client (its asynchronous connections are used).</param>
        /// <param name="match">A glob pattern (MATCH), or null for every key.</param>
        /// <param name="count">The per-call hint (COUNT), 0 for the server's default.</param>
        /// <param name="type">A type name (TYPE: "string", "hash"...), or null for any.</param>
        /// <returns>A cursor before its first page; dispose it (it frees the core's iterator).</returns>
        /// <exception cref="ArgumentException">A negative count, an empty pattern, a NUL in the type.</exception>
        /// <exception cref="ObjectDisposedException">The client is disposed.</exception>
        public static ScanCursor Cursor(SlotlaneClient client, string match = null, int count = 0, string type = null)
        {
            if (client == null) throw new ArgumentNullException(nameof(client));
            if (count < 0) throw new ArgumentException("count must not be negative", nameof(count));
            if (match != null && match.Length == 0) throw new ArgumentException("an empty MATCH pattern", nameof(match));
            if (type != null && (type.Length == 0 || type.IndexOf('\0') >= 0)) throw new ArgumentException("an empty TYPE or one with a NUL", nameof(type));
            return new ScanCursor(client.Async(), match, count, type);
        }

        private sealed class Enumerable : IEnumerable<byte[]>
        {
            private readonly SlotlaneClient _client;
            private readonly string _match, _type;
            private readonly int _count;
            internal Enumerable(SlotlaneClient c, string match, int count, string type) { _client = c; _match = match; _count = count; _type = type; }
            public IEnumerator<byte[]> GetEnumerator() { return new Enumerator(_client, _match, _count, _type); }
            IEnumerator IEnumerable.GetEnumerator() { return GetEnumerator(); }
        }

        private sealed unsafe class Enumerator : IEnumerator<byte[]>
        {
            private readonly SlotlaneClient _client;
            private CoreHandle _h;
            private IntPtr _scan;
            private readonly Queue<byte[]> _page = new Queue<byte[]>();
            private bool _done;
            private byte[] _current;

            internal Enumerator(SlotlaneClient c, string match, int count, string type)
            {
                _client = c;
                byte[] m = match == null ? null : Encoding.UTF8.GetBytes(match);
                byte[] t = type == null ? null : Encoding.UTF8.GetBytes(type + "\0");
                _h = c.Rent();
                try
                {
                    fixed (byte* mp = m)
                    fixed (byte* tp = t)
                    {
                        SlScanOptions o;
                        o.version = Native.SL_SCAN_OPTIONS_VERSION;
                        o.size = (uint)sizeof(SlScanOptions);
                        o.match = (IntPtr)mp;
                        o.match_len = (UIntPtr)(m == null ? 0 : m.Length);
                        o.type = (IntPtr)tp;
                        o.count = count;
                        IntPtr s;
                        int rc = Native.sl_scan_new(_h.Client, &o, &s);
                        if (rc != 0) throw Errors.FromCode(rc, _h.ErrMsg());
                        _scan = s;
                    }
                }
                catch
                {
                    c.Return(_h);
                    _h = null;
                    throw;
                }
            }

            public byte[] Current { get { return _current; } }
            object IEnumerator.Current { get { return _current; } }

            public bool MoveNext()
            {
                while (_page.Count == 0 && !_done) Fetch();
                if (_page.Count == 0) return false;
                _current = _page.Dequeue();
                return true;
            }

            private void Fetch()
            {
                try
                {
                    int done;
                    int rc = Native.sl_scan_next(_scan, _h.Batch, &done);
                    if (rc != 0) throw Errors.FromCode(rc, _h.ErrMsg());
                    _done = done != 0;
                    UIntPtr n, dlen;
                    byte* data;
                    SlReply* recs = Native.sl_batch_replies(_h.Batch, &n, &data, &dlen);
                    for (long i = 1; i < (long)n; i++)
                    {
                        var k = new byte[recs[i].len];
                        if (k.Length > 0) Marshal.Copy((IntPtr)(data + (long)recs[i].offset), k, 0, k.Length);
                        _page.Enqueue(k);
                    }
                    if (_done) Dispose();
                }
                catch
                {
                    Dispose();
                    throw;
                }
            }

            public void Reset() { throw new NotSupportedException("a scan cannot be restarted: enumerate again"); }

            public void Dispose()
            {
                _done = true;
                if (_h != null)
                {
                    Native.sl_scan_free(_scan);
                    _scan = IntPtr.Zero;
                    _client.Return(_h);
                    _h = null;
                }
            }
        }
    }

    /// <summary>A cluster scan paged asynchronously, from <see cref="ClusterScan.Cursor"/>: every primary's keys
    /// (the one node's in plain mode), page by page, each page's steps (SCAN, CLUSTER NODES, a map refresh
    /// after a failure) on the core's loop thread. A page may be empty before the end; the scan has ended
    /// when <see cref="IsDone"/> is true (later pages are empty). One page at a time; the cursor is used by
    /// one caller at a time.</summary>
    public sealed unsafe class ScanCursor : IDisposable
    {
        private static readonly IReadOnlyList<byte[]> Empty = new byte[0][];
        private readonly AsyncEngine _engine;
        private readonly object _lock = new object();
        private IntPtr _scan;
        private bool _inFlight, _disposed;
        private volatile bool _done;

        internal ScanCursor(AsyncEngine engine, string match, int count, string type)
        {
            _engine = engine;
            byte[] m = match == null ? null : Encoding.UTF8.GetBytes(match);
            byte[] t = type == null ? null : Encoding.UTF8.GetBytes(type + "\0");
            fixed (byte* mp = m)
            fixed (byte* tp = t)
            {
                SlScanOptions o;
                o.version = Native.SL_SCAN_OPTIONS_VERSION;
                o.size = (uint)sizeof(SlScanOptions);
                o.match = (IntPtr)mp;
                o.match_len = (UIntPtr)(m == null ? 0 : m.Length);
                o.type = (IntPtr)tp;
                o.count = count;
                _scan = engine.NewScan(&o); // the core copies the options
            }
        }

        /// <summary>True once every slot has been scanned: no later page holds a key.</summary>
        public bool IsDone { get { return _done; } }

        /// <summary>Fetches the next page of keys. The task completes on the thread pool with the page (possibly
        /// empty before the end; empty once <see cref="IsDone"/>), or faults with the page's
        /// <see cref="SlotlaneException"/> (the node failed again after the core's one retry, no node serves a
        /// slot...): the cursor stays usable and the next page tries again.</summary>
        /// <param name="cancellationToken">Cancels this page (<c>sl_batch_cancel</c>): the task is cancelled and
        /// the cursor stays usable; the core takes the interrupted node's pass up again from its start, so keys
        /// of that node already returned may come again (never one missed).</param>
        /// <returns>The page's keys.</returns>
        /// <exception cref="InvalidOperationException">A page is in flight: await it first (thrown at once).</exception>
        /// <exception cref="ObjectDisposedException">The cursor or its client is disposed (thrown at once).</exception>
        public Task<IReadOnlyList<byte[]>> NextPageAsync(CancellationToken cancellationToken = default(CancellationToken))
        {
            lock (_lock)
            {
                if (_disposed) throw new ObjectDisposedException(nameof(ScanCursor));
                if (_inFlight) throw new InvalidOperationException("a page of this scan is in flight: await it before asking for the next");
                if (_done) return Task.FromResult(Empty);
                _inFlight = true;
            }
            var op = new PageOp(this);
            try { _engine.SubmitScan(_scan, op, cancellationToken); }
            catch
            {
                op.Ended();
                throw;
            }
            return op.Tcs.Task;
        }

        private IReadOnlyList<byte[]> _page;
        private int _pos;

        /// <summary>The key <see cref="MoveNextAsync"/> moved to.</summary>
        public byte[] Current { get; private set; }

        /// <summary>Key by key over the pages (the shape of an async enumerator, so C# 8's <c>await foreach</c>
        /// takes the cursor through <see cref="GetAsyncEnumerator"/>): true with <see cref="Current"/> set, false
        /// at the end. Fetches the next page when the current one is used up. Use either this or
        /// <see cref="NextPageAsync"/> on one cursor, not both.</summary>
        /// <param name="cancellationToken">Cancels the page being fetched, as for <see cref="NextPageAsync"/>.</param>
        /// <returns>Whether there was another key.</returns>
        public Task<bool> MoveNextAsync(CancellationToken cancellationToken = default(CancellationToken))
        {
            if (TakeBuffered()) return s_true;
            if (_done) return s_false;
            return ScanCursorKeys.Next(this, cancellationToken);
        }

        private static readonly Task<bool> s_true = Task.FromResult(true), s_false = Task.FromResult(false);

        internal bool TakeBuffered()
        {
            if (_page == null || _pos >= _page.Count) return false;
            Current = _page[_pos++];
            return true;
        }

        internal void SetPage(IReadOnlyList<byte[]> page)
        {
            _page = page;
            _pos = 0;
        }

        /// <summary>The cursor itself, for C# 8's <c>await foreach (byte[] key in ClusterScan.Cursor(...))</c>.</summary>
        /// <param name="cancellationToken">Unused: pass a token to <see cref="MoveNextAsync"/> instead.</param>
        /// <returns>This cursor.</returns>
        public ScanCursor GetAsyncEnumerator(CancellationToken cancellationToken = default(CancellationToken)) { return this; }

        private void PageEnded()
        {
            lock (_lock)
            {
                _inFlight = false;
                if (_disposed) _engine.FreeScan(_scan);
            }
        }

        /// <summary>Frees the core's iterator (after the page in flight, if any, has completed).</summary>
        public void Dispose()
        {
            lock (_lock)
            {
                if (_disposed) return;
                _disposed = true;
                if (!_inFlight) _engine.FreeScan(_scan);
            }
        }

        private sealed class PageOp : AsyncOp
        {
            internal readonly TaskCompletionSource<IReadOnlyList<byte[]>> Tcs =
                new TaskCompletionSource<IReadOnlyList<byte[]>>(TaskCreationOptions.RunContinuationsAsynchronously);
            private readonly ScanCursor _c;
            private int _ended;

            internal PageOp(ScanCursor c) { _c = c; }

            internal void Ended() { if (Interlocked.Exchange(ref _ended, 1) == 0) _c.PageEnded(); }

            // On the dispatcher thread, the page in the batch (still the op's until this returns).
            internal override bool? CompleteRaw(int status, IntPtr batch)
            {
                if (status != 0)
                {
                    string msg = Native.PtrToUtf8(Native.sl_scan_errmsg(_c._scan));
                    Ended();
                    return Tcs.TrySetException(Errors.FromCode(status, msg));
                }
                UIntPtr n, dlen;
                byte* data;
                SlReply* recs = Native.sl_batch_replies(batch, &n, &data, &dlen);
                var keys = new List<byte[]>((int)Math.Max(0, (long)n - 1));
                for (long i = 1; i < (long)n; i++)
                {
                    var k = new byte[recs[i].len];
                    if (k.Length > 0) Marshal.Copy((IntPtr)(data + (long)recs[i].offset), k, 0, k.Length);
                    keys.Add(k);
                }
                if (Native.sl_scan_done(_c._scan) != 0) _c._done = true;
                Ended();
                return Tcs.TrySetResult(keys);
            }

            internal override unsafe bool Complete(SlReply* recs, long nrec, byte* data) { return false; } // CompleteRaw takes every page
            internal override bool Fail(Exception e) { Ended(); return Tcs.TrySetException(e); }
            internal override bool Cancel(CancellationToken t) { Ended(); return Tcs.TrySetCanceled(t); }
        }
    }

    /// <summary>ScanCursor.MoveNextAsync's awaiting part (an async method cannot be in the unsafe class).</summary>
    internal static class ScanCursorKeys
    {
        internal static async Task<bool> Next(ScanCursor cur, CancellationToken ct)
        {
            while (true)
            {
                if (cur.TakeBuffered()) return true;
                if (cur.IsDone) return false;
                cur.SetPage(await cur.NextPageAsync(ct).ConfigureAwait(false));
            }
        }
    }

    /// <summary>A Lua script run by its SHA1 (<c>Script.Create(client, src).Run(keys, args)</c>): EVALSHA, and a
    /// node that answers NOSCRIPT gets the script loaded and the command once more — in the core.</summary>
    public sealed class Script
    {
        private readonly SlotlaneClient _client;
        private readonly byte[] _body;

        /// <summary>The SHA1 (40 lowercase hex digits).</summary>
        public string Sha { get; }

        private unsafe Script(SlotlaneClient client, byte[] body)
        {
            _client = client;
            _body = body;
            byte* sha = stackalloc byte[41];
            fixed (byte* b = body) Native.sl_script_sha1(b, (UIntPtr)body.Length, sha);
            Sha = Native.PtrToUtf8((IntPtr)sha);
        }

        /// <summary>Binds a script to a client.</summary>
        /// <param name="client">The client.</param>
        /// <param name="src">The script's body.</param>
        /// <returns>The script.</returns>
        public static Script Create(SlotlaneClient client, string src)
        {
            if (client == null) throw new ArgumentNullException(nameof(client));
            if (src == null) throw new ArgumentNullException(nameof(src));
            return new Script(client, Encoding.UTF8.GetBytes(src));
        }

        /// <summary>Runs the script (EVALSHA).</summary>
        /// <param name="keys">KEYS.</param>
        /// <param name="args">ARGV.</param>
        /// <returns>The reply, as <see cref="SlotlaneClient.Execute(object[])"/> returns it.</returns>
        public object Run(object[] keys, params object[] args) { return Call("EVALSHA", keys, args); }

        /// <summary>Runs the script as a read-only one (EVALSHA_RO).</summary>
        /// <param name="keys">KEYS.</param>
        /// <param name="args">ARGV.</param>
        /// <returns>The reply.</returns>
        public object RunReadOnly(object[] keys, params object[] args) { return Call("EVALSHA_RO", keys, args); }

        private unsafe object Call(string name, object[] keys, object[] args)
        {
            keys = keys ?? new object[0];
            args = args ?? new object[0];
            var argv = new object[3 + keys.Length + args.Length];
            argv[0] = name;
            argv[1] = Sha;
            argv[2] = (long)keys.Length;
            Array.Copy(keys, 0, argv, 3, keys.Length);
            Array.Copy(args, 0, argv, 3 + keys.Length, args.Length);
            CoreHandle h = _client.Rent();
            object r;
            try
            {
                h.Cmd.Clear();
                h.Cmd.Append(argv);
                SlSizes sz;
                int rc;
                fixed (byte* b = _body)
                    rc = Native.sl_batch_run_script(h.Batch, b, (UIntPtr)_body.Length, h.Cmd.Ptr, (UIntPtr)h.Cmd.Length,
                                                    _client.TimeoutMs, h.Recs.Ptr, (UIntPtr)h.Recs.Capacity, h.Data.Ptr,
                                                    (UIntPtr)h.Data.Capacity, &sz);
                if (rc == (int)SlCode.SL_ETOOSMALL) rc = h.CopyOutGrown(ref sz);
                r = h.Finish(rc, ref sz, 1)[0];
            }
            finally { _client.Return(h); }
            return SlotlaneClient.ThrowIfError(r);
        }
    }
}
