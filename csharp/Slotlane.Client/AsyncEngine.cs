using System;
using System.Collections.Generic;
using System.Runtime.InteropServices;
using System.Threading;
using System.Threading.Tasks;

namespace Slotlane
{
    public sealed unsafe partial class SlotlaneClient
    {
        private AsyncEngine _async;

        internal AsyncEngine Async()
        {
            AsyncEngine e = _async;
            if (e != null) return e;
            lock (_lock)
            {
                if (_disposed) throw new ObjectDisposedException(nameof(SlotlaneClient));
                if (_async == null) _async = new AsyncEngine(_options);
                return _async;
            }
        }

        private void DisposeAsyncEngine()
        {
            AsyncEngine e;
            lock (_lock) { e = _async; _async = null; }
            if (e != null) e.Dispose();
        }

        // The encoding buffer of the calling thread: a command is encoded, copied into its batch by
        // sl_batch_append and forgotten before the call returns, so one buffer per thread serves every call.
        [ThreadStatic] private static RespWriter t_writer;

        private static RespWriter Writer()
        {
            RespWriter w = t_writer;
            if (w == null) t_writer = w = new RespWriter(256);
            w.Clear();
            return w;
        }

        // After a call: a thread's buffer grown past 64 KiB by a large command is freed, not kept for the thread's life.
        private static void Shrink(RespWriter w)
        {
            if (w.Capacity <= 1 << 16) return;
            t_writer = null;
            w.Dispose();
        }

        private Task<T> Send<T>(RespWriter w, Func<object, T> shape, CancellationToken cancellationToken)
        {
            try { return Async().Submit(w.Ptr, w.Length, 1, new CommandOp<T>(shape), cancellationToken); }
            finally { Shrink(w); }
        }

        /// <summary>A typed async method's body (the rendered <c>XxxAsync</c> of CommandsAsync.g.cs).</summary>
        private Task<T> RunAsync<T>(object[] args, Func<object, T> shape, CancellationToken cancellationToken)
        {
            RespWriter w = Writer();
            w.Append(args);
            return Send(w, shape, cancellationToken);
        }

        /// <summary>A rendered fast path's body (GET-like: a pre-encoded prefix and a key).</summary>
        private Task<T> RunAsyncKey<T>(byte[] prefix, string key, Func<object, T> shape, CancellationToken cancellationToken)
        {
            RespWriter w = Writer();
            w.AppendKey(prefix, key);
            return Send(w, shape, cancellationToken);
        }

        /// <summary>A rendered fast path's body (SET-like: a pre-encoded prefix, a key and a value).</summary>
        private Task<T> RunAsyncKeyValue<T>(byte[] prefix, string key, object value, Func<object, T> shape, CancellationToken cancellationToken)
        {
            RespWriter w = Writer();
            w.AppendKeyValue(prefix, key, value);
            return Send(w, shape, cancellationToken);
        }

        /// <summary>Runs one command on the core's loop thread; the task completes with its reply or faults
        /// with its <see cref="SlotlaneException"/>. No thread blocks on the network meanwhile.</summary>
        /// <param name="args">The command and its arguments, as for <see cref="Execute(object[])"/>.</param>
        /// <returns>The reply.</returns>
        /// <exception cref="ArgumentException">Bad arguments (thrown at once, not through the task).</exception>
        /// <exception cref="ObjectDisposedException">The client is disposed (thrown at once).</exception>
        public Task<object> ExecuteAsync(params object[] args)
        {
            return RunAsync(args, CommandArgs.S_ANY, CancellationToken.None);
        }

        /// <summary>As <see cref="ExecuteAsync(object[])"/>, with a token that cancels this command only
        /// (<c>sl_batch_cancel</c>): the task is then cancelled (awaiting it throws
        /// <see cref="TaskCanceledException"/>), its reply is read and dropped by the core when it comes,
        /// and the shared connection keeps serving every other call in order.</summary>
        /// <param name="args">The command and its arguments (an array: the token comes last).</param>
        /// <param name="cancellationToken">Cancels the command while it is in flight.</param>
        /// <returns>The reply.</returns>
        public Task<object> ExecuteAsync(object[] args, CancellationToken cancellationToken)
        {
            return RunAsync(args, CommandArgs.S_ANY, cancellationToken);
        }

