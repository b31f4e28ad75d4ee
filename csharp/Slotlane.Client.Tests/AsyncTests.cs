using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Linq;
using System.Text;
using System.Threading;
using System.Threading.Tasks;
using NUnit.Framework;

namespace Slotlane.Tests
{
    /// <summary>The Task-returning surface (AsyncEngine.cs, CommandsAsync.g.cs): batches on the core's loop
    /// thread completing into one completion queue drained by one dispatcher thread; typed XxxAsync methods,
    /// async pipelines, per-batch cancellation by CancellationToken (against a server that holds a reply on
    /// purpose: BLPOP on an empty list), backpressure at the in-flight bound, Dispose with work in flight.</summary>
    [TestFixture]
    public class AsyncTests
    {
        private static readonly TimeSpan Bound = TimeSpan.FromSeconds(30); // only turns a hang into a failure

        private static void Finish(Task t)
        {
            Assert.That(t.Wait(Bound), Is.True, "the task completed");
        }

        // Polls the server until `what` holds: a wait on the server's own state (INFO), bounded only against a hang.
        private static void WaitFor(Func<bool> what, string name)
        {
            var sw = Stopwatch.StartNew();
            while (!what())
            {
                if (sw.Elapsed > Bound) Assert.Fail("never: " + name);
                Thread.Sleep(2);
            }
        }

        // INFO clients of the node that owns the key's slot (in plain mode: the server)
        private static long BlockedClients(SlotlaneClient c, string key)
        {
            object r = c.Mode == ClientMode.Cluster ? c.Execute(Route.Slot(SlotlaneClient.KeySlot(key)), "INFO", "clients") : c.Execute("INFO", "clients");
            string info = Encoding.UTF8.GetString((byte[])r);
            string line = info.Split('\n').First(l => l.StartsWith("blocked_clients:", StringComparison.Ordinal));
            return long.Parse(line.Substring(16).Trim());
        }

        private static Exception Failure(Task t)
        {
            var agg = Assert.Throws<AggregateException>(() => t.Wait(Bound));
            return agg.InnerException;
        }

        [Test]
        public void ExecuteAsyncReturnsRepliesAndFaultsOnErrors()
        {
            using (var c = SlotlaneClient.Connect(Servers.Bundled))
            {
                Assert.That(c.ExecuteAsync("SET", "ak", "av").Result, Is.EqualTo("OK"));
                Assert.That(c.ExecuteAsync("GET", "ak").Result, Is.EqualTo(Encoding.UTF8.GetBytes("av")));
                c.Rpush("alist", "x");
                Assert.That(Failure(c.ExecuteAsync("GET", "alist")), Is.InstanceOf<SlotlaneReplyException>());
                Assert.Throws<ArgumentException>(() => c.ExecuteAsync());
                Assert.Throws<ArgumentNullException>(() => c.ExecuteAsync("GET", null));
                Assert.That(c.ExecuteAsync(new object[] { "PING" }, CancellationToken.None).Result, Is.EqualTo("PONG"));
            }
        }

        [Test]
        public void TypedMethodsReturnTheirTypes([Values("bundled", "cluster")] string where)
        {
            using (var c = SlotlaneClient.Connect(where == "bundled" ? Servers.Bundled : Servers.ClusterRedis))
            {
                Assert.That(c.SetAsync("tk:s", "v1").Result, Is.True);
                Assert.That(c.GetAsync("tk:s").Result, Is.EqualTo("v1"));
                Assert.That(c.GetAsync("tk:missing-" + Guid.NewGuid()).Result, Is.Null);
                Assert.That(c.SetAsync("tk:s", "v2", new SetOptions { Nx = true }).Result, Is.False);
                Assert.That(c.IncrbyAsync("tk:n", 5).Result, Is.TypeOf<long>());
                c.Delete("tk:h");
                Assert.That(c.HsetAsync("tk:h", new ValueTuple<object, object>[] { ("f", "1"), ("g", "2") }).Result, Is.EqualTo(2));
                Dictionary<string, string> h = c.HgetallAsync("tk:h").Result;
                Assert.That(h["f"], Is.EqualTo("1"));
                Assert.That(h["g"], Is.EqualTo("2"));
                Assert.That(c.DeleteAsync("tk:h", "tk:n").Result, Is.EqualTo(2));            // params: split per slot by the core
                Assert.That(c.DeleteAsync(new[] { "tk:s" }, CancellationToken.None).Result, Is.EqualTo(1));
                c.Rpush("tk:l", "x");
                Assert.That(Failure(c.GetAsync("tk:l")), Is.InstanceOf<SlotlaneReplyException>());
                c.Delete("tk:l");
                Assert.Throws<ArgumentNullException>(() => c.GetAsync(null));                // refused at once, nothing sent
            }
        }

