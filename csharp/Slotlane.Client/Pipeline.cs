using System;
using System.Collections.Generic;
using System.Threading;
using System.Threading.Tasks;

namespace Slotlane
{
    /// <summary>Commands sent together: queued with <see cref="Add(object[])"/>, encoded at once into the
    /// pipeline's own unmanaged buffer, and executed by <see cref="Execute()"/> with one call into the core,
    /// which routes each command to its node, writes every node before reading any and follows redirects.
    /// <para>Results come back in the order of the commands. Replies are decoded as: bulk string →
    /// <c>byte[]</c>, simple string → <c>string</c>, integer → <c>long</c>, nil → <c>null</c>,
    /// array/set/push → <c>object[]</c>, map → <c>KeyValuePair&lt;object, object&gt;[]</c>, double → <c>double</c>,
    /// boolean → <c>bool</c>, big number → <c>BigInteger</c>, verbatim → <see cref="VerbatimString"/>.
    /// A failed command's result is a <see cref="SlotlaneException"/> subclass (returned, not thrown), so one
    /// error fails only its own command.</para>
    /// <para>The typed methods of every command of the spec (rendered into Commands.g.cs) queue their command
    /// and return a <see cref="Reply{T}"/> whose <see cref="Reply{T}.Value"/> is the reply as its type after the
    /// execution; <see cref="Add(object[])"/> queues any command.</para>
    /// <para>A pipeline is used by one thread at a time; it can be executed many times (it is emptied by each
    /// execution). Dispose it to free its buffer.</para>
    /// <para>A transaction's pipelines (<see cref="Slotlane.Transaction.Multi"/>,
    /// <see cref="Slotlane.Transaction.CreatePipeline"/>) run on the transaction's session instead: Execute sends
    /// MULTI ... EXEC (or the commands at once), and ExecuteAsync is not supported (sessions are synchronous).</para></summary>
    public sealed unsafe partial class Pipeline : IDisposable
    {
        private readonly SlotlaneClient _client;
        private readonly RespWriter _w = new RespWriter(1024);
        private bool _disposed;
        // the results of the last execution, for the typed methods' Reply handles: _gen counts the
        // executions begun, _lastGen is the one whose results _last holds
        private object[] _last;
        private int _gen, _lastGen = -1;

        // a transaction's pipeline (Transaction.CreatePipeline / Multi): executed on its session
        private readonly Transaction _tx;
        private readonly bool _multi;

        internal Pipeline(SlotlaneClient client) { _client = client; }

        internal Pipeline(SlotlaneClient client, Transaction tx, bool multi)
        {
            _client = client;
            _tx = tx;
            _multi = multi;
        }

        /// <summary>The transaction this pipeline belongs to (<see cref="Transaction.Multi"/>,
        /// <see cref="Transaction.CreatePipeline"/>), or null for a client's pipeline.</summary>
        public Transaction Transaction { get { return _tx; } }

        /// <summary>Queues a typed command's arguments; its Reply (nothing is queued on a bad argument).
        /// shapeId: the shape's constant of Commands.g.cs (the shape itself only gives T).</summary>
        internal Reply<T> Queue<T>(object[] args, Func<object, T> shape, int shapeId)
        {
            Check();
            _w.Append(args);
            Reply<T> reply;
            reply._p = this;
            reply._tag = Reply<T>.Tag(_w.Count - 1, _gen, shapeId);
            return reply;
        }

        /// <summary>As the Queue above, for a shape without a constant id.</summary>
        internal Reply<T> Queue<T>(object[] args, Func<object, T> shape)
        {
            return Queue(args, shape, ShapeIds.Of(shape));
        }

        /// <summary>A Reply's raw result: command i of execution g.</summary>
        internal object Result(int i, int g)
        {
            if (g != (_lastGen & 0xFFFFFF) || _last == null || i >= _last.Length)
                throw new InvalidOperationException("the pipeline has not executed this command (execute first; a Reply is valid until the next execution)");
            return _last[i];
        }

        private object[] Done(object[] r, int g)
        {
            _last = r;
            _lastGen = g;
            return r;
        }

        /// <summary>Commands queued and not yet executed.</summary>
        public int Count { get { return _w.Count; } }

        /// <summary>Queues one command.</summary>
        /// <param name="args">The command name and its arguments, as for <see cref="SlotlaneClient.Execute(object[])"/>.</param>
        /// <returns>The command's index in the results.</returns>
        /// <exception cref="ArgumentException">No arguments, a null one, or an unsupported type (nothing is queued).</exception>
        public int Add(params object[] args)
        {
            Check();
            _w.Append(args);
            return _w.Count - 1;
        }

        /// <summary>Drops the queued commands.</summary>
        public void Clear()
        {
            Check();
            _w.Clear();
        }

        /// <summary>Sends every queued command and returns one result per command, in order; failed commands'
        /// results are <see cref="SlotlaneException"/> objects. The pipeline is empty afterwards.</summary>
        /// <returns>The results (an empty array when nothing was queued).</returns>
        /// <exception cref="SlotlaneException">Only when the execution as a whole could not run.</exception>
        public object[] Execute() { return Execute(CancellationToken.None); }