        /// <summary>The same as <see cref="Dispose"/>, for <c>await using</c> (C# 8) and hosts that dispose
        /// asynchronously: it cancels what is in flight instead of waiting for the network, so it completes
        /// at once; every pending task is completed before it returns.</summary>
        /// <returns>A completed ValueTask.</returns>
        public ValueTask DisposeAsync()
        {
            Dispose();
            return default(ValueTask);
        }
    }

    /// <summary>One asynchronous execution in flight: what to do with its completion. Made per call; the
    /// batch it runs in is a pooled <see cref="AsyncEngine.Slot"/>.</summary>
    internal abstract unsafe class AsyncOp
    {
        internal AsyncEngine.Slot Slot;
        internal CancellationToken Token;
        internal CancellationTokenRegistration Registration;
        internal bool Done;              // under lock(this): the completion was taken (no more cancels)
        internal bool CancelRequested;   // the token fired while in flight
        internal int Count;

        /// <summary>On the dispatcher thread: decode the replies (<paramref name="status"/> 0 or a command-level
        /// outcome) and complete the task.</summary>
        /// <returns>false when the task was already complete (never expected: counted in <see cref="AsyncEngine.Duplicates"/>).</returns>
        internal abstract bool Complete(SlReply* recs, long nrec, byte* data);
        internal abstract bool Fail(Exception e);
        internal abstract bool Cancel(CancellationToken t);

        /// <summary>A completion that is not a batch of <see cref="Count"/> commands (a scan's page): it reads the
        /// batch itself. Returns null to be completed as a batch.</summary>
        internal virtual bool? CompleteRaw(int status, IntPtr batch) { return null; }
    }

    internal sealed unsafe class CommandOp<T> : AsyncOp
    {
        internal readonly TaskCompletionSource<T> Tcs = new TaskCompletionSource<T>(TaskCreationOptions.RunContinuationsAsynchronously);
        private readonly Func<object, T> _shape;

        internal CommandOp(Func<object, T> shape) { _shape = shape; }

        internal override bool Complete(SlReply* recs, long nrec, byte* data)
        {
            object v = ReplyDecoder.DecodeAll(recs, nrec, data, 1)[0];
            var e = v as SlotlaneException;
            return e != null ? Tcs.TrySetException(e) : Tcs.TrySetResult(_shape(v));
        }

        internal override bool Fail(Exception e) { return Tcs.TrySetException(e); }
        internal override bool Cancel(CancellationToken t) { return Tcs.TrySetCanceled(t); }
    }

    /// <summary>The Task-returning path. Every client's batches run on one process-wide core loop thread
    /// (<c>sl_loop</c>) and complete into one completion queue (<c>sl_cq</c>), drained by one dispatcher thread
    /// (many completions per wake-up) that decodes the replies and completes TaskCompletionSources made with
    /// <see cref="TaskCreationOptions.RunContinuationsAsynchronously"/>: the awaiting code resumes on the thread
    /// pool, never on the core's thread or the dispatcher. Per client: one <c>sl_client</c> attached to the
    /// loop (its connections multiplex every caller's batches: one per node) and a pool of batches.</summary>
    internal sealed unsafe class AsyncEngine : IDisposable
    {
        /// <summary>A pooled batch with a permanent GCHandle (the token handed to the core).</summary>
        internal sealed class Slot
        {
            internal IntPtr Batch;
            internal GCHandle Self;
            internal AsyncOp Op;
            internal AsyncEngine Owner;
        }

        // ------------------------------------------------ the process's loop, queue and dispatcher

        private static readonly object s_init = new object();
        private static IntPtr s_loop, s_cq;
        internal static volatile int DispatcherThreadId;   // for the tests
        internal static long Wakeups, Completions;          // completions per wake-up (the benchmark reports it)
        internal static long Duplicates;                    // tests: a task completed twice (must stay 0)
        private const int DrainCap = 256;
        // The dispatcher waits in native code in slices: Mono (and .NET on AppDomain unload) cannot stop a thread
        // blocked inside a P/Invoke, so a wait without limit would hang the process's exit.
        private const int WaitSliceMs = 250;
        private static volatile bool s_exiting;
        private static volatile bool s_dispatching;   // the dispatcher runs (false once the process or domain exits)

