using System;
using System.Runtime.InteropServices;

namespace Slotlane
{
    /// <summary>One core client (<c>sl_client</c>, its connections) with one batch and the unmanaged
    /// arenas its results are copied into. Used by one thread at a time (the pool's renter).</summary>
    internal sealed unsafe class CoreHandle : IDisposable
    {
        internal IntPtr Client;
        internal IntPtr Batch;
        internal readonly RespWriter Cmd = new RespWriter(256);
        internal readonly NativeBuffer Recs = new NativeBuffer(24 * 128);
        internal readonly NativeBuffer Data = new NativeBuffer(8192);

        internal static bool KeepTypes = false;   // tests only: keep the record types of the last execution
        internal byte[] LastTypes;

        private CoreHandle() { }

        internal static CoreHandle Create(ClientOptions o)
        {
            var h = new CoreHandle();
            using (var co = new CoreOptions(o))
            {
                byte* err = stackalloc byte[512];
                err[0] = 0;
                IntPtr cl;
                int rc;
                fixed (SlClientOptions* so = &co.Value)
                    rc = Native.sl_client_new(&cl, so, err, (UIntPtr)512);
                GC.KeepAlive(o.TlsRef); // the client took its own reference during the call
                if (rc != 0)
                {
                    string msg = Native.PtrToUtf8((IntPtr)err);
                    h.Dispose();
                    throw Errors.FromCode(rc, msg);
                }
                h.Client = cl;
                IntPtr b;
                rc = Native.sl_batch_new(cl, &b);
                if (rc != 0)
                {
                    string msg = h.ErrMsg();
                    h.Dispose();
                    throw Errors.FromCode(rc, msg);
                }
                h.Batch = b;
                return h;
            }
        }

        internal string ErrMsg() { return Client == IntPtr.Zero ? "" : Native.PtrToUtf8(Native.sl_client_errmsg(Client)); }

        /// <summary>Runs <paramref name="count"/> RESP-encoded commands with one crossing and decodes
        /// the replies (errors as exception objects, in place).</summary>
        internal object[] Run(byte* cmds, long len, int count, int timeoutMs)
        {
            SlSizes sz;
            int rc = Native.sl_batch_run(Batch, cmds, (UIntPtr)len, (UIntPtr)count, timeoutMs,
                                         Recs.Ptr, (UIntPtr)Recs.Capacity, Data.Ptr, (UIntPtr)Data.Capacity, &sz);
            if (rc == (int)SlCode.SL_ETOOSMALL) rc = CopyOutGrown(ref sz);
            return Finish(rc, ref sz, count);
        }

        /// <summary>Runs commands with a routing override (reset + append + exec + copy out).</summary>
        internal object[] RunRouted(SlRoute* route, byte* cmds, long len, int count, int timeoutMs)
        {
            Native.sl_batch_reset(Batch);
            int rc = Native.sl_batch_append(Batch, route, cmds, (UIntPtr)len, (UIntPtr)count);
            if (rc != 0) throw Errors.FromCode(rc, ErrMsg());
            SlSizes sz;
            rc = Native.sl_batch_exec(Batch, timeoutMs, &sz);
            int crc = Native.sl_batch_copy_out(Batch, Recs.Ptr, (UIntPtr)Recs.Capacity, Data.Ptr, (UIntPtr)Data.Capacity, &sz);
            if (crc == (int)SlCode.SL_ETOOSMALL) crc = CopyOutGrown(ref sz);
            if (crc != 0 && rc == 0) rc = crc;
            return Finish(rc, ref sz, count);
        }

        /// <summary>The results stayed in the batch: grow the arenas and copy them out (never re-sent).</summary>
        internal int CopyOutGrown(ref SlSizes sz)
        {
            Recs.Ensure((long)sz.records * 24, 0);
            Data.Ensure(Math.Max(1, (long)sz.data), 0);
            fixed (SlSizes* p = &sz)
                return Native.sl_batch_copy_out(Batch, Recs.Ptr, (UIntPtr)Recs.Capacity, Data.Ptr, (UIntPtr)Data.Capacity, p);
        }

