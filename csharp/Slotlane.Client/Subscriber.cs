using System;
using System.Collections.Generic;
using System.Runtime.InteropServices;
using System.Text;
using System.Threading;
using System.Threading.Tasks;

namespace Slotlane
{
    /// <summary>What a subscription is (<c>sl_sub_kind</c>).</summary>
    public enum SubscriptionKind
    {
        /// <summary>SUBSCRIBE channel.</summary>
        Channel = 0,
        /// <summary>PSUBSCRIBE pattern.</summary>
        Pattern = 1,
        /// <summary>SSUBSCRIBE shard channel (on its slot's owner, followed across slot moves).</summary>
        Shard = 2,
    }

    /// <summary>What a <see cref="PubSubMessage"/> is (<c>sl_message_kind</c>): a message, a server's
    /// confirmation, or an event of the subscriber.</summary>
    public enum PubSubMessageKind
    {
        /// <summary>A message published on a subscribed channel: <see cref="PubSubMessage.Channel"/>, <see cref="PubSubMessage.Payload"/>.</summary>
        Message = 1,
        /// <summary>A message matched by a pattern: also <see cref="PubSubMessage.Pattern"/>.</summary>
        PMessage = 2,
        /// <summary>A message of a shard channel (SPUBLISH).</summary>
        SMessage = 3,
        /// <summary>The server confirmed the channel; <see cref="PubSubMessage.Count"/>: its subscriptions on that connection.</summary>
        Subscribe = 4,
        /// <summary>The server confirmed the pattern (in <see cref="PubSubMessage.Channel"/>).</summary>
        PSubscribe = 5,
        /// <summary>The server confirmed the shard channel.</summary>
        SSubscribe = 6,
        /// <summary>The channel is no longer subscribed (as asked).</summary>
        Unsubscribe = 7,
        /// <summary>The pattern is no longer subscribed.</summary>
        PUnsubscribe = 8,
        /// <summary>The shard channel is no longer subscribed.</summary>
        SUnsubscribe = 9,
        /// <summary>The channel (of <see cref="PubSubMessage.SubscriptionKind"/>) is subscribed again after a gap — a
        /// lost connection, a failover, a slot that moved: messages published in the gap were missed.</summary>
        Resubscribed = 10,
        /// <summary>The bounded queue was full: <see cref="PubSubMessage.Count"/> messages were dropped here (the
        /// newest ones: the policy is "drop newest, report").</summary>
        Overflow = 11,
        /// <summary>A subscriber connection broke (<see cref="PubSubMessage.PayloadText"/>: the node and why; an
        /// unanswered health-check PING counts): its subscriptions are in a gap until <see cref="Resubscribed"/>.</summary>
        ConnectionLost = 12,
        /// <summary>A server refused a subscription command (<see cref="PubSubMessage.PayloadText"/>: its error reply;
        /// <see cref="PubSubMessage.SubscriptionKind"/>: the kind asked).</summary>
        Error = 13,
    }

    /// <summary>One record of a <see cref="Subscriber"/>'s queue: a message, a confirmation or an event.</summary>
    public sealed class PubSubMessage
    {
        private static readonly byte[] s_empty = new byte[0];

        /// <summary>What the record is.</summary>
        public PubSubMessageKind Kind { get; private set; }
        /// <summary>The channel (for confirmations of patterns: the pattern), as bytes; empty for
        /// <see cref="PubSubMessageKind.Overflow"/>, <see cref="PubSubMessageKind.ConnectionLost"/> and <see cref="PubSubMessageKind.Error"/>.</summary>
        public byte[] ChannelBytes { get; private set; }
        /// <summary>The pattern that matched a <see cref="PubSubMessageKind.PMessage"/>, as bytes; else empty.</summary>
        public byte[] PatternBytes { get; private set; }
        /// <summary>The message's payload (binary-safe); the reason of a <see cref="PubSubMessageKind.ConnectionLost"/>
        /// or <see cref="PubSubMessageKind.Error"/>; else empty.</summary>
        public byte[] Payload { get; private set; }
        /// <summary>(Un)subscribe confirmations: the server's count of subscriptions on that connection;
        /// <see cref="PubSubMessageKind.Overflow"/>: the messages dropped; else 0.</summary>
        public long Count { get; private set; }
        /// <summary>For <see cref="PubSubMessageKind.Resubscribed"/> and <see cref="PubSubMessageKind.Error"/>: the kind of the subscription.</summary>
        public SubscriptionKind SubscriptionKind { get; private set; }

