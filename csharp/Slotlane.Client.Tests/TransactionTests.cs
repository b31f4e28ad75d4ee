using System;
using System.Collections.Concurrent;
using System.Collections.Generic;
using System.IO;
using System.Linq;
using System.Text;
using System.Threading;
using NUnit.Framework;

namespace Slotlane.Tests
{
    /// <summary>Transactions on the core's sessions (issue 22): WATCH conflicts of 8 threads against a model,
    /// an abandoned session coming back clean, CROSSSLOT refused by the client before sending, EXEC nil
    /// as SlotlaneWatchException, EXECABORT, the retry helper; against the bundled server and a Redis Cluster.</summary>
    [TestFixture]
    public class TransactionTests
    {
        public static IEnumerable<string> Where() { return new[] { "bundled", "cluster" }; }

        private static string Url(string where) { return where == "bundled" ? Servers.Bundled : Servers.ClusterRedis; }

        private static string Key(string where, string name) { return "cstx:{" + where + "}:" + name; }

        [Test, TestCaseSource("Where")]
        public void EightThreadsWatchIncrAgainstAModel(string where)
        {
            string key = Key(where, "counter");
            const int threads = 8, attempts = 40;
            using (var c = SlotlaneClient.Connect(new ClientOptions { Url = Url(where), MaxPoolSize = threads + 1 }))
            {
                c.Delete(key);
                long committed = 0, aborted = 0;
                var errors = new ConcurrentQueue<string>();
                var committedValues = new ConcurrentBag<long>();
                var ts = Enumerable.Range(0, threads).Select(t => new Thread(() =>
                {
                    try
                    {
                        for (int i = 0; i < attempts; i++)
                        {
                            using (var tx = c.CreateTransaction())
                            {
                                tx.Watch(key);
                                object v = tx.Execute("GET", key);
                                long before = v == null ? 0 : long.Parse(Encoding.ASCII.GetString((byte[])v));
                                Pipeline p = tx.Multi();
                                Reply<long> incr = p.Incr(key);
                                try
                                {
                                    object[] r = p.Execute();
                                    if (r.Length != 1) errors.Enqueue("EXEC gave " + r.Length + " replies");
                                    // the model: a committed INCR saw exactly what the watched GET read
                                    if (incr.Value != before + 1) errors.Enqueue("read " + before + " then INCR gave " + incr.Value);
                                    committedValues.Add(incr.Value);
                                    Interlocked.Increment(ref committed);
                                }
                                catch (SlotlaneWatchException e)
                                {
                                    if (e is SlotlaneWatchMovedException) errors.Enqueue("moved: " + e);
                                    Interlocked.Increment(ref aborted);
                                }
                            }
                        }
                    }
                    catch (Exception e) { errors.Enqueue(e.ToString()); }
                }) { IsBackground = true }).ToList();
                ts.ForEach(t => t.Start());
                foreach (var t in ts) Assert.That(t.Join(TimeSpan.FromSeconds(120)), Is.True, "a transaction thread hung");
                Assert.That(errors, Is.Empty, string.Join("\n", errors));
                Console.WriteLine("{0}: {1} committed, {2} aborted", where, committed, aborted);
                Assert.That(committed + aborted, Is.EqualTo(threads * attempts));
                Assert.That(committed, Is.GreaterThan(0));
                // every committed transaction's effect is there, no aborted one's
                Assert.That(c.Get(key), Is.EqualTo(committed.ToString()));
                CollectionAssert.AreEquivalent(Enumerable.Range(1, (int)committed).Select(x => (long)x), committedValues);
            }
        }

