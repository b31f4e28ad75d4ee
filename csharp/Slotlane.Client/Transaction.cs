using System;
using System.Collections.Generic;
using System.Threading;

namespace Slotlane
{
    /// <summary>A transaction on a connection of its own: WATCH ... MULTI ... EXEC over the core's
    /// sessions (<c>sl_session_*</c>). <see cref="Watch(object[])"/> pins the session to the primary of the
    /// keys' slot (one connection, leased for this transaction from a small per-node pool); the reads of
    /// the transaction then run at once on it (<see cref="Execute(object[])"/>, or the typed methods of
    /// <see cref="CreatePipeline"/>'s pipeline); <see cref="Multi"/> gives the typed pipeline whose
    /// <see cref="Pipeline.Execute()"/> sends MULTI, its commands and EXEC there and returns EXEC's
    /// replies, one per queued command.
    /// <para>Every command must hash to the session's slot (use a <c>{hash tag}</c>): a command with keys of
    /// another slot is refused before anything is sent (<see cref="SlotlaneClusterException"/>, "CROSSSLOT").
    /// EXEC answering nil (a watched key changed: nothing was applied) throws
    /// <see cref="SlotlaneWatchException"/>; the slot moving (MOVED/ASK) while keys are watched or a
    /// MULTI is open throws <see cref="SlotlaneWatchMovedException"/> (the session is then ended; the
    /// next <see cref="Watch(object[])"/> pins the slot's new owner). A timeout, a cancel or an I/O error
    /// breaks the session too: every later command of the transaction fails until
    /// <see cref="Watch(object[])"/> starts it again.</para>
    /// <para><see cref="Dispose"/> ends it: the core sends UNWATCH (keys watched) or DISCARD (a MULTI
    /// open) when needed and gives the connection back clean, or closes it when the session is broken;
    /// the client's pooled handle the transaction held goes back to the pool. Made by
    /// <see cref="SlotlaneClient.CreateTransaction"/>; <see cref="SlotlaneClient.Transaction{T}"/> runs the
    /// usual retry loop. A transaction is used by one thread at a time (it holds one of the client's
    /// pooled handles until disposed).</para></summary>
    public sealed unsafe class Transaction : IDisposable
    {
        private readonly SlotlaneClient _client;
        private CoreHandle _h;
        private IntPtr _session;
        private bool _watching;   // WATCH sent on the current session
        private bool _lost;       // the session broke while watching: only Watch starts again
        private Pipeline _multi;  // Multi()'s pipeline, until executed
        private readonly RespWriter _frame = new RespWriter(256);
        private static readonly object[] MultiCmd = { "MULTI" };
        private static readonly object[] ExecCmd = { "EXEC" };

        internal Transaction(SlotlaneClient client)
        {
            _client = client;
            _h = client.Rent();
        }

        /// <summary>True while keys are watched on this transaction's connection (until EXEC,
        /// <see cref="Unwatch"/>, a broken session or <see cref="Dispose"/>).</summary>
        public bool IsWatching { get { return _watching && _session != IntPtr.Zero; } }

        /// <summary>The slot the session is pinned to, or -1 (nothing sent yet, or a plain server).</summary>
        public int Slot
        {
            get
            {
                Check();
                return _session == IntPtr.Zero ? -1 : Native.sl_session_slot(_session);
            }
        }

        /// <summary>WATCHes keys on the transaction's connection (the primary of their slot: the first
        /// WATCH or command pins it). Later commands, until <see cref="Multi"/>'s pipeline is executed,
        /// run at once there. A transaction whose session broke (a moved slot, a timeout) starts a new
        /// one here.</summary>
        /// <param name="keys">The keys (strings, byte arrays...), of one slot.</param>
        /// <exception cref="ArgumentException">No key, or a null one.</exception>
        /// <exception cref="InvalidOperationException">A MULTI is queued: WATCH comes before it.</exception>
        /// <exception cref="SlotlaneClusterException">Keys of several slots, or of another slot than the
        /// session's (nothing sent).</exception>
        /// <exception cref="SlotlaneException">WATCH failed (the subclass says how).</exception>
        public void Watch(params object[] keys)
        {
            Check();
            if (keys == null || keys.Length == 0) throw new ArgumentException("Watch needs at least one key", nameof(keys));
            if (_multi != null) throw new InvalidOperationException("WATCH after MULTI: watch the keys before calling Multi()");
            if (_lost) EndSession();
            var args = new object[keys.Length + 1];
            args[0] = "WATCH";
            for (int i = 0; i < keys.Length; i++)
            {
                if (keys[i] == null) throw new ArgumentException("key " + i + " is null", nameof(keys));
                args[i + 1] = keys[i];
            }
            _frame.Clear();
            _frame.Append(args);
            RunNow();
            _watching = true;
        }