        [Test]
        public void LargeValuesGrowTheCallersBuffer()
        {
            using (var c = SlotlaneClient.Connect(Servers.Bundled))
            {
                var big = new byte[3 << 20];
                for (int i = 0; i < big.Length; i++) big[i] = (byte)('a' + i % 26);
                Assert.That(c.SetAsync("big:async", big).Result, Is.True);           // past the 64 KiB a thread keeps
                Assert.That(c.StrlenAsync("big:async").Result, Is.EqualTo(big.Length));
                Assert.That(c.ExecuteAsync("GET", "big:async").Result, Is.EqualTo(big));
                Assert.That(c.SetAsync("big:small", "s").Result, Is.True);          // a fresh buffer after the shrink
                Assert.That(c.GetAsync("big:small").Result, Is.EqualTo("s"));
                c.Delete("big:async", "big:small");
            }
        }

        [Test]
        public void ManyPipelinesInFlightShareTheLoop()
        {
            using (var c = SlotlaneClient.Connect(Servers.Bundled))
            {
                var tasks = new List<Task<object[]>>();
                var pipes = new List<Pipeline>();
                var typed = new List<Reply<string>>();
                for (int n = 0; n < 50; n++)
                {
                    var p = c.CreatePipeline();
                    pipes.Add(p);
                    for (int i = 0; i < 40; i++) p.Set("async:" + n + ":" + i, n * 1000 + i);
                    for (int i = 0; i < 40; i++) p.Get("async:" + n + ":" + i);
                    typed.Add(p.Get("async:" + n + ":7"));
                    tasks.Add(p.ExecuteAsync());
                    Assert.That(p.Count, Is.EqualTo(0));
                }
                Assert.That(Task.WaitAll(tasks.ToArray(), Bound), Is.True);
                for (int n = 0; n < 50; n++)
                {
                    object[] r = tasks[n].Result;
                    Assert.That(r.Length, Is.EqualTo(81));
                    for (int i = 0; i < 40; i++)
                    {
                        Assert.That(r[i], Is.EqualTo("OK"));
                        Assert.That(Encoding.UTF8.GetString((byte[])r[40 + i]), Is.EqualTo((n * 1000 + i).ToString()));
                    }
                    Assert.That(typed[n].Value, Is.EqualTo((n * 1000 + 7).ToString()), "the Reply handle is filled by ExecuteAsync");
                }
                // pipelines are reusable after ExecuteAsync
                pipes[0].Add("PING");
                Assert.That(pipes[0].ExecuteAsync().Result, Is.EqualTo(new object[] { "PONG" }));
                Assert.That(pipes[1].ExecuteAsync().Result, Is.Empty);
                pipes.ForEach(p => p.Dispose());
            }
        }