        private static void Start()
        {
            if (s_cq != IntPtr.Zero) return;
            lock (s_init)
            {
                if (s_cq != IntPtr.Zero) return;
                IntPtr loop, cq;
                int rc = Native.sl_loop_new(&loop);
                if (rc != 0) throw Errors.FromCode(rc, "could not start the core's loop thread");
                rc = Native.sl_cq_new(&cq);
                if (rc != 0)
                {
                    Native.sl_loop_free(loop);
                    throw Errors.FromCode(rc, "could not make a completion queue");
                }
                // Lives as long as the process (or the AppDomain): the dispatcher ends only at its exit.
                var t = new Thread(Dispatch) { IsBackground = true, Name = "slotlane-completions" };
                AppDomain.CurrentDomain.ProcessExit += (o, e) => s_exiting = true;
                AppDomain.CurrentDomain.DomainUnload += (o, e) => s_exiting = true;
                s_loop = loop;
                Thread.MemoryBarrier();
                s_cq = cq;
                s_dispatching = true;
                t.Start();
            }
        }

        private static void Dispatch()
        {
            DispatcherThreadId = Thread.CurrentThread.ManagedThreadId;
            var buf = (SlCompletion*)Marshal.AllocHGlobal(sizeof(SlCompletion) * DrainCap);
            try
            {
                while (!s_exiting)
                {
                    long n = (long)Native.sl_cq_wait(s_cq, buf, (UIntPtr)DrainCap, WaitSliceMs);
                    if (n > 0)
                    {
                        Interlocked.Increment(ref Wakeups);
                        Interlocked.Add(ref Completions, n);
                    }
                    for (long i = 0; i < n; i++)
                    {
                        try
                        {
                            var s = (Slot)GCHandle.FromIntPtr(buf[i].token).Target;
                            s.Owner.Completed(s, buf[i].status, &buf[i].sizes);
                        }
                        catch
                        {
                            // never reached: Completed catches what the decoding throws; nothing may end this thread
                        }
                    }
                }
            }
            finally
            {
                s_dispatching = false; // a Dispose waiting for completions stops waiting (AsyncEngine.Dispose)
            }
        }

        // ------------------------------------------------ one client's engine

        private readonly object _lock = new object();
        private readonly Stack<Slot> _idle = new Stack<Slot>();
        private readonly List<Slot> _all = new List<Slot>();
        private CoreHandle _core;   // its sl_client is attached to the loop; its own batch is unused
        private bool _disposed;
        private int _inflight;      // submitted, completion not yet handled (under _lock)
        private static readonly Action<object> s_cancel = CancelOp;

        internal AsyncEngine(ClientOptions o)
        {
            Start();
            _core = CoreHandle.Create(o);
        }

        internal int InFlight { get { lock (_lock) return _inflight; } }
        internal long SubmittedCount, CompletedCount;   // under _lock; the tests compare them after Dispose

        /// <summary>Submits <paramref name="count"/> encoded commands as one batch; the op's task completes once.
        /// Bad state throws at once (ObjectDisposedException); the core's refusals (SL_EBUSY at the in-flight
        /// bound, SL_EFORK) fault the task.</summary>
        internal Task<T> Submit<T>(byte* cmds, long len, int count, CommandOp<T> op, CancellationToken ct)
        {
            Submit(cmds, len, count, (AsyncOp)op, ct);
            return op.Tcs.Task;
        }

