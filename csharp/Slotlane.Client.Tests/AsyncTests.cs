using System;
using System.Collections.Generic;
using System.Linq;
using System.Text;
using System.Threading;
using System.Threading.Tasks;
using NUnit.Framework;

namespace Slotlane.Tests
{
    /// <summary>The Task-returning methods, on the core's loop thread (sl_loop_*): results, errors, many
    /// pipelines in flight at once, continuations off the loop thread, dispose with work in flight.</summary>
    [TestFixture]
    public class AsyncTests
    {
        [Test]
        public void ExecuteAsyncReturnsRepliesAndFaultsOnErrors()
        {
            using (var c = SlotlaneClient.Connect(Servers.Bundled))
            {
                Assert.That(c.ExecuteAsync("SET", "ak", "av").Result, Is.EqualTo("OK"));
                Assert.That(c.ExecuteAsync("GET", "ak").Result, Is.EqualTo(Encoding.UTF8.GetBytes("av")));
                c.Rpush("alist", "x");
                var t = c.ExecuteAsync("GET", "alist");
                var agg = Assert.Throws<AggregateException>(() => t.Wait(5000));
                Assert.That(agg.InnerException, Is.InstanceOf<SlotlaneReplyException>());
                Assert.Throws<ArgumentException>(() => c.ExecuteAsync());
                Assert.Throws<ArgumentNullException>(() => c.ExecuteAsync("GET", null));
            }
        }

        [Test]
        public void ManyPipelinesInFlightShareTheLoop()
        {
            using (var c = SlotlaneClient.Connect(Servers.Bundled))
            {
                var tasks = new List<Task<object[]>>();
                var pipes = new List<Pipeline>();
                for (int n = 0; n < 50; n++)
                {
                    var p = c.CreatePipeline();
                    pipes.Add(p);
                    for (int i = 0; i < 40; i++) p.Set("async:" + n + ":" + i, n * 1000 + i);
                    for (int i = 0; i < 40; i++) p.Get("async:" + n + ":" + i);
                    tasks.Add(p.ExecuteAsync());
                    Assert.That(p.Count, Is.EqualTo(0));
                }
                Assert.That(Task.WaitAll(tasks.ToArray(), 20000), Is.True);
                for (int n = 0; n < 50; n++)
                {
                    object[] r = tasks[n].Result;
                    Assert.That(r.Length, Is.EqualTo(80));
                    for (int i = 0; i < 40; i++)
                    {
                        Assert.That(r[i], Is.EqualTo("OK"));
                        Assert.That(Encoding.UTF8.GetString((byte[])r[40 + i]), Is.EqualTo((n * 1000 + i).ToString()));
                    }
                }
                // pipelines are reusable after ExecuteAsync
                pipes[0].Add("PING");
                Assert.That(pipes[0].ExecuteAsync().Result, Is.EqualTo(new object[] { "PONG" }));
                Assert.That(pipes[1].ExecuteAsync().Result, Is.Empty);
                pipes.ForEach(p => p.Dispose());
            }
        }

        [Test]
        public void ContinuationsDoNotRunOnTheLoopThread()
        {
            using (var c = SlotlaneClient.Connect(Servers.Bundled))
            using (var p = c.CreatePipeline())
            {
                for (int i = 0; i < 20; i++)
                {
                    p.Add("PING");
                    int contThread = -1;
                    var t2 = p.ExecuteAsync().ContinueWith(r => { contThread = Thread.CurrentThread.ManagedThreadId; return r.Result; },
                                                           TaskContinuationOptions.ExecuteSynchronously);
                    Assert.That(t2.Wait(5000), Is.True);
                    Assert.That(t2.Result, Is.EqualTo(new object[] { "PONG" }));
                    Assert.That(AsyncEngine.LastLoopThreadId, Is.GreaterThan(0), "the callback ran");
                    Assert.That(contThread, Is.Not.EqualTo(AsyncEngine.LastLoopThreadId), "continuation ran on the loop thread");
                    Assert.That(contThread, Is.Not.EqualTo(Thread.CurrentThread.ManagedThreadId));
                }
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
                Assert.That(Task.WaitAll(tasks, 30000), Is.True);
                Assert.That(tasks.All(t => t.Result), Is.True);
            }
        }

        [Test]
        public void DisposeCompletesInFlightWork()
        {
            var c = SlotlaneClient.Connect(new ClientOptions { Url = Servers.PlainRedis, CommandTimeout = TimeSpan.Zero });
            var blocked = c.ExecuteAsync("BLPOP", "never-" + Guid.NewGuid(), "0"); // blocks forever on the server
            Thread.Sleep(100);
            Assert.That(blocked.IsCompleted, Is.False);
            c.Dispose();
            Assert.That(((IAsyncResult)blocked).AsyncWaitHandle.WaitOne(60000), Is.True, "completed by dispose"); // BLPOP 0: only the dispose ends it
            Assert.That(blocked.IsFaulted, Is.True);
            Assert.That(blocked.Exception.InnerException, Is.InstanceOf<SlotlaneCancelledException>());
            Assert.Throws<ObjectDisposedException>(() => c.ExecuteAsync("PING"));
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
                // the BLPOP never held the shared connection: no waiting behind it
                var t0 = DateTime.UtcNow;
                Assert.That(c.ExecuteAsync("PING").Result, Is.EqualTo("PONG"));
                Assert.That(DateTime.UtcNow - t0, Is.LessThan(TimeSpan.FromSeconds(1)));
                Assert.That(c.Ping(), Is.EqualTo("PONG")); // the blocking path is a separate handle
            }
        }
    }
}