        internal object[] Finish(int rc, ref SlSizes sz, int count)
        {
            if ((long)sz.commands != count || rc == (int)SlCode.SL_EINVAL || rc == (int)SlCode.SL_ENOMEM || rc == (int)SlCode.SL_ETOOSMALL)
            {
                if (rc == 0) rc = (int)SlCode.SL_ESTATE;
                throw Errors.FromCode(rc, ErrMsg());
            }
            if (KeepTypes)
            {
                LastTypes = new byte[sz.records];
                for (long i = 0; i < (long)sz.records; i++) LastTypes[i] = ((SlReply*)Recs.Ptr)[i].type;
            }
            return ReplyDecoder.DecodeAll((SlReply*)Recs.Ptr, (long)sz.records, Data.Ptr, count);
        }

        internal SlStats Stats()
        {
            SlStats s = default(SlStats);
            s.version = Native.SL_STATS_VERSION;
            s.size = (uint)sizeof(SlStats);
            int rc = Native.sl_client_stats(Client, &s);
            if (rc != 0) throw Errors.FromCode(rc, ErrMsg());
            return s;
        }

        public void Dispose()
        {
            if (Batch != IntPtr.Zero) { Native.sl_batch_free(Batch); Batch = IntPtr.Zero; }
            if (Client != IntPtr.Zero) { Native.sl_client_free(Client); Client = IntPtr.Zero; }
            Cmd.Dispose();
            Recs.Dispose();
            Data.Dispose();
            GC.SuppressFinalize(this);
        }

        ~CoreHandle()
        {
            // Only reached when the handle became unreachable without Dispose: nobody uses it.
            if (Batch != IntPtr.Zero) Native.sl_batch_free(Batch);
            if (Client != IntPtr.Zero) Native.sl_client_free(Client);
        }
    }

    /// <summary>A <see cref="ClientOptions"/> as the core's <c>sl_client_options</c> (version 4), with the
    /// unmanaged strings it points to (freed by Dispose, once the core has copied them: they are only read
    /// during <c>sl_client_new</c> / <c>sl_subscriber_new</c>). Shared by the command clients and the subscriber.</summary>
    internal sealed unsafe class CoreOptions : IDisposable
    {
        internal SlClientOptions Value;
        private IntPtr _url, _user, _pass;

        internal CoreOptions(ClientOptions o)
        {
            SlClientOptions so;
            int rc = Native.sl_client_options_init(&so, Native.SL_CLIENT_OPTIONS_VERSION);
            if (rc != 0) throw new InvalidOperationException("sl_client_options_init failed: " + rc);
            try
            {
                _url = ClientOptions.Utf8Z(o.Target());
                _user = ClientOptions.Utf8Z(o.Username);
                _pass = ClientOptions.Utf8Z(o.Password);
                so.url = _url;
                so.mode = (int)o.Mode;
                so.username = _user;
                so.password = _pass;
                so.db = o.Database ?? -1;
                so.resp_version = o.Protocol;
                so.connect_timeout_ms = ClientOptions.Ms(o.ConnectTimeout, "ConnectTimeout", false);
                so.command_timeout_ms = ClientOptions.Ms(o.CommandTimeout, "CommandTimeout", true);
                so.max_redirects = o.MaxRedirects;
                so.refresh_interval_ms = ClientOptions.Ms(o.RefreshInterval, "RefreshInterval", true);
                so.max_inflight_batches = (uint)o.MaxInflightBatches;
                so.max_inflight_bytes = (ulong)o.MaxInflightBytes;
                so.tls = o.TlsRef == null ? IntPtr.Zero : o.TlsRef.Ptr;
                so.read_from = (int)o.ReadFrom;
                so.retry_writes = o.RetryWrites ? 1 : 0;
                if (o.EventSinkId != 0)
                {
                    so.on_event = ClientEvents.Callback;
                    so.on_event_ctx = (IntPtr)o.EventSinkId;
                }
            }
            catch
            {
                Dispose();
                throw;
            }
            Value = so;
        }

        public void Dispose()
        {
            if (_url != IntPtr.Zero) { Marshal.FreeHGlobal(_url); _url = IntPtr.Zero; }
            if (_user != IntPtr.Zero) { Marshal.FreeHGlobal(_user); _user = IntPtr.Zero; }
            if (_pass != IntPtr.Zero) { Marshal.FreeHGlobal(_pass); _pass = IntPtr.Zero; }
        }
    }
}