        /// <summary>UNWATCH on the transaction's connection (nothing when no key is watched).</summary>
        /// <exception cref="SlotlaneException">UNWATCH failed.</exception>
        public void Unwatch()
        {
            Check();
            if (_session != IntPtr.Zero && _watching && !_lost)
            {
                _frame.Clear();
                _frame.Append(new object[] { "UNWATCH" });
                RunNow();
            }
            _watching = false;
        }

        /// <summary>Runs one command at once on the transaction's connection (a read of the transaction,
        /// while its keys are watched) and returns its reply, decoded as <see cref="Pipeline"/> describes.</summary>
        /// <param name="args">The command and its arguments, as for <see cref="SlotlaneClient.Execute(object[])"/>.</param>
        /// <returns>The reply.</returns>
        /// <exception cref="ArgumentException">Bad arguments (nothing sent).</exception>
        /// <exception cref="SlotlaneClusterException">A key of another slot than the session's (nothing sent).</exception>
        /// <exception cref="SlotlaneWatchMovedException">The slot moved while watched.</exception>
        /// <exception cref="SlotlaneException">The command failed (its error reply is thrown).</exception>
        public object Execute(params object[] args)
        {
            Check();
            _frame.Clear();
            _frame.Append(args);
            return RunNow();
        }

        /// <summary>A pipeline whose commands run at once on the transaction's connection when it is
        /// executed, outside MULTI (the typed reads of a watching transaction: <c>var n = p.Get(key);
        /// p.Execute();</c>). Results and Reply handles as a client's pipeline; a broken session throws
        /// as <see cref="Execute(object[])"/>.</summary>
        /// <returns>A new pipeline of this transaction (dispose it, or let the transaction's end do it).</returns>
        public Pipeline CreatePipeline()
        {
            Check();
            return new Pipeline(_client, this, false);
        }

        /// <summary>Starts the transaction's queue: the typed pipeline whose commands go out as MULTI ...
        /// EXEC on the transaction's connection when it is executed. Its <see cref="Pipeline.Execute()"/>
        /// returns EXEC's replies, one per queued command (a command the server failed inside the
        /// transaction is a <see cref="SlotlaneException"/> result, as in any pipeline), and throws
        /// <see cref="SlotlaneWatchException"/> when EXEC answered nil (a watched key changed: nothing was
        /// applied), <see cref="SlotlaneWatchMovedException"/> when the slot moved while watched, and the
        /// queued command's error when the server refused the whole transaction (EXECABORT). After its
        /// execution the keys are no longer watched; the transaction can <see cref="Watch(object[])"/> again.</summary>
        /// <returns>The transaction's pipeline.</returns>
        /// <exception cref="InvalidOperationException">Multi() was called already and its pipeline not executed.</exception>
        public Pipeline Multi()
        {
            Check();
            if (_multi != null) throw new InvalidOperationException("MULTI inside MULTI: execute (or dispose) the pipeline Multi() gave first");
            _multi = new Pipeline(_client, this, true);
            return _multi;
        }

        // ------------------------------------------------------------ execution
        /// <summary>SlotlaneClient.Transaction: executes Multi()'s pipeline (an empty MULTI ... EXEC when the
        /// body queued nothing).</summary>
        internal object[] ExecuteQueued()
        {
            Pipeline p = _multi ?? Multi();
            return p.Execute();
        }

        /// <summary>SlotlaneClient.Transaction after an abort: the queue is dropped (the next Watch starts over).</summary>
        internal void Reset()
        {
            if (_multi != null) _multi.Clear();
            _multi = null;
        }


        private static void ThrowIfErrorReply(object r)
        {
            var e = r as SlotlaneException;
            if (e != null) throw e;
        }

        /// <summary>One command in _frame, at once on the session.</summary>
        private object RunNow()
        {
            object[] r = RunSession(_frame, 1, CancellationToken.None);
            ThrowIfErrorReply(r[0]);
            return r[0];
        }

        private IntPtr Session()
        {
            if (_lost) throw new SlotlaneWatchException(ErrorKind.Client,
                "the transaction's session broke while its keys were watched: call Watch again (nothing of this transaction is watched now)");
            if (_session == IntPtr.Zero)
            {
                IntPtr s;
                int rc = Native.sl_session_new(_h.Client, &s);
                if (rc != 0) throw Errors.FromCode(rc, _h.ErrMsg());
                _session = s;
            }
            return _session;
        }