        [Test]
        public void ContinuationsRunOnThePoolNeverOnTheDispatcher()
        {
            using (var c = SlotlaneClient.Connect(Servers.Bundled))
            using (var p = c.CreatePipeline())
            {
                for (int i = 0; i < 20; i++)
                {
                    p.Add("PING");
                    int contThread = -1;
                    // ExecuteSynchronously asks to run on the completing thread: RunContinuationsAsynchronously must win
                    var t2 = p.ExecuteAsync().ContinueWith(r => { contThread = Thread.CurrentThread.ManagedThreadId; return r.Result; },
                                                           TaskContinuationOptions.ExecuteSynchronously);
                    var t3 = c.GetAsync("cont").ContinueWith(r => Thread.CurrentThread.ManagedThreadId, TaskContinuationOptions.ExecuteSynchronously);
                    Finish(t2);
                    Finish(t3);
                    Assert.That(t2.Result, Is.EqualTo(new object[] { "PONG" }));
                    Assert.That(AsyncEngine.DispatcherThreadId, Is.GreaterThan(0), "the dispatcher ran");
                    Assert.That(contThread, Is.Not.EqualTo(AsyncEngine.DispatcherThreadId), "continuation ran on the dispatcher");
                    Assert.That(t3.Result, Is.Not.EqualTo(AsyncEngine.DispatcherThreadId), "continuation ran on the dispatcher");
                    // Not asserted: that the continuation ran off this thread. A reply that lands before
                    // ContinueWith registers runs the continuation inline here, as .NET does for any
                    // completed task (a loaded machine makes that common); only the dispatcher is wrong.
                }
            }
        }

        [Test]
        public void ManyCallersShareOneConnectionPerNode([Values("plain", "bundled", "cluster")] string where)
        {
            string url = where == "plain" ? Servers.PlainRedis : where == "bundled" ? Servers.Bundled : Servers.ClusterRedis;
            int nodes = where == "plain" ? 1 : where == "bundled" ? 4 : 3;
            using (var c = SlotlaneClient.Connect(url))
            {
                // 512 callers each awaiting one SET then one GET, from 8 threads at once
                var tasks = Enumerable.Range(0, 8).Select(t => Task.Factory.StartNew(() =>
                {
                    var mine = new List<Task<bool>>();
                    for (int i = 0; i < 64; i++)
                    {
                        string k = "mc:" + t + ":" + i, v = "v" + (t * 1000 + i);
                        mine.Add(c.SetAsync(k, v).ContinueWith(s => s.Result && c.GetAsync(k).Result == v));
                    }
                    return mine.All(x => x.Result);
                }, TaskCreationOptions.LongRunning)).ToArray();
                Assert.That(Task.WaitAll(tasks, Bound), Is.True);
                Assert.That(tasks.All(t => t.Result), Is.True);
                // one connection per node for all of them: 512 concurrent CLIENT IDs name at most one per node
                var ids = Enumerable.Range(0, 512).Select(i => c.ExecuteAsync("CLIENT", "ID")).ToArray();
                Assert.That(Task.WaitAll(ids, Bound), Is.True);
                Assert.That(ids.Select(t => (long)t.Result).Distinct().Count(), Is.InRange(1, nodes));
            }
        }

        [Test]
        public void CancellingATokenCancelsOnlyItsCommand([Values("plain", "cluster")] string where)
        {
            // A BLPOP waits on a connection leased for it (the core's lease.c), never on the shared
            // one: a GET to the same node is answered while it waits; cancelled, its lease is closed
            // (so the element pushed afterwards stays in the list: nothing swallowed), and the
            // shared connection is the same one throughout.
            string url = where == "plain" ? Servers.PlainRedis : Servers.ClusterRedis;
            string key = "{cx}held-" + Guid.NewGuid(), known = "{cx}known";
            using (var sync = SlotlaneClient.Connect(url))
            using (var c = SlotlaneClient.Connect(url))
            using (var cts = new CancellationTokenSource())
            {
                sync.Set(known, "the-value");
                object id0 = where == "plain" ? c.ExecuteAsync("CLIENT", "ID").Result : null; // the shared connection
                var held = c.ExecuteAsync(new object[] { "BLPOP", key, "0" }, cts.Token); // the server holds it
                WaitFor(() => BlockedClients(sync, key) >= 1, "BLPOP blocked on the server");
                Assert.That(c.GetAsync(known).Result, Is.EqualTo("the-value"), "the same node answers while the BLPOP waits");
                var other = c.GetAsync(known, new CancellationTokenSource().Token);
                cts.Cancel();
                var e = Assert.Throws<AggregateException>(() => held.Wait(Bound)).InnerException;
                Assert.That(e, Is.InstanceOf<TaskCanceledException>());
                Assert.That(held.IsCanceled, Is.True);
                Assert.That(other.Result, Is.EqualTo("the-value"));
                WaitFor(() => BlockedClients(sync, key) == 0, "the cancelled BLPOP's lease closed");
                sync.Rpush(key, "kept");
                Assert.That(sync.Llen(key), Is.EqualTo(1), "the cancelled BLPOP took nothing");
                if (id0 != null) Assert.That(c.ExecuteAsync("CLIENT", "ID").Result, Is.EqualTo(id0), "the shared connection was never closed");
                // a token cancelled before the call: the task is cancelled and nothing is sent
                var pre = c.GetAsync(known, cts.Token);
                Assert.That(pre.IsCanceled, Is.True);
                Assert.That(c.GetAsync(known).Result, Is.EqualTo("the-value"));
            }
        }