        /// <summary>The channel as UTF-8 text.</summary>
        public string Channel { get { return Encoding.UTF8.GetString(ChannelBytes); } }
        /// <summary>The pattern as UTF-8 text, or null when the record has none.</summary>
        public string Pattern { get { return Kind == PubSubMessageKind.PMessage ? Encoding.UTF8.GetString(PatternBytes) : null; } }
        /// <summary>The payload as UTF-8 text.</summary>
        public string PayloadText { get { return Encoding.UTF8.GetString(Payload); } }
        /// <summary>True for a published message (<see cref="PubSubMessageKind.Message"/>, <see cref="PubSubMessageKind.PMessage"/>,
        /// <see cref="PubSubMessageKind.SMessage"/>); false for confirmations and events.</summary>
        public bool IsMessage { get { return Kind <= PubSubMessageKind.SMessage; } }

        internal static unsafe PubSubMessage FromRecord(SlMessage* m, byte* data)
        {
            byte* p = data + (long)m->offset;
            var r = new PubSubMessage
            {
                Kind = (PubSubMessageKind)m->kind,
                Count = m->count,
                SubscriptionKind = (SubscriptionKind)(m->flags % 3),
                ChannelBytes = Copy(p, m->channel_len),
                PatternBytes = Copy(p + m->channel_len, m->pattern_len),
                Payload = Copy(p + m->channel_len + m->pattern_len, m->payload_len),
            };
            return r;
        }

        private static unsafe byte[] Copy(byte* p, uint n)
        {
            if (n == 0) return s_empty;
            var b = new byte[n];
            Marshal.Copy((IntPtr)p, b, 0, (int)n);
            return b;
        }

        /// <summary>The record for logs: kind, channel, pattern and a payload of text.</summary>
        /// <returns>The text.</returns>
        public override string ToString()
        {
            var sb = new StringBuilder(Kind.ToString());
            if (ChannelBytes.Length > 0) sb.Append(" channel=").Append(Channel);
            if (Kind == PubSubMessageKind.PMessage) sb.Append(" pattern=").Append(Pattern);
            if (Payload.Length > 0) sb.Append(" payload=").Append(Payload.Length <= 64 ? PayloadText : Payload.Length + " bytes");
            if (Count != 0) sb.Append(" count=").Append(Count);
            return sb.ToString();
        }
    }

    /// <summary>The argument of <see cref="Subscriber.MessageReceived"/>.</summary>
    public sealed class PubSubMessageEventArgs : EventArgs
    {
        /// <summary>The record.</summary>
        public PubSubMessage Message { get; private set; }

        internal PubSubMessageEventArgs(PubSubMessage m) { Message = m; }
    }

    /// <summary>Options of a <see cref="Subscriber"/> (<c>sl_subscriber_options</c>).</summary>
    public sealed class SubscriberOptions
    {
        /// <summary>Queued message bytes (channel + pattern + payload + 32 per record) past which new messages are
        /// dropped and counted in an <see cref="PubSubMessageKind.Overflow"/> record (events are always queued).
        /// Must be positive; default 64 MiB.</summary>
        public long MaxQueueBytes { get; set; } = 64L << 20;
        /// <summary>A subscriber connection that read nothing for this long is sent a PING; no reply within as long
        /// again: it is dead (<see cref="PubSubMessageKind.ConnectionLost"/>, reconnect). <see cref="TimeSpan.Zero"/>:
        /// never. Default 30 s.</summary>
        public TimeSpan HealthCheckInterval { get; set; } = TimeSpan.FromSeconds(30);

        internal SlSubscriberOptions ToNative()
        {
            if (MaxQueueBytes <= 0) throw new ArgumentOutOfRangeException("options", MaxQueueBytes, "SubscriberOptions.MaxQueueBytes must be positive");
            if (HealthCheckInterval < TimeSpan.Zero || HealthCheckInterval.TotalMilliseconds > int.MaxValue)
                throw new ArgumentOutOfRangeException("options", HealthCheckInterval, "SubscriberOptions.HealthCheckInterval must be zero (never) or positive and under 24 days");
            var so = new SlSubscriberOptions();
            unsafe { so.size = (uint)sizeof(SlSubscriberOptions); }
            so.version = Native.SL_SUBSCRIBER_OPTIONS_VERSION;
            so.max_queue_bytes = (ulong)MaxQueueBytes;
            so.health_check_interval_ms = HealthCheckInterval == TimeSpan.Zero ? -1 : Math.Max(1, (int)Math.Ceiling(HealthCheckInterval.TotalMilliseconds));
            return so;
        }
    }