        [Test, TestCaseSource("Where")]
        public void TransactionHelperRetriesUntilEveryIncrementCommits(string where)
        {
            string key = Key(where, "helper");
            const int threads = 8, each = 15;
            using (var c = SlotlaneClient.Connect(new ClientOptions { Url = Url(where), MaxPoolSize = threads + 1 }))
            {
                c.Delete(key);
                long bodies = 0;
                var errors = new ConcurrentQueue<string>();
                var ts = Enumerable.Range(0, threads).Select(t => new Thread(() =>
                {
                    try
                    {
                        for (int i = 0; i < each; i++)
                        {
                            Reply<bool> set = default(Reply<bool>);
                            long wrote = c.Transaction(new object[] { key }, tx =>
                            {
                                Interlocked.Increment(ref bodies);
                                object v = tx.Execute("GET", key);
                                long n = v == null ? 0 : long.Parse(Encoding.ASCII.GetString((byte[])v));
                                set = tx.Multi().Set(key, n + 1);
                                return n + 1;
                            });
                            if (!set.Value) errors.Enqueue("SET in EXEC: " + set.Value);
                            if (wrote < 1) errors.Enqueue("wrote " + wrote);
                        }
                    }
                    catch (Exception e) { errors.Enqueue(e.ToString()); }
                }) { IsBackground = true }).ToList();
                ts.ForEach(t => t.Start());
                foreach (var t in ts) Assert.That(t.Join(TimeSpan.FromSeconds(120)), Is.True, "a transaction thread hung");
                Assert.That(errors, Is.Empty, string.Join("\n", errors));
                Console.WriteLine("{0}: {1} bodies for {2} commits", where, bodies, threads * each);
                // GET then SET n+1 is lost-update prone: only WATCH makes the count exact
                Assert.That(c.Get(key), Is.EqualTo((threads * each).ToString()));
                Assert.That(bodies, Is.GreaterThanOrEqualTo(threads * each));
            }
        }

        [Test, TestCaseSource("Where")]
        public void AChangedWatchedKeyAbortsAndAppliesNothing(string where)
        {
            string key = Key(where, "abort"), other = Key(where, "abort-other");
            using (var c = SlotlaneClient.Connect(Url(where)))
            using (var tx = c.CreateTransaction())
            {
                c.Set(key, "1");
                c.Delete(other);
                tx.Watch(key);
                Assert.That(tx.IsWatching, Is.True);
                Assert.That(tx.Slot, Is.EqualTo(SlotlaneClient.KeySlot(key)));
                c.Set(key, "changed"); // another connection changes the watched key
                Pipeline p = tx.Multi();
                p.Set(other, "x");
                Reply<long> incr = p.Incr(key);
                var e = Assert.Throws<SlotlaneWatchException>(() => p.Execute());
                Assert.That(e, Is.Not.InstanceOf<SlotlaneWatchMovedException>());
                StringAssert.Contains("aborted", e.Message);
                Assert.Throws<InvalidOperationException>(() => { long x = incr.Value; });
                Assert.That(tx.IsWatching, Is.False);
                Assert.That(c.Get(other), Is.Null);
                Assert.That(c.Get(key), Is.EqualTo("changed"));

                // the same transaction watches again and commits
                tx.Watch(key);
                Pipeline p2 = tx.Multi();
                Reply<bool> set = p2.Set(key, "2");
                Reply<string> get = p2.Get(key);
                object[] r = p2.Execute();
                Assert.That(r.Length, Is.EqualTo(2));
                Assert.That(set.Value, Is.True);
                Assert.That(get.Value, Is.EqualTo("2"));
            }
        }

        [Test, TestCaseSource("Where")]
        public void AnAbandonedSessionComesBackClean(string where)
        {
            string key = Key(where, "abandoned");
            using (var c = SlotlaneClient.Connect(new ClientOptions { Url = Url(where), MaxPoolSize = 2 }))
            {
                c.Set(key, "10");
                long id;
                var tx = c.CreateTransaction();
                tx.Watch(key);
                id = (long)tx.Execute("CLIENT", "ID");
                Assert.That(tx.Execute("MULTI"), Is.EqualTo("OK"));
                Assert.That(tx.Execute("INCR", key), Is.EqualTo("QUEUED"));
                tx.Dispose(); // without EXEC: the core sends DISCARD and gives the connection back
                tx.Dispose(); // a second time: nothing
                Assert.Throws<ObjectDisposedException>(() => tx.Execute("GET", key));

                Assert.That(c.Get(key), Is.EqualTo("10"), "the queued INCR ran");
                using (var again = c.CreateTransaction())
                {
                    Assert.That(again.Execute("GET", key), Is.EqualTo(Encoding.ASCII.GetBytes("10")));
                    Assert.That((long)again.Execute("CLIENT", "ID"), Is.EqualTo(id), "the leased connection was not reused");
                    string info = Encoding.UTF8.GetString((byte[])again.Execute("CLIENT", "INFO"));
                    StringAssert.Contains(" multi=-1 ", info, "still in MULTI: " + info);
                    // no WATCH left on it: a key changed elsewhere does not abort an unwatched MULTI ... EXEC
                    c.Set(key, "11");
                    Pipeline p = again.Multi();
                    Reply<long> incr = p.Incr(key);
                    p.Execute();
                    Assert.That(incr.Value, Is.EqualTo(12));
                }
            }
        }