        [Test]
        public void CancellingAPipelineCancelsItsBatch()
        {
            // A pipeline holding a blocking command is refused before anything is sent (the core's
            // SL_EBLOCKING); a pipeline cancelled before it is sent fills no Reply and stays usable.
            string key = "held-" + Guid.NewGuid();
            using (var sync = SlotlaneClient.Connect(Servers.PlainRedis))
            using (var c = SlotlaneClient.Connect(Servers.PlainRedis))
            using (var p = c.CreatePipeline())
            using (var cts = new CancellationTokenSource())
            {
                sync.Execute("DEL", "pc:a");
                p.Set("pc:a", "1");
                p.Add("BLPOP", key, "0");
                p.Get("pc:a");
                object[] refused = p.ExecuteAsync().Result;
                Assert.That(refused.All(x => x is SlotlaneException), Is.True, "a blocking command in a pipeline: every command refused");
                Assert.That(sync.Get("pc:a"), Is.Null, "nothing of the refused pipeline was sent");
                var set = p.Set("pc:a", "1");
                cts.Cancel();
                var t = p.ExecuteAsync(cts.Token);
                Assert.That(Assert.Throws<AggregateException>(() => t.Wait(Bound)).InnerException, Is.InstanceOf<TaskCanceledException>());
                Assert.Throws<InvalidOperationException>(() => { var unused = set.Value; }, "a cancelled execution fills no Reply");
                sync.Set("pc:a", "1");
                p.Get("pc:a");
                Assert.That(p.ExecuteAsync().Result, Is.EqualTo(new object[] { Encoding.UTF8.GetBytes("1") }), "the pipeline is reusable");
            }
        }

        [Test]
        public void AtTheInflightBoundACallFailsFast()
        {
            string key = "bound-" + Guid.NewGuid();
            using (var sync = SlotlaneClient.Connect(Servers.PlainRedis))
            using (var c = SlotlaneClient.Connect(new ClientOptions { Url = Servers.PlainRedis, MaxInflightBatches = 2 }))
            {
                var a = c.ExecuteAsync("BLPOP", key, "0");
                var b = c.ExecuteAsync("BLPOP", key, "0");
                var refused = c.GetAsync("anything");
                Assert.That(refused.IsFaulted, Is.True, "failed at once, nothing queued");
                var e = refused.Exception.InnerException;
                Assert.That(e, Is.InstanceOf<SlotlaneResourceException>());
                StringAssert.Contains("MaxInflightBatches", e.Message);
                sync.Rpush(key, "1", "2");
                Finish(a);
                Finish(b);
                Assert.That(c.SetAsync("bound:k", "v").Result, Is.True, "room again after the completions");
                Assert.Throws<ArgumentOutOfRangeException>(() => SlotlaneClient.Connect(new ClientOptions { Url = Servers.PlainRedis, MaxInflightBatches = 0 }));
            }
        }