    /// <summary>Counters of a <see cref="Subscriber"/> (<c>sl_subscriber_stats</c>).</summary>
    public sealed class SubscriberStats
    {
        /// <summary>Messages queued (message, pmessage, smessage).</summary>
        public long Messages { get; internal set; }
        /// <summary>Messages dropped by the queue bound.</summary>
        public long Dropped { get; internal set; }
        /// <summary><see cref="PubSubMessageKind.ConnectionLost"/> records.</summary>
        public long ConnectionLosses { get; internal set; }
        /// <summary><see cref="PubSubMessageKind.Resubscribed"/> records.</summary>
        public long Resubscribed { get; internal set; }
        /// <summary>Health-check PINGs sent.</summary>
        public long Pings { get; internal set; }
        /// <summary>Topology refreshes the subscriber asked for.</summary>
        public long Refreshes { get; internal set; }
        /// <summary>Subscriptions the servers confirm now.</summary>
        public long Confirmed { get; internal set; }
        /// <summary>Bytes in the queue now.</summary>
        public long QueuedBytes { get; internal set; }
        /// <summary>Bytes read from the subscriber's connections.</summary>
        public long BytesRead { get; internal set; }

        /// <summary>The counters as text.</summary>
        /// <returns>The text.</returns>
        public override string ToString()
        {
            return "messages=" + Messages + " dropped=" + Dropped + " connection_losses=" + ConnectionLosses + " resubscribed=" + Resubscribed +
                   " pings=" + Pings + " refreshes=" + Refreshes + " confirmed=" + Confirmed + " queued_bytes=" + QueuedBytes + " bytes_read=" + BytesRead;
        }
    }

    /// <summary>Pub/sub over the core's subscriber (<c>sl_subscriber</c>): connections and a thread of its own
    /// (never the command connections). Say what you want subscribed — <see cref="Subscribe(string[])"/>,
    /// <see cref="PSubscribe(string[])"/>, <see cref="SSubscribe(string[])"/> — and the core keeps the servers equal
    /// to it across reconnects, failovers and slot moves, reporting each gap in-band
    /// (<see cref="PubSubMessageKind.Resubscribed"/>, <see cref="PubSubMessageKind.ConnectionLost"/>,
    /// <see cref="PubSubMessageKind.Overflow"/>). Records are read in batches from the core's bounded queue in one of
    /// three ways: <see cref="Poll(TimeSpan)"/> (blocking), <see cref="ReceiveAsync(CancellationToken)"/>, or the
    /// <see cref="MessageReceived"/> event (a listener thread). Thread-safe. Publish with the client's
    /// <c>Publish</c> / <c>Spublish</c>. Dispose it to close its connections.</summary>
    public sealed unsafe class Subscriber : IDisposable
    {
        private const int Batch = 256;
        private const int SliceMs = 250;   // native waits are sliced: Mono cannot stop a thread inside a P/Invoke at exit

        private IntPtr _sub;
        private readonly object _lock = new object();       // state, pending, waiters, refs
        private readonly object _drainLock = new object();  // one drain at a time: pending keeps the queue's order
        private readonly Queue<PubSubMessage> _pending = new Queue<PubSubMessage>();
        private readonly LinkedList<TaskCompletionSource<PubSubMessage>> _waiters = new LinkedList<TaskCompletionSource<PubSubMessage>>();
        private EventHandler<PubSubMessageEventArgs> _handler;
        private Thread _pump;
        private int _refs = 1;          // the owner's reference plus one per native call in progress
        private bool _disposed;
        private bool _closed;           // Close was called
        private bool _ended;            // a drain said: closed and empty
        private SlMessage* _msgs;
        private readonly NativeBuffer _data = new NativeBuffer(1 << 16);
        private readonly TlsConfig _tls;    // kept while the subscriber lives
        internal int InDrain;           // threads inside sl_subscriber_drain now (the tests wait on it)

        private Subscriber(IntPtr sub, TlsConfig tls)
        {
            _sub = sub;
            _tls = tls;
            _msgs = (SlMessage*)Marshal.AllocHGlobal(Batch * sizeof(SlMessage));
        }

