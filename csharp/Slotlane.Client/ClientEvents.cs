using System;
using System.Collections.Concurrent;
using System.Collections.Generic;
using System.Runtime.InteropServices;
using System.Threading;

namespace Slotlane
{
    /// <summary>What the core reports to <see cref="ClientOptions.OnEvent"/> (<c>sl_event_type</c>).</summary>
    public enum ClientEventKind
    {
        /// <summary>A refresh changed the slot map or the replicas; the address: the node that answered it.</summary>
        TopologyChanged = 1,
        /// <summary>A working connection to the node broke, or a connect to a node that had worked failed: once per outage.</summary>
        NodeDown = 2,
        /// <summary>The node, reported down, connected again.</summary>
        NodeUp = 3,
        /// <summary>The node, a replica of a slot's primary, owns the slot now (a refresh or a MOVED showed it): once per promotion.</summary>
        Failover = 4,
    }

    /// <summary>One event of the core: its kind and the node's "host:port".</summary>
    public sealed class ClientEventArgs : EventArgs
    {
        /// <summary>What happened.</summary>
        public ClientEventKind Kind { get; private set; }
        /// <summary>The node concerned, "host:port".</summary>
        public string Address { get; private set; }

        internal ClientEventArgs(ClientEventKind kind, string address)
        {
            Kind = kind;
            Address = address;
        }

        /// <summary>"Kind address".</summary>
        /// <returns>The event as text.</returns>
        public override string ToString() { return Kind + " " + Address; }
    }

    /// <summary>The native <c>sl_event_fn</c> and the sinks it hands events to. The core calls it from inside an
    /// execution (the caller's thread, or the core's loop thread), where it must return at once and must not call
    /// the client: it only copies the event and queues it; a thread-pool work item delivers the queue of a sink
    /// serially. The context is a sink's id (never a GCHandle): an event of a client being disposed on another
    /// thread finds no sink and is dropped, never a freed handle.</summary>
    internal static class ClientEvents
    {
        [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
        private delegate void EventFn(IntPtr ctx, int type, IntPtr addr);

        private static readonly EventFn s_fn = OnNative;   // kept alive for the process: the core holds its pointer
        internal static readonly IntPtr Callback = Marshal.GetFunctionPointerForDelegate(s_fn);
        private static readonly ConcurrentDictionary<long, Sink> s_sinks = new ConcurrentDictionary<long, Sink>();
        private static long s_next;

        internal sealed class Sink
        {
            internal readonly EventHandler<ClientEventArgs> Handler;
            private readonly Queue<ClientEventArgs> _queue = new Queue<ClientEventArgs>();
            private bool _running;

            internal Sink(EventHandler<ClientEventArgs> h) { Handler = h; }

            internal void Post(ClientEventArgs e)
            {
                lock (_queue)
                {
                    _queue.Enqueue(e);
                    if (_running) return;
                    _running = true;
                }
                ThreadPool.UnsafeQueueUserWorkItem(Deliver, null);
            }

            private void Deliver(object unused)
            {
                while (true)
                {
                    ClientEventArgs e;
                    lock (_queue)
                    {
                        if (_queue.Count == 0) { _running = false; return; }
                        e = _queue.Dequeue();
                    }
                    try { Handler(null, e); }
                    catch (Exception x) { System.Diagnostics.Trace.TraceError("slotlane: the OnEvent handler threw: " + x); }
                }
            }
        }

        internal static long Register(EventHandler<ClientEventArgs> h)
        {
            long id = Interlocked.Increment(ref s_next);
            s_sinks[id] = new Sink(h);
            return id;
        }

        internal static void Unregister(long id)
        {
            Sink s;
            if (id != 0) s_sinks.TryRemove(id, out s);
        }

        private static void OnNative(IntPtr ctx, int type, IntPtr addr)
        {
            try
            {
                Sink s;
                if (type < 1 || type > 4 || !s_sinks.TryGetValue((long)ctx, out s)) return;
                s.Post(new ClientEventArgs((ClientEventKind)type, Native.PtrToUtf8(addr)));
            }
            catch
            {
                // never unwind into the core
            }
        }
    }
}