        internal void Submit(byte* cmds, long len, int count, AsyncOp op, CancellationToken ct)
        {
            op.Count = count;
            op.Token = ct;
            if (ct.IsCancellationRequested)
            {
                if (_disposed) throw new ObjectDisposedException(nameof(SlotlaneClient));
                op.Cancel(ct); // nothing is sent
                return;
            }
            int rc;
            // Under the lock, so that Dispose (which takes it first) never frees a batch being submitted;
            // sl_batch_append copies the bytes, sl_loop_submit_cq pushes onto a queue and never blocks here.
            lock (_lock)
            {
                if (_disposed) throw new ObjectDisposedException(nameof(SlotlaneClient));
                Slot s = TakeSlot();
                rc = Native.sl_batch_append(s.Batch, null, cmds, (UIntPtr)len, (UIntPtr)count);
                if (rc == 0)
                {
                    s.Op = op;
                    op.Slot = s;
                    rc = Native.sl_loop_submit_cq(s_loop, s.Batch, 0, s_cq, GCHandle.ToIntPtr(s.Self), Native.SL_SUBMIT_FAIL_FAST);
                    if (rc == 0) { _inflight++; SubmittedCount++; }
                    else { s.Op = null; op.Slot = null; }
                }
                if (rc != 0) _idle.Push(s);
            }
            Submitted(op, rc, ct, "ClientOptions.MaxInflightBatches / MaxInflightBytes");
        }

        // ------------------------------------------------ cluster scans paged on the loop (ScanCursor)

        private readonly HashSet<IntPtr> _scans = new HashSet<IntPtr>(); // live sl_scan of _core.Client (under _lock)

        /// <summary>sl_scan_new on the engine's client (allowed from any thread: it touches only the scan).</summary>
        internal IntPtr NewScan(SlScanOptions* o)
        {
            lock (_lock)
            {
                if (_disposed) throw new ObjectDisposedException(nameof(SlotlaneClient));
                IntPtr sc;
                int rc = Native.sl_scan_new(_core.Client, o, &sc);
                if (rc != 0) throw Errors.FromCode(rc, "bad scan options");
                _scans.Add(sc);
                return sc;
            }
        }

        /// <summary>Frees a scan with no page in flight (a second call, or one after the engine freed it, does nothing).</summary>
        internal void FreeScan(IntPtr scan)
        {
            lock (_lock)
            {
                if (_scans.Remove(scan)) Native.sl_scan_free(scan);
            }
        }

        /// <summary>Submits the scan's next page (sl_loop_submit_scan_cq) on a pooled batch; the op completes once,
        /// through <see cref="AsyncOp.CompleteRaw"/>. Same rules as <see cref="Submit(byte*, long, int, AsyncOp, CancellationToken)"/>.</summary>
        internal void SubmitScan(IntPtr scan, AsyncOp op, CancellationToken ct)
        {
            op.Count = 1;
            op.Token = ct;
            if (ct.IsCancellationRequested)
            {
                if (_disposed) throw new ObjectDisposedException(nameof(SlotlaneClient));
                op.Cancel(ct);
                return;
            }
            int rc;
            lock (_lock)
            {
                if (_disposed) throw new ObjectDisposedException(nameof(SlotlaneClient));
                if (!_scans.Contains(scan)) throw new ObjectDisposedException(nameof(ScanCursor));
                Slot s = TakeSlot();
                s.Op = op;
                op.Slot = s;
                rc = Native.sl_loop_submit_scan_cq(s_loop, scan, s.Batch, 0, s_cq, GCHandle.ToIntPtr(s.Self), Native.SL_SUBMIT_FAIL_FAST);
                if (rc == 0) { _inflight++; SubmittedCount++; }
                else
                {
                    s.Op = null;
                    op.Slot = null;
                    _idle.Push(s);
                }
            }
            Submitted(op, rc, ct, "ClientOptions.MaxInflightBatches");
        }

        // An idle slot (batch) of this engine, or a new one; under _lock.
        private Slot TakeSlot()
        {
            Slot s;
            if (_idle.Count > 0) s = _idle.Pop();
            else
            {
                IntPtr b;
                int rc = Native.sl_batch_new(_core.Client, &b);
                if (rc != 0) throw Errors.FromCode(rc, "sl_batch_new failed");
                s = new Slot { Batch = b, Owner = this };
                s.Self = GCHandle.Alloc(s);
                _all.Add(s);
            }
            Native.sl_batch_reset(s.Batch);
            return s;
        }