        /// <summary>Connects a subscriber to the servers of <paramref name="client"/> (URL or seeds, mode,
        /// credentials, protocol, TLS, timeouts; the command timeout is not used) and discovers the topology now.</summary>
        /// <param name="client">Where and how to connect.</param>
        /// <param name="options">Queue bound and health check; null: the defaults.</param>
        /// <returns>A connected subscriber with nothing subscribed.</returns>
        /// <exception cref="ArgumentException">A bad option.</exception>
        /// <exception cref="SlotlaneConnectionException">No server could be reached.</exception>
        /// <exception cref="SlotlaneClusterException">Cluster discovery failed.</exception>
        public static Subscriber Connect(ClientOptions client, SubscriberOptions options = null)
        {
            if (client == null) throw new ArgumentNullException(nameof(client));
            client = client.Clone();
            client.OnEvent = null;  // the subscriber reports in-band
            client.Validate();
            if (client.Tls != null) client.TlsRef = client.Tls.Build();
            return Create(client, options);
        }

        /// <summary>Connects a subscriber to a URL with default options.</summary>
        /// <param name="url">Where to connect (as <see cref="ClientOptions.Url"/>).</param>
        /// <returns>A connected subscriber.</returns>
        public static Subscriber Connect(string url)
        {
            if (url == null) throw new ArgumentNullException(nameof(url));
            return Connect(new ClientOptions { Url = url });
        }

        // o: validated, its TlsRef built
        internal static Subscriber Create(ClientOptions o, SubscriberOptions options)
        {
            SlSubscriberOptions so = (options ?? new SubscriberOptions()).ToNative();
            using (var co = new CoreOptions(o))
            {
                co.Value.on_event = IntPtr.Zero;
                co.Value.on_event_ctx = IntPtr.Zero;
                byte* err = stackalloc byte[512];
                err[0] = 0;
                IntPtr sub;
                int rc;
                fixed (SlClientOptions* cp = &co.Value)
                    rc = Native.sl_subscriber_new(&sub, cp, &so, err, (UIntPtr)512);
                if (rc != 0) throw Errors.FromCode(rc, Native.PtrToUtf8((IntPtr)err));
                return new Subscriber(sub, o.TlsRef);
            }
        }

        // ---------------------------------------------------------------- the native handle's lifetime

        private bool Enter()
        {
            lock (_lock)
            {
                if (_disposed) return false;
                _refs++;
                return true;
            }
        }

        private void Leave()
        {
            bool free;
            lock (_lock) free = --_refs == 0;
            if (free) Free();
        }

        private void Free()
        {
            IntPtr s = _sub;
            _sub = IntPtr.Zero;
            if (s != IntPtr.Zero) Native.sl_subscriber_free(s);
            if (_msgs != null) { Marshal.FreeHGlobal((IntPtr)_msgs); _msgs = null; }
            _data.Dispose();
            GC.KeepAlive(_tls);
        }

        // ---------------------------------------------------------------- subscriptions

        /// <summary>SUBSCRIBE channels (UTF-8). Subscribing what is already subscribed does nothing; the server's
        /// confirmation comes as a <see cref="PubSubMessageKind.Subscribe"/> record.</summary>
        /// <param name="channels">One or more channel names.</param>
        /// <exception cref="ArgumentException">No channel, or a null one.</exception>
        /// <exception cref="ObjectDisposedException">The subscriber is disposed.</exception>
        /// <exception cref="InvalidOperationException">The subscriber is closed (<see cref="Close"/>).</exception>
        public void Subscribe(params string[] channels) { Change(true, SubscriptionKind.Channel, Names(channels, true)); }

        /// <summary>SUBSCRIBE binary channel names.</summary>
        /// <param name="channel">A name (binary-safe).</param>
        /// <param name="more">More names.</param>
        public void Subscribe(byte[] channel, params byte[][] more) { Change(true, SubscriptionKind.Channel, Names(Join(channel, more), true)); }

        /// <summary>PSUBSCRIBE glob-style patterns; messages that match come as <see cref="PubSubMessageKind.PMessage"/>.</summary>
        /// <param name="patterns">One or more patterns.</param>
        public void PSubscribe(params string[] patterns) { Change(true, SubscriptionKind.Pattern, Names(patterns, true)); }