        [Test]
        public void FromManyThreadsAtOnce()
        {
            using (var c = SlotlaneClient.Connect(Servers.Bundled))
            {
                var tasks = Enumerable.Range(0, 8).Select(t => Task.Factory.StartNew(() =>
                {
                    for (int i = 0; i < 100; i++)
                    {
                        string v = "t" + t + "-" + i;
                        if (!"OK".Equals(c.ExecuteAsync("SET", "mt" + t, v).Result)) return false;
                        if (Encoding.UTF8.GetString((byte[])c.ExecuteAsync("GET", "mt" + t).Result) != v) return false;
                    }
                    return true;
                }, TaskCreationOptions.LongRunning)).ToArray();
                Assert.That(Task.WaitAll(tasks, Bound), Is.True);
                Assert.That(tasks.All(t => t.Result), Is.True);
            }
        }

        [Test]
        public void DisposeCompletesEveryPendingTaskOnce([Values(false, true)] bool viaDisposeAsync)
        {
            string key = "never-" + Guid.NewGuid();
            long dup0 = Interlocked.Read(ref AsyncEngine.Duplicates);
            var c = SlotlaneClient.Connect(new ClientOptions { Url = Servers.PlainRedis, CommandTimeout = TimeSpan.Zero });
            var sync = SlotlaneClient.Connect(Servers.PlainRedis);
            var engine = c.Async();
            var pending = new List<Task>();
            var cts = new CancellationTokenSource();
            // BLPOPs the server holds (each on its lease): only the dispose ends them
            for (int i = 0; i < 8; i++) pending.Add(i % 2 == 0 ? c.ExecuteAsync("BLPOP", key + i, "0")
                                                                : c.ExecuteAsync(new object[] { "BLPOP", key + i, "0" }, cts.Token));
            var p = c.CreatePipeline();
            p.Add("BLPOP", key + "p", "0");                                            // a pipeline of one: leased too
            pending.Add(p.ExecuteAsync(cts.Token));
            WaitFor(() => BlockedClients(sync, key) >= 9, "the 9 BLPOPs blocked on the server");
            Assert.That(pending.Any(t => t.IsCompleted), Is.False);
            if (viaDisposeAsync) Assert.That(c.DisposeAsync().IsCompleted, Is.True);
            else c.Dispose();
            // every task is complete when Dispose returns: no waiting
            foreach (var t in pending)
            {
                Assert.That(t.IsCompleted, Is.True);
                Assert.That(t.IsFaulted, Is.True);
                Assert.That(t.Exception.InnerException, Is.InstanceOf<SlotlaneCancelledException>());
            }
            Assert.That(engine.SubmittedCount, Is.EqualTo(pending.Count));
            Assert.That(engine.CompletedCount, Is.EqualTo(pending.Count), "one completion per submission");
            cts.Cancel(); // after the completions: the batches are not touched again
            Assert.That(Interlocked.Read(ref AsyncEngine.Duplicates), Is.EqualTo(dup0), "no task was completed twice");
            Assert.Throws<ObjectDisposedException>(() => c.ExecuteAsync("PING"));
            Assert.Throws<ObjectDisposedException>(() => c.GetAsync("x"));
            p.Get("x");
            Assert.Throws<ObjectDisposedException>(() => p.ExecuteAsync());
            p.Dispose();
            sync.Rpush(key + "0", "cleanup"); // the BLPOPs' leases are closed: nobody pops it
            Assert.That(sync.Llen(key + "0"), Is.EqualTo(1));
            sync.Execute("DEL", key + "0");
            sync.Dispose();
        }

        [Test]
        public void AsyncTimeout()
        {
            using (var c = SlotlaneClient.Connect(new ClientOptions { Url = Servers.PlainRedis, CommandTimeout = TimeSpan.FromMilliseconds(200) }))
            {
                // a blocking command's deadline is its block time plus the grace (its lease's), not
                // CommandTimeout: the server's nil after 0.3 s
                var t = c.ExecuteAsync("BLPOP", "never-" + Guid.NewGuid(), "0.3");
                Assert.That(t.Wait(10000), Is.True);
                Assert.That(t.Result, Is.Null);
                // the BLPOP never held the shared connection: the next call is answered
                Assert.That(c.ExecuteAsync("PING").Result, Is.EqualTo("PONG"));
                Assert.That(c.Ping(), Is.EqualTo("PONG")); // the blocking path is a separate handle
            }
        }
    }
}