        [Test, TestCaseSource("Where")]
        public void CrossSlotIsRefusedBeforeSending(string where)
        {
            string a = "cstx:{a}:" + where, b = "cstx:{b}:" + where;
            Assert.That(SlotlaneClient.KeySlot(a), Is.Not.EqualTo(SlotlaneClient.KeySlot(b)));
            using (var c = SlotlaneClient.Connect(Url(where)))
            using (var tx = c.CreateTransaction())
            {
                c.Set(b, "untouched");
                // keys of two slots in one WATCH: the client's refusal (a SlotlaneClusterException), not the server's reply
                var e = Assert.Throws<SlotlaneClusterException>(() => tx.Watch(a, b));
                StringAssert.Contains("CROSSSLOT", e.Message);
                Assert.That(e.Kind, Is.EqualTo(ErrorKind.Cluster));

                tx.Watch(a);
                var e2 = Assert.Throws<SlotlaneClusterException>(() => tx.Execute("GET", b));
                StringAssert.Contains("CROSSSLOT", e2.Message);
                Pipeline p = tx.Multi();
                p.Set(a, "1");
                p.Set(b, "changed");
                var e3 = Assert.Throws<SlotlaneClusterException>(() => p.Execute());
                StringAssert.Contains("CROSSSLOT", e3.Message);
                Assert.That(c.Get(b), Is.EqualTo("untouched"));
                Assert.That(c.Get(a), Is.Null.Or.Not.EqualTo("1"));

                // the session is still usable: nothing was sent
                tx.Watch(a);
                Pipeline ok = tx.Multi();
                ok.Set(a, "2");
                ok.Execute();
                Assert.That(c.Get(a), Is.EqualTo("2"));
            }
        }

        [Test]
        public void AWatchedSlotMigratedIsWatchMoved()
        {
            string url = Servers.StartChaos();
            try
            {
                int[] ports = File.ReadAllLines(Path.Combine(Servers.ChaosDir, "ports")).Where(l => l.Trim().Length > 0).Select(int.Parse).ToArray();
                using (var c = SlotlaneClient.Connect(new ClientOptions { Url = url, CommandTimeout = TimeSpan.FromSeconds(5) }))
                {
                    // a key of the first node's slots
                    string key = Enumerable.Range(0, 100000).Select(i => "cstx:moved:{" + i + "}")
                        .First(k => (long)c.Execute(Route.Node(Servers.Host + ":" + ports[0]), "CLUSTER", "COUNTKEYSINSLOT", SlotlaneClient.KeySlot(k)) == 0
                                    && IsOwner(c, ports[0], SlotlaneClient.KeySlot(k)));
                    int slot = SlotlaneClient.KeySlot(key);
                    c.Set(key, "1");
                    using (var tx = c.CreateTransaction())
                    {
                        tx.Watch(key);
                        Assert.That(tx.Execute("GET", key), Is.EqualTo(Encoding.ASCII.GetBytes("1")));
                        Servers.Script("redis-cluster.sh", "migrate " + Servers.ChaosDir + " " + slot + " " + ports[0] + " " + ports[1]);
                        // the watched connection's node answers MOVED now: the distinct error, not a retry elsewhere
                        Pipeline p = tx.Multi();
                        p.Incr(key);
                        var e = Assert.Throws<SlotlaneWatchMovedException>(() => p.Execute());
                        Assert.That(e, Is.InstanceOf<SlotlaneWatchException>(), "a WatchException: the usual retry loop takes it up");
                        Assert.That(c.Get(key), Is.EqualTo("1"), "nothing applied");
                        // a new Watch pins the slot's new owner
                        tx.Watch(key);
                        Pipeline again = tx.Multi();
                        Reply<long> incr = again.Incr(key);
                        again.Execute();
                        Assert.That(incr.Value, Is.EqualTo(2));
                    }
                    // the helper retries a moved slot on the new owner too
                    Servers.Script("redis-cluster.sh", "migrate " + Servers.ChaosDir + " " + slot + " " + ports[1] + " " + ports[2]);
                    int bodies = 0;
                    long v = c.Transaction(new object[] { key }, tx =>
                    {
                        bodies++;
                        long n = long.Parse(Encoding.ASCII.GetString((byte[])tx.Execute("GET", key)));
                        tx.Multi().Set(key, n + 1);
                        return n + 1;
                    });
                    Console.WriteLine("the helper after a migration: {0} bodies", bodies);
                    Assert.That(v, Is.EqualTo(3));
                    Assert.That(c.Get(key), Is.EqualTo("3"));
                    Assert.That((long)c.Execute(Route.Node(Servers.Host + ":" + ports[2]), "CLUSTER", "COUNTKEYSINSLOT", slot), Is.EqualTo(1L));
                }
            }
            finally { Servers.StopChaos(); }
        }