        /// <summary>PSUBSCRIBE binary patterns.</summary>
        /// <param name="pattern">A name (binary-safe).</param>
        /// <param name="more">More names.</param>
        public void PSubscribe(byte[] pattern, params byte[][] more) { Change(true, SubscriptionKind.Pattern, Names(Join(pattern, more), true)); }

        /// <summary>SSUBSCRIBE shard channels: each on its slot's owner (in a cluster), followed across slot moves.</summary>
        /// <param name="channels">One or more shard channel names.</param>
        public void SSubscribe(params string[] channels) { Change(true, SubscriptionKind.Shard, Names(channels, true)); }

        /// <summary>SSUBSCRIBE binary shard channel names.</summary>
        /// <param name="channel">A name (binary-safe).</param>
        /// <param name="more">More names.</param>
        public void SSubscribe(byte[] channel, params byte[][] more) { Change(true, SubscriptionKind.Shard, Names(Join(channel, more), true)); }

        /// <summary>UNSUBSCRIBE these channels; none: every channel. Each comes back as a
        /// <see cref="PubSubMessageKind.Unsubscribe"/> record; names not subscribed are ignored.</summary>
        /// <param name="channels">Channel names, or none.</param>
        public void Unsubscribe(params string[] channels) { Change(false, SubscriptionKind.Channel, Names(channels, false)); }

        /// <summary>UNSUBSCRIBE binary channel names.</summary>
        /// <param name="channel">A name (binary-safe).</param>
        /// <param name="more">More names.</param>
        public void Unsubscribe(byte[] channel, params byte[][] more) { Change(false, SubscriptionKind.Channel, Names(Join(channel, more), true)); }

        /// <summary>PUNSUBSCRIBE these patterns; none: every pattern.</summary>
        /// <param name="patterns">Patterns, or none.</param>
        public void PUnsubscribe(params string[] patterns) { Change(false, SubscriptionKind.Pattern, Names(patterns, false)); }

        /// <summary>PUNSUBSCRIBE binary patterns.</summary>
        /// <param name="pattern">A name (binary-safe).</param>
        /// <param name="more">More names.</param>
        public void PUnsubscribe(byte[] pattern, params byte[][] more) { Change(false, SubscriptionKind.Pattern, Names(Join(pattern, more), true)); }

        /// <summary>SUNSUBSCRIBE these shard channels; none: every shard channel.</summary>
        /// <param name="channels">Shard channel names, or none.</param>
        public void SUnsubscribe(params string[] channels) { Change(false, SubscriptionKind.Shard, Names(channels, false)); }

        /// <summary>SUNSUBSCRIBE binary shard channel names.</summary>
        /// <param name="channel">A name (binary-safe).</param>
        /// <param name="more">More names.</param>
        public void SUnsubscribe(byte[] channel, params byte[][] more) { Change(false, SubscriptionKind.Shard, Names(Join(channel, more), true)); }

        private static byte[][] Names(string[] names, bool needOne)
        {
            if (names == null) throw new ArgumentNullException(nameof(names));
            if (needOne && names.Length == 0) throw new ArgumentException("name at least one channel or pattern", nameof(names));
            var r = new byte[names.Length][];
            for (int i = 0; i < names.Length; i++)
            {
                if (names[i] == null) throw new ArgumentException("a channel or pattern is null", nameof(names));
                r[i] = Encoding.UTF8.GetBytes(names[i]);
            }
            return r;
        }

        private static byte[][] Join(byte[] first, byte[][] more)
        {
            if (more == null) throw new ArgumentNullException(nameof(more));
            var all = new byte[more.Length + 1][];
            all[0] = first;
            Array.Copy(more, 0, all, 1, more.Length);
            return all;
        }

        private static byte[][] Names(byte[][] names, bool needOne)
        {
            if (names == null) throw new ArgumentNullException(nameof(names));
            if (needOne && names.Length == 0) throw new ArgumentException("name at least one channel or pattern", nameof(names));
            foreach (byte[] n in names)
                if (n == null) throw new ArgumentException("a channel or pattern is null", nameof(names));
            return names;
        }