        /// <summary>Like <see cref="Execute()"/>; cancelling the token stops the execution as soon as possible
        /// (<c>sl_client_cancel</c>): commands without a reply yet get <see cref="SlotlaneCancelledException"/>
        /// results, and their connections are closed by the core (the next execution reconnects).</summary>
        /// <param name="cancellationToken">Cancels the execution while it runs.</param>
        /// <returns>The results, in order.</returns>
        public object[] Execute(CancellationToken cancellationToken)
        {
            Check();
            int n = _w.Count;
            int g = _gen++;
            _last = null; // the previous results are not kept alive while these are decoded (no promotion by the GC)
            if (_tx != null)
            {
                try { return Done(_tx.RunPipeline(_w, _multi, cancellationToken), g); }
                finally { _w.Clear(); }
            }
            if (n == 0) return Done(new object[0], g);
            CoreHandle h = _client.Rent();
            try
            {
                if (!cancellationToken.CanBeCanceled) return Done(h.Run(_w.Ptr, _w.Length, n, _client.TimeoutMs), g);
                // Disposing the registration waits for a running callback, so no cancel can reach the
                // handle after it went back to the pool (and the core ignores a cancel between executions).
                using (cancellationToken.Register(CancelHandle, h))
                {
                    cancellationToken.ThrowIfCancellationRequested();
                    return Done(h.Run(_w.Ptr, _w.Length, n, _client.TimeoutMs), g);
                }
            }
            finally
            {
                _client.Return(h);
                _w.Clear();
            }
        }

        private static readonly Action<object> CancelHandle = o => Native.sl_client_cancel(((CoreHandle)o).Client);

        /// <summary>For the tests: executes and also returns the raw record types, depth-first.</summary>
        internal object[] ExecuteRaw(out byte[] types)
        {
            Check();
            if (_tx != null) throw new NotSupportedException("a transaction's pipeline");
            int n = _w.Count;
            CoreHandle h = _client.Rent();
            try
            {
                object[] r = h.Run(_w.Ptr, _w.Length, n, _client.TimeoutMs);
                types = h.LastTypes;
                return r;
            }
            finally
            {
                _client.Return(h);
                _w.Clear();
            }
        }

        /// <summary>Like <see cref="Execute()"/>, but throws the first failed command's exception instead of
        /// returning it.</summary>
        /// <returns>The results.</returns>
        /// <exception cref="SlotlaneException">The first failed command's exception.</exception>
        public object[] ExecuteOrThrow()
        {
            object[] r = Execute();
            foreach (object o in r)
            {
                var e = o as SlotlaneException;
                if (e != null) throw e;
            }
            return r;
        }

        /// <summary>Sends every queued command as one batch on the core's loop thread (libuv) and completes the
        /// task when every command has its reply: no thread waits on the network meanwhile. Results are as for
        /// <see cref="Execute()"/> (and the typed methods' <see cref="Reply{T}"/> handles are filled before the
        /// task completes); continuations run on the thread pool, never on the core's threads.
        /// The pipeline is empty (and reusable) once this returns.</summary>
        /// <param name="cancellationToken">Cancels this pipeline's batch only (<c>sl_batch_cancel</c>): the task is
        /// cancelled (awaiting it throws <see cref="TaskCanceledException"/>); the replies still owed are read
        /// and dropped by the core, so the shared connections stay in step for every other caller.</param>
        /// <returns>The results, in order.</returns>
        /// <exception cref="ObjectDisposedException">The pipeline or its client is disposed (thrown at once).</exception>
        public Task<object[]> ExecuteAsync(CancellationToken cancellationToken = default(CancellationToken))
        {
            Check();
            if (_tx != null)
                throw new NotSupportedException("a transaction runs on its session synchronously (sessions are synchronous in the core): call Execute");
            int n = _w.Count;
            int g = _gen++;
            _last = null;
            if (n == 0) return Task.FromResult(Done(new object[0], g));
            try
            {
                var op = new PipelineOp(this, g);
                _client.Async().Submit(_w.Ptr, _w.Length, n, op, cancellationToken);
                return op.Tcs.Task;
            }
            finally { _w.Clear(); }
        }

        /// <summary>A pipeline's batch in flight: its results are recorded for the Reply handles before the
        /// caller's await resumes.</summary>
        private sealed class PipelineOp : AsyncOp
        {
            internal readonly TaskCompletionSource<object[]> Tcs = new TaskCompletionSource<object[]>(TaskCreationOptions.RunContinuationsAsynchronously);
            private readonly Pipeline _p;
            private readonly int _gen;

            internal PipelineOp(Pipeline p, int gen) { _p = p; _gen = gen; }

            internal override unsafe bool Complete(SlReply* recs, long nrec, byte* data)
            {
                return Tcs.TrySetResult(_p.Done(ReplyDecoder.DecodeAll(recs, nrec, data, Count), _gen));
            }

            internal override bool Fail(Exception e) { return Tcs.TrySetException(e); }
            internal override bool Cancel(CancellationToken t) { return Tcs.TrySetCanceled(t); }
        }

        // The rendered fast paths (GET, SET...) write this check out themselves: Mono does not inline it.
        private void Check()
        {
            if (_disposed) ThrowDisposed();
        }

        [System.Runtime.CompilerServices.MethodImpl(System.Runtime.CompilerServices.MethodImplOptions.NoInlining)]
        internal static void ThrowDisposed() { throw new ObjectDisposedException(nameof(Pipeline)); }

        /// <summary>Frees the pipeline's buffer.</summary>
        public void Dispose()
        {
            if (_disposed) return;
            _disposed = true;
            _w.Dispose();
        }
    }
}