        private static bool IsOwner(SlotlaneClient c, int port, int slot)
        {
            foreach (object r in (object[])c.Execute(Route.Node(Servers.Host + ":" + port), "CLUSTER", "SLOTS"))
            {
                var range = (object[])r;
                if ((long)range[0] <= slot && slot <= (long)range[1] && (long)((object[])range[2])[1] == port) return true;
            }
            return false;
        }

        [Test]
        public void ExecAbortThrowsTheRefusedCommandsError()
        {
            string key = Key("bundled", "execabort");
            using (var c = SlotlaneClient.Connect(Servers.Bundled))
            using (var tx = c.CreateTransaction())
            {
                c.Set(key, "5");
                tx.Watch(key);
                Pipeline p = tx.Multi();
                p.Incr(key);
                p.Add("INCR"); // wrong number of arguments: the server refuses the whole transaction
                var e = Assert.Throws<SlotlaneReplyException>(() => p.Execute());
                StringAssert.Contains("wrong number of arguments", e.Message);
                Assert.That(c.Get(key), Is.EqualTo("5"));
            }
        }

        [Test]
        public void TypedReadsAndMisuse()
        {
            string key = Key("bundled", "typed");
            using (var c = SlotlaneClient.Connect(Servers.Bundled))
            {
                c.Set(key, "7");
                using (var tx = c.CreateTransaction())
                {
                    Assert.That(tx.Slot, Is.EqualTo(-1));
                    Assert.That(tx.IsWatching, Is.False);
                    Assert.Throws<ArgumentException>(() => tx.Watch());
                    Assert.Throws<ArgumentException>(() => tx.Watch(key, null));
                    tx.Watch(key);
                    using (Pipeline reads = tx.CreatePipeline())
                    {
                        Reply<string> g = reads.Get(key);
                        Assert.That(reads.Execute().Length, Is.EqualTo(1));
                        Assert.That(g.Value, Is.EqualTo("7"));
                        Assert.That(reads.Transaction, Is.SameAs(tx));
                        Assert.Throws<NotSupportedException>(() => reads.ExecuteAsync());
                    }
                    Pipeline m = tx.Multi();
                    Assert.Throws<InvalidOperationException>(() => tx.Multi());
                    Assert.Throws<InvalidOperationException>(() => tx.Watch(key));
                    Assert.Throws<NotSupportedException>(() => m.ExecuteAsync());
                    var e = Assert.Throws<SlotlaneReplyException>(() => tx.Execute("LPUSH", key, "x"));
                    StringAssert.Contains("WRONGTYPE", e.Message);
                    m.Incr(key);
                    Assert.That(m.Execute(), Is.EqualTo(new object[] { 8L }));
                    Assert.That(m.Execute(), Is.Empty); // nothing queued: an empty MULTI ... EXEC
                }
                Assert.Throws<ArgumentException>(() => c.Transaction(new object[0], tx => 1));
                Assert.Throws<ArgumentNullException>(() => c.Transaction(new object[] { key }, (Func<Transaction, int>)null));
                object[] replies = c.Transaction(new object[] { key }, tx => { tx.Multi().Incr(key); });
                Assert.That(replies, Is.EqualTo(new object[] { 9L }));
            }
        }

        [Test]
        public void MaxAttemptsEndsARetryLoop()
        {
            string key = Key("bundled", "attempts");
            using (var c = SlotlaneClient.Connect(Servers.Bundled))
            using (var other = SlotlaneClient.Connect(Servers.Bundled))
            {
                int bodies = 0;
                Assert.Throws<SlotlaneWatchException>(() => c.Transaction(new object[] { key }, tx =>
                {
                    bodies++;
                    other.Set(key, bodies); // changes the watched key every time: always aborted
                    tx.Multi().Incr(key);
                    return 0;
                }, 3));
                Assert.That(bodies, Is.EqualTo(3));
                Assert.That(c.Get(key), Is.EqualTo("3"));
            }
        }
    }
}