        private void Change(bool subscribe, SubscriptionKind kind, byte[][] names)
        {
            if (!Enter()) throw new ObjectDisposedException(nameof(Subscriber));
            try
            {
                if (!subscribe && names.Length == 0)
                {
                    Check(Native.sl_subscriber_unsubscribe(_sub, (int)kind, null, UIntPtr.Zero), "unsubscribe");
                    return;
                }
                foreach (byte[] n in names)
                {
                    byte dummy = 0;
                    fixed (byte* p0 = n)
                    {
                        byte* p = n.Length == 0 ? &dummy : p0;  // an empty name is a name, not "all"
                        int rc = subscribe ? Native.sl_subscriber_subscribe(_sub, (int)kind, p, (UIntPtr)n.Length)
                                           : Native.sl_subscriber_unsubscribe(_sub, (int)kind, p, (UIntPtr)n.Length);
                        Check(rc, subscribe ? "subscribe" : "unsubscribe");
                    }
                }
            }
            finally { Leave(); }
        }

        private static void Check(int rc, string what)
        {
            if (rc == 0) return;
            if (rc == (int)SlCode.SL_ESTATE) throw new InvalidOperationException(what + ": the subscriber is closed");
            throw Errors.FromCode(rc, what + ": " + Native.PtrToUtf8(Native.sl_strerror(rc)));
        }

        // ---------------------------------------------------------------- reading

        /// <summary>The next record, waiting up to <paramref name="timeout"/> for one
        /// (<see cref="Timeout.InfiniteTimeSpan"/>: no limit; <see cref="TimeSpan.Zero"/>: no wait). Records are taken
        /// from the core's queue in batches.</summary>
        /// <param name="timeout">How long to wait.</param>
        /// <returns>The record; null when none came in time, or when the subscriber is closed (or disposed) and its
        /// queue is empty — a <see cref="Close"/> from another thread makes a waiting poll return.</returns>
        /// <exception cref="InvalidOperationException">A <see cref="MessageReceived"/> handler takes the records.</exception>
        public PubSubMessage Poll(TimeSpan timeout)
        {
            int ms = TimeoutMs(timeout);
            lock (_lock)
            {
                if (_handler != null) throw new InvalidOperationException("a MessageReceived handler takes this subscriber's records: Poll cannot");
                if (_pending.Count > 0) return _pending.Dequeue();
            }
            lock (_drainLock)
            {
                lock (_lock) if (_pending.Count > 0) return _pending.Dequeue();
                Fill(ms);
                lock (_lock) return _pending.Count > 0 ? _pending.Dequeue() : null;
            }
        }

        /// <summary>Waits for the next record without blocking a thread (the subscriber's listener thread drains the
        /// core's queue while someone waits).</summary>
        /// <param name="cancellationToken">Stops the wait: the task is then cancelled and no record is lost.</param>
        /// <returns>The record, or null once the subscriber is closed and its queue is empty.</returns>
        /// <exception cref="InvalidOperationException">A <see cref="MessageReceived"/> handler takes the records (thrown at once).</exception>
        public Task<PubSubMessage> ReceiveAsync(CancellationToken cancellationToken = default(CancellationToken))
        {
            if (cancellationToken.IsCancellationRequested) return Task.FromCanceled<PubSubMessage>(cancellationToken);
            TaskCompletionSource<PubSubMessage> tcs;
            LinkedListNode<TaskCompletionSource<PubSubMessage>> node;
            lock (_lock)
            {
                if (_handler != null) throw new InvalidOperationException("a MessageReceived handler takes this subscriber's records: ReceiveAsync cannot");
                if (_pending.Count > 0) return Task.FromResult(_pending.Dequeue());
                if (_disposed || _ended) return Task.FromResult<PubSubMessage>(null);
                tcs = new TaskCompletionSource<PubSubMessage>(TaskCreationOptions.RunContinuationsAsynchronously);
                node = _waiters.AddLast(tcs);
                StartPump();
                Monitor.PulseAll(_lock);
            }
            if (cancellationToken.CanBeCanceled)
            {
                CancellationTokenRegistration reg = cancellationToken.Register(() =>
                {
                    lock (_lock) if (node.List != null) _waiters.Remove(node);
                    tcs.TrySetCanceled(cancellationToken);
                });
                tcs.Task.ContinueWith(t => reg.Dispose(), TaskContinuationOptions.ExecuteSynchronously);
            }
            return tcs.Task;
        }