        // After a submission (outside _lock): a refused one fails op (SL_EBUSY names the bounds that
        // refused it); an accepted one gets ct's registration — registered after the submission, so a
        // token cancelled meanwhile runs the callback here, at once.
        private static void Submitted(AsyncOp op, int rc, CancellationToken ct, string bounds)
        {
            if (rc != 0)
            {
                if (rc == (int)SlCode.SL_ESTATE) throw new ObjectDisposedException(nameof(SlotlaneClient));
                op.Fail(Errors.FromCode(rc, rc == (int)SlCode.SL_EBUSY
                    ? "the client's in-flight bound is reached (" + bounds + "): nothing was sent"
                    : ""));
                return;
            }
            if (ct.CanBeCanceled)
            {
                CancellationTokenRegistration reg = ct.Register(s_cancel, op);
                bool done;
                lock (op)
                {
                    done = op.Done;
                    if (!done) op.Registration = reg;
                }
                if (done) reg.Dispose();
            }
        }

        // From the token's Cancel, on whatever thread cancels: cancels this batch only, and only while it is
        // in flight (after its completion was taken, the batch may already run someone else's commands).
        private static void CancelOp(object o)
        {
            var op = (AsyncOp)o;
            lock (op)
            {
                if (op.Done) return;
                op.CancelRequested = true;
                Native.sl_batch_cancel(op.Slot.Batch);
            }
        }

        // On the dispatcher thread: the batch's completion. Decodes, completes the task, returns the batch.
        private void Completed(Slot s, int status, SlSizes* sizes)
        {
            AsyncOp op = s.Op;
            CancellationTokenRegistration reg;
            bool cancelled;
            lock (op)
            {
                op.Done = true;
                reg = op.Registration;
                cancelled = op.CancelRequested;
            }
            reg.Dispose();
            bool first;
            try
            {
                bool? raw;
                if (cancelled && status == (int)SlCode.SL_ECANCELLED) first = op.Cancel(op.Token);
                else if (status == (int)SlCode.SL_ECANCELLED)
                    first = op.Fail(new SlotlaneCancelledException("cancelled: the client was disposed while the call was in flight"));
                else if ((raw = op.CompleteRaw(status, s.Batch)) != null) first = raw.Value;
                else if ((long)sizes->commands != op.Count)
                    first = op.Fail(Errors.FromCode(status == 0 ? (int)SlCode.SL_ESTATE : status, ""));
                else
                {
                    UIntPtr nrec, dlen;
                    byte* data;
                    SlReply* recs = Native.sl_batch_replies(s.Batch, &nrec, &data, &dlen);
                    first = op.Complete(recs, (long)nrec, data);
                }
            }
            catch (Exception e)
            {
                first = op.Fail(e); // a reply the shape refused, records that do not add up
            }
            if (!first) Interlocked.Increment(ref Duplicates);
            s.Op = null;
            op.Slot = null;
            lock (_lock)
            {
                _idle.Push(s);
                CompletedCount++;
                if (--_inflight == 0 && _disposed) Monitor.PulseAll(_lock);
            }
        }

        /// <summary>Cancels everything in flight (each task completes once, with
        /// <see cref="SlotlaneCancelledException"/>), waits until the dispatcher has completed every one, then
        /// frees the batches and the core client. Never called on the dispatcher thread (it runs no user code).</summary>
        public void Dispose()
        {
            lock (_lock)
            {
                if (_disposed) return;
                _disposed = true;
            }
            // Its executions complete with SL_ECANCELLED into the queue before this returns.
            Native.sl_loop_detach(s_loop, _core.Client);
            lock (_lock)
            {
                // woken by the last completion; the slice only notices a dispatcher ended by the process's exit
                while (_inflight > 0 && s_dispatching) Monitor.Wait(_lock, WaitSliceMs);
                if (_inflight > 0) return; // the process is exiting: its batches stay with the core's loop thread
            }
            lock (_lock)
            {
                // scans whose cursor was not disposed: freed before their client
                foreach (IntPtr sc in _scans) Native.sl_scan_free(sc);
                _scans.Clear();
            }
            foreach (var s in _all)
            {
                Native.sl_batch_free(s.Batch);
                s.Self.Free();
            }
            _all.Clear();
            _idle.Clear();
            _core.Dispose();
        }
    }
}
