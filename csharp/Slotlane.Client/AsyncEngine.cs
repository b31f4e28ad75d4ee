using System;
using System.Collections.Generic;
using System.Runtime.InteropServices;
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

        /// <summary>Runs one command on the core's loop thread; the task completes with its reply or faults
        /// with its <see cref="SlotlaneException"/>. No thread blocks on the network meanwhile.</summary>
        /// <param name="args">The command and its arguments, as for <see cref="Execute(object[])"/>.</param>
        /// <returns>The reply.</returns>
        /// <exception cref="ArgumentException">Bad arguments (thrown at once, not through the task).</exception>
        public Task<object> ExecuteAsync(params object[] args)
        {
            var w = new RespWriter(64 + 16 * (args == null ? 0 : args.Length));
            try
            {
                w.Append(args);
                Task<object[]> t = Async().Submit(w.Ptr, w.Length, 1);
                return t.ContinueWith(r =>
                {
                    object v = r.Result[0];
                    var e = v as SlotlaneException;
                    if (e != null) throw e;
                    return v;
                }, TaskContinuationOptions.ExecuteSynchronously);
            }
            finally { w.Dispose(); }
        }
    }

    /// <summary>The Task-returning path: one <c>sl_loop</c> (a libuv loop thread run by the core) and one
    /// <c>sl_client</c> attached to it, with a pool of batches; several batches are in flight at once and
    /// share the connections. Completion comes back through one native callback (a delegate kept alive for
    /// the process) that decodes the replies and completes a TaskCompletionSource.</summary>
    internal sealed unsafe class AsyncEngine : IDisposable
    {
        private sealed class Slot
        {
            internal IntPtr Batch;
            internal GCHandle Self;
            internal TaskCompletionSource<object[]> Tcs;
            internal int Count;
            internal AsyncEngine Owner;
        }

        internal static volatile int LastLoopThreadId;   // for the tests
        private static readonly SlExecCallback s_done = OnDone;
        private static readonly IntPtr s_donePtr = Marshal.GetFunctionPointerForDelegate(s_done);

        private readonly object _lock = new object();
        private readonly Stack<Slot> _idle = new Stack<Slot>();
        private readonly List<Slot> _all = new List<Slot>();
        private IntPtr _loop;
        private CoreHandle _core;   // its sl_client is attached to the loop; its batch is unused
        private bool _disposed;

        internal AsyncEngine(ClientOptions o)
        {
            _core = CoreHandle.Create(o);
            IntPtr loop;
            int rc = Native.sl_loop_new(&loop);
            if (rc != 0)
            {
                _core.Dispose();
                throw Errors.FromCode(rc, "sl_loop_new failed");
            }
            _loop = loop;
        }

        internal Task<object[]> Submit(byte* cmds, long len, int count)
        {
            // Under the lock, so that Dispose (which takes it first) never frees a batch being submitted;
            // sl_batch_append copies the bytes and sl_loop_submit only pushes onto a lock-free queue.
            lock (_lock)
            {
                if (_disposed) throw new ObjectDisposedException(nameof(SlotlaneClient));
                Slot s;
                if (_idle.Count > 0) s = _idle.Pop();
                else
                {
                    IntPtr b;
                    int rc0 = Native.sl_batch_new(_core.Client, &b);
                    if (rc0 != 0) throw Errors.FromCode(rc0, "sl_batch_new failed");
                    s = new Slot { Batch = b, Owner = this };
                    s.Self = GCHandle.Alloc(s);
                    _all.Add(s);
                }
                Native.sl_batch_reset(s.Batch);
                int rc = Native.sl_batch_append(s.Batch, null, cmds, (UIntPtr)len, (UIntPtr)count);
                if (rc != 0)
                {
                    _idle.Push(s);
                    throw Errors.FromCode(rc, "sl_batch_append refused the commands");
                }
                var tcs = new TaskCompletionSource<object[]>(TaskCreationOptions.RunContinuationsAsynchronously);
                s.Tcs = tcs;
                s.Count = count;
                rc = Native.sl_loop_submit(_loop, s.Batch, 0, s_donePtr, GCHandle.ToIntPtr(s.Self));
                if (rc != 0)
                {
                    s.Tcs = null;
                    _idle.Push(s);
                    if (rc == (int)SlCode.SL_ESTATE) throw new ObjectDisposedException(nameof(SlotlaneClient));
                    throw Errors.FromCode(rc, "sl_loop_submit failed");
                }
                return tcs.Task;
            }
        }

        private void Release(Slot s)
        {
            lock (_lock)
            {
                if (!_disposed) _idle.Push(s);
            }
        }

        // Runs on the core's loop thread. Never lets an exception escape into native code.
        private static void OnDone(IntPtr batch, int status, SlSizes* sizes, IntPtr arg)
        {
            Slot s = null;
            try
            {
                LastLoopThreadId = System.Threading.Thread.CurrentThread.ManagedThreadId;
                s = (Slot)GCHandle.FromIntPtr(arg).Target;
                TaskCompletionSource<object[]> tcs = s.Tcs;
                s.Tcs = null;
                try
                {
                    UIntPtr nrec, dlen;
                    byte* data;
                    SlReply* recs = Native.sl_batch_replies(batch, &nrec, &data, &dlen);
                    if (sizes == null || (long)sizes->commands != s.Count)
                        tcs.TrySetException(Errors.FromCode(status == 0 ? (int)SlCode.SL_ESTATE : status, ""));
                    else
                        tcs.TrySetResult(ReplyDecoder.DecodeAll(recs, (long)nrec, data, s.Count));
                }
                catch (Exception e)
                {
                    tcs.TrySetException(e);
                }
            }
            catch
            {
                // nothing sane to do on the loop thread; the slot is lost
                return;
            }
            s.Owner.Release(s);
        }

        public void Dispose()
        {
            List<Slot> all;
            lock (_lock)
            {
                if (_disposed) return;
                _disposed = true;
                all = new List<Slot>(_all);
            }
            // In-flight executions complete with SL_ECANCELLED (their callbacks run) before this returns.
            Native.sl_loop_free(_loop);
            _loop = IntPtr.Zero;
            foreach (var s in all)
            {
                Native.sl_batch_free(s.Batch);
                s.Self.Free();
            }
            _core.Dispose();
        }
    }
}