        /// <summary>Raised for every record (messages, confirmations, events) on the subscriber's listener thread,
        /// one at a time in the queue's order; adding the first handler starts that thread. While a handler is
        /// attached, <see cref="Poll(TimeSpan)"/> and <see cref="ReceiveAsync(CancellationToken)"/> refuse. The sender is
        /// the subscriber; a handler may call it (and dispose it). An exception a handler throws is written to
        /// <see cref="System.Diagnostics.Trace"/> and the next record is delivered.</summary>
        public event EventHandler<PubSubMessageEventArgs> MessageReceived
        {
            add
            {
                lock (_lock)
                {
                    if (_disposed) throw new ObjectDisposedException(nameof(Subscriber));
                    _handler += value;
                    StartPump();
                    Monitor.PulseAll(_lock);
                }
            }
            remove
            {
                lock (_lock) _handler -= value;
            }
        }

        private static int TimeoutMs(TimeSpan t)
        {
            if (t == Timeout.InfiniteTimeSpan) return -1;
            if (t < TimeSpan.Zero || t.TotalMilliseconds > int.MaxValue)
                throw new ArgumentOutOfRangeException(nameof(t), t, "a timeout is zero, positive (under 24 days) or Timeout.InfiniteTimeSpan");
            return t == TimeSpan.Zero ? 0 : Math.Max(1, (int)Math.Ceiling(t.TotalMilliseconds));
        }

        // Under _drainLock: one drain (in slices of SliceMs) into _pending. False: closed (or disposed) and empty.
        private bool Fill(int timeoutMs)
        {
            DateTime deadline = timeoutMs > 0 ? DateTime.UtcNow.AddMilliseconds(timeoutMs) : DateTime.MaxValue;
            while (true)
            {
                int slice = timeoutMs < 0 ? SliceMs : Math.Min(SliceMs, Math.Max(0, (int)Math.Ceiling((deadline - DateTime.UtcNow).TotalMilliseconds)));
                if (!Enter()) return false;
                int rc;
                UIntPtr count, used;
                Interlocked.Increment(ref InDrain);
                try
                {
                    rc = Native.sl_subscriber_drain(_sub, slice, _msgs, (UIntPtr)Batch, _data.Ptr, (UIntPtr)_data.Capacity, &count, &used);
                    if (rc == (int)SlCode.SL_ETOOSMALL)
                    {
                        _data.Ensure((long)used, 0);
                        rc = Native.sl_subscriber_drain(_sub, 0, _msgs, (UIntPtr)Batch, _data.Ptr, (UIntPtr)_data.Capacity, &count, &used);
                    }
                    if (rc == 0 && (long)count > 0)
                    {
                        var got = new PubSubMessage[(long)count];
                        for (long i = 0; i < got.Length; i++) got[i] = PubSubMessage.FromRecord(_msgs + i, _data.Ptr);
                        lock (_lock) foreach (var m in got) _pending.Enqueue(m);
                        return true;
                    }
                }
                finally
                {
                    Interlocked.Decrement(ref InDrain);
                    Leave();
                }
                if (rc == (int)SlCode.SL_ESTATE)
                {
                    lock (_lock) _ended = true;
                    return false;
                }
                if (rc != 0) throw Errors.FromCode(rc, "sl_subscriber_drain: " + Native.PtrToUtf8(Native.sl_strerror(rc)));
                if (timeoutMs == 0 || (timeoutMs > 0 && DateTime.UtcNow >= deadline)) return true;
            }
        }

        // Under _lock.
        private void StartPump()
        {
            if (_pump != null) return;
            _pump = new Thread(Pump) { IsBackground = true, Name = "slotlane-subscriber" };
            _pump.Start();
        }

        // The listener thread: drains while a handler is attached or a ReceiveAsync waits, and hands the records out.
        private void Pump()
        {
            while (true)
            {
                lock (_lock)
                {
                    // closed: drain what is left (to the handler or into pending), then end on SL_ESTATE
                    while (!_disposed && !_closed && !_ended && _handler == null && _waiters.Count == 0) Monitor.Wait(_lock);
                }
                bool alive;
                try
                {
                    lock (_drainLock) alive = Fill(SliceMs);
                }
                catch (Exception e)
                {
                    FailWaiters(e);
                    alive = true;
                }
                bool more = true;
                while (more)
                {
                    EventHandler<PubSubMessageEventArgs> h;
                    PubSubMessage m = null;
                    TaskCompletionSource<PubSubMessage> w = null;
                    lock (_lock)
                    {
                        h = _handler;
                        more = _pending.Count > 0 && (h != null || _waiters.Count > 0);
                        if (more)
                        {
                            m = _pending.Dequeue();
                            if (h == null)
                            {
                                w = _waiters.First.Value;
                                _waiters.RemoveFirst();
                            }
                        }
                    }
                    if (!more) break;
                    if (w != null)
                    {
                        if (!w.TrySetResult(m)) lock (_lock) { /* cancelled meanwhile: nothing lost */ Requeue(m); }
                    }
                    else
                    {
                        try { h(this, new PubSubMessageEventArgs(m)); }
                        catch (Exception x) { System.Diagnostics.Trace.TraceError("slotlane: a MessageReceived handler threw: " + x); }
                    }
                }
                if (!alive)
                {
                    List<TaskCompletionSource<PubSubMessage>> left;
                    lock (_lock)
                    {
                        if (_pending.Count > 0 && _waiters.Count > 0) continue;
                        left = new List<TaskCompletionSource<PubSubMessage>>(_waiters);
                        _waiters.Clear();
                        _pump = null;
                    }
                    foreach (var t in left) t.TrySetResult(null);
                    return;
                }
            }
        }