        /// <summary>Runs the commands of w on the session; a broken session is ended (and remembered as
        /// lost when keys were watched). The replies, errors as exception objects.</summary>
        private object[] RunSession(RespWriter w, int count, CancellationToken token)
        {
            IntPtr session = Session();
            SlSizes sz;
            int rc;
            CoreHandle h = _h;
            if (!token.CanBeCanceled)
                rc = Native.sl_session_run(session, h.Batch, w.Ptr, (UIntPtr)w.Length, (UIntPtr)count, _client.TimeoutMs,
                                           h.Recs.Ptr, (UIntPtr)h.Recs.Capacity, h.Data.Ptr, (UIntPtr)h.Data.Capacity, &sz);
            else
                using (token.Register(CancelHandle, h))
                {
                    token.ThrowIfCancellationRequested();
                    rc = Native.sl_session_run(session, h.Batch, w.Ptr, (UIntPtr)w.Length, (UIntPtr)count, _client.TimeoutMs,
                                               h.Recs.Ptr, (UIntPtr)h.Recs.Capacity, h.Data.Ptr, (UIntPtr)h.Data.Capacity, &sz);
                }
            if (rc == (int)SlCode.SL_ETOOSMALL) rc = h.CopyOutGrown(ref sz);
            string msg = rc == 0 || rc == (int)SlCode.SL_EABORTED ? null : h.ErrMsg();
            bool broken = rc != 0 && rc != (int)SlCode.SL_EABORTED && rc != (int)SlCode.SL_ECLUSTER
                          && rc != (int)SlCode.SL_ESERVER && rc != (int)SlCode.SL_EINVAL;
            if (rc == (int)SlCode.SL_EWATCHMOVED)
            {
                EndSession(); // a new Watch pins the slot's new owner
                throw new SlotlaneWatchMovedException(ErrorKind.Client, msg);
            }
            object[] r;
            try { r = h.Finish(rc, ref sz, count); }
            finally
            {
                if (broken)
                {
                    bool watched = _watching || _multi != null;
                    EndSession();
                    _lost = watched;
                }
            }
            return r;
        }

        private static readonly Action<object> CancelHandle = o => Native.sl_client_cancel(((CoreHandle)o).Client);

        /// <summary>Pipeline.Execute of this transaction's pipelines: at once (multi false), or as MULTI ... EXEC.</summary>
        internal object[] RunPipeline(RespWriter w, bool multi, CancellationToken token)
        {
            Check();
            if (!multi)
            {
                if (w.Count == 0) return new object[0];
                return RunSession(w, w.Count, token);
            }
            int n = w.Count;
            bool watching = _watching;
            try
            {
                _frame.Clear();
                _frame.Append(MultiCmd);
                _frame.AppendEncoded(w.Ptr, w.Length, n);
                _frame.Append(ExecCmd);
                object[] res;
                if (_session == IntPtr.Zero && !watching && !_lost)
                {
                    // nothing watched, no session yet: one pipeline on the shared connections (the core
                    // routes the MULTI ... EXEC group to its slot's owner and follows a MOVED)
                    res = _h.Run(_frame.Ptr, _frame.Length, n + 2, _client.TimeoutMs);
                }
                else res = RunSession(_frame, n + 2, token);
                object exec = res[n + 1];
                if (exec == null)
                {
                    if (watching)
                        throw new SlotlaneWatchException(ErrorKind.Client,
                            "a watched key changed: the transaction was aborted (EXEC answered nil), nothing was applied");
                    throw new SlotlaneProtocolException("EXEC answered nil without a WATCH");
                }
                if (exec is SlotlaneException)
                {
                    for (int i = 0; i <= n; i++) ThrowIfErrorReply(res[i]); // MULTI's or the refused command's error says why
                    throw (SlotlaneException)exec;
                }
                var replies = exec as object[];
                if (replies == null || replies.Length != n)
                    throw new SlotlaneProtocolException("EXEC answered " + (replies == null ? exec.GetType().Name : replies.Length + " replies") + " for " + n + " commands");
                return replies;
            }
            finally
            {
                _watching = false; // EXEC (or its failure) ends the watch
                _multi = null;
            }
        }

        // ------------------------------------------------------------ the end

        private void EndSession()
        {
            _watching = false;
            _lost = false;
            if (_session != IntPtr.Zero)
            {
                Native.sl_session_close(_session);
                _session = IntPtr.Zero;
            }
        }

        private void Check()
        {
            if (_h == null) throw new ObjectDisposedException(nameof(Transaction));
        }

        /// <summary>Ends the transaction: UNWATCH or DISCARD sent by the core when needed, the connection
        /// given back clean (or closed when broken), the client's handle back to its pool. A second call
        /// does nothing.</summary>
        public void Dispose()
        {
            if (_h == null) return;
            _multi = null;
            try { EndSession(); }
            finally
            {
                CoreHandle h = _h;
                _h = null;
                _frame.Dispose();
                _client.Return(h);
            }
        }
    }
}
