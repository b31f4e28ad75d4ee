using System;
using System.Collections.Concurrent;
using System.Linq;
using System.Text;
using System.Threading;
using NUnit.Framework;

namespace Slotlane.Tests
{
    /// <summary>Threads sharing one client: every reply goes to its own caller, the pool is bounded.</summary>
    [TestFixture]
    public class ThreadTests
    {
        [Test]
        public void ThreadsShareOneClient()
        {
            using (var c = SlotlaneClient.Connect(new ClientOptions { Url = Servers.Bundled, MaxPoolSize = 4 }))
            {
                var errors = new ConcurrentQueue<string>();
                var threads = Enumerable.Range(0, 12).Select(t => new Thread(() =>
                {
                    try
                    {
                        using (var p = c.CreatePipeline())
                        {
                            for (int round = 0; round < 40; round++)
                            {
                                for (int i = 0; i < 32; i++) p.Set("t" + t + ":k" + i, "t" + t + "r" + round + "i" + i);
                                for (int i = 0; i < 32; i++) p.Get("t" + t + ":k" + i);
                                object[] r = p.Execute();
                                for (int i = 0; i < 32; i++)
                                {
                                    string want = "t" + t + "r" + round + "i" + i;
                                    if (!"OK".Equals(r[i])) errors.Enqueue("SET reply " + r[i]);
                                    string got = r[32 + i] is byte[] ? Encoding.UTF8.GetString((byte[])r[32 + i]) : "" + r[32 + i];
                                    if (got != want) errors.Enqueue("thread " + t + " got " + got + " want " + want);
                                }
                                // single commands interleaved with pipelines
                                c.Set("t" + t + ":single", round);
                                if (c.Get("t" + t + ":single") != round.ToString()) errors.Enqueue("single command mixed up");
                            }
                        }
                    }
                    catch (Exception e) { errors.Enqueue(e.ToString()); }
                })).ToList();
                threads.ForEach(th => th.Start());
                threads.ForEach(th => th.Join());
                Assert.That(errors, Is.Empty, string.Join("\n", errors.Take(5)));
                var st = c.GetStats();
                Assert.That(st.Handles, Is.InRange(2, 4), "pool bounded by MaxPoolSize");
            }
        }

        [Test]
        public void DisposeWhileOtherThreadsRun()
        {
            var c = SlotlaneClient.Connect(new ClientOptions { Url = Servers.Bundled, MaxPoolSize = 3 });
            var unexpected = new ConcurrentQueue<Exception>();
            int ok = 0;
            var threads = Enumerable.Range(0, 6).Select(t => new Thread(() =>
            {
                while (true)
                {
                    try { c.Set("d" + t, "v"); Interlocked.Increment(ref ok); }
                    catch (ObjectDisposedException) { return; }
                    catch (Exception e) { unexpected.Enqueue(e); return; }
                }
            })).ToList();
            threads.ForEach(th => th.Start());
            while (Volatile.Read(ref ok) < 200) Thread.Sleep(5);
            c.Dispose();
            Assert.That(threads.All(th => th.Join(10000)), Is.True, "threads stopped");
            Assert.That(unexpected, Is.Empty, string.Join("\n", unexpected));
        }
    }
}