        // Under _lock: a record whose waiter was cancelled goes back to the front of the pending queue.
        private void Requeue(PubSubMessage m)
        {
            var rest = _pending.ToArray();
            _pending.Clear();
            _pending.Enqueue(m);
            foreach (var r in rest) _pending.Enqueue(r);
        }

        private void FailWaiters(Exception e)
        {
            List<TaskCompletionSource<PubSubMessage>> all;
            lock (_lock)
            {
                all = new List<TaskCompletionSource<PubSubMessage>>(_waiters);
                _waiters.Clear();
            }
            foreach (var t in all) t.TrySetException(e);
        }

        // ---------------------------------------------------------------- stats and closing

        /// <summary>The core subscriber's counters now.</summary>
        /// <returns>A snapshot.</returns>
        /// <exception cref="ObjectDisposedException">The subscriber is disposed.</exception>
        public SubscriberStats GetStats()
        {
            if (!Enter()) throw new ObjectDisposedException(nameof(Subscriber));
            try
            {
                var s = new SlSubscriberStats();
                s.version = Native.SL_SUBSCRIBER_STATS_VERSION;
                s.size = (uint)sizeof(SlSubscriberStats);
                int rc = Native.sl_subscriber_stats_get(_sub, &s);
                if (rc != 0) throw Errors.FromCode(rc, "sl_subscriber_stats_get failed");
                return new SubscriberStats
                {
                    Messages = (long)s.messages, Dropped = (long)s.dropped, ConnectionLosses = (long)s.connection_losses,
                    Resubscribed = (long)s.resubscribed, Pings = (long)s.pings, Refreshes = (long)s.refreshes,
                    Confirmed = (long)s.confirmed, QueuedBytes = (long)s.queued_bytes, BytesRead = (long)s.bytes_read,
                };
            }
            finally { Leave(); }
        }

        /// <summary>True once <see cref="Close"/> or <see cref="Dispose"/> was called.</summary>
        public bool IsClosed { get { lock (_lock) return _closed || _disposed; } }

        /// <summary>Stops the subscriber: its connections are closed and its thread ends; what is queued can still be
        /// read, then <see cref="Poll(TimeSpan)"/> returns null and <see cref="ReceiveAsync(CancellationToken)"/> null.
        /// Waiting polls return. Subscribing afterwards fails. Idempotent; any thread.</summary>
        public void Close()
        {
            if (!Enter()) return;
            try
            {
                lock (_lock) _closed = true;
                Native.sl_subscriber_close(_sub);
            }
            finally { Leave(); }
            lock (_lock) Monitor.PulseAll(_lock);
        }

        /// <summary>Closes the subscriber and frees it (once no call on another thread is inside the core).
        /// Records still queued are dropped; waiting calls return null. Idempotent; any thread, a handler too.</summary>
        public void Dispose()
        {
            Close();
            lock (_lock)
            {
                if (_disposed) return;
                _disposed = true;
                Monitor.PulseAll(_lock);
            }
            Leave();   // the owner's reference: freed now, or by the last call to leave the core
            GC.SuppressFinalize(this);
        }

        /// <summary>Frees a subscriber that was never disposed (nothing can be inside the core then).</summary>
        ~Subscriber()
        {
            if (_sub != IntPtr.Zero) Native.sl_subscriber_free(_sub);
            if (_msgs != null) Marshal.FreeHGlobal((IntPtr)_msgs);
        }
    }
}
