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
    /// <summary>ClientOptions.ReadFrom, RetryWrites and OnEvent against a Redis Cluster of 3 primaries x 1 replica
    /// (Servers.ReplicaCluster): reads land where ReadFrom says, by each node's own INFO commandstats; after a
    /// CLUSTER FAILOVER of a replica and a refresh the handler sees TopologyChanged; with a replica killed, reads
    /// go to its primary and NodeDown names it.</summary>
    [TestFixture]
    public class ReplicaReadTests
    {
        private static readonly TimeSpan Wait = TimeSpan.FromSeconds(30);

        private static int[] Ports()
        {
            string url = Servers.ReplicaCluster;
            Assert.That(url, Is.Not.Null);
            return File.ReadAllLines(Path.Combine(Servers.ReplicaDir, "ports")).Where(l => l.Trim().Length > 0).Select(int.Parse).ToArray();
        }

        private static SlotlaneClient Node(int port)
        {
            return SlotlaneClient.Connect(new ClientOptions { Host = Servers.Host, Port = port, Mode = ClientMode.Plain });
        }

        private static string Text(object o) { return o is byte[] ? Encoding.UTF8.GetString((byte[])o) : Convert.ToString(o); }

        private static long GetCalls(int port)
        {
            using (var c = Node(port))
            {
                foreach (string line in Text(c.Execute("INFO", "commandstats")).Split('\n'))
                    if (line.StartsWith("cmdstat_get:"))
                        return long.Parse(line.Split(new[] { "calls=" }, StringSplitOptions.None)[1].Split(',')[0]);
                return 0;
            }
        }

        private static bool IsReplica(int port)
        {
            using (var c = Node(port)) return Text(c.Execute("INFO", "replication")).Contains("role:slave");
        }

        /// <summary>GETs of every key with readFrom: {on the replicas, on the primaries} by the nodes' counters.</summary>
        private static long[] ReadsOn(ReadFrom readFrom, List<string> keys, out long replicaReads)
        {
            int[] ports = Ports();
            var rep = ports.Where(IsReplica).ToList();
            var prim = ports.Except(rep).ToList();
            Assert.That(rep.Count, Is.EqualTo(3), "replicas");
            var before = ports.ToDictionary(p => p, GetCalls);
            using (var c = SlotlaneClient.Connect(new ClientOptions { Url = Servers.ReplicaCluster, ReadFrom = readFrom }))
            {
                using (var p = c.CreatePipeline())
                {
                    foreach (string k in keys) p.Add("GET", k);
                    object[] got = p.ExecuteOrThrow();
                    for (int i = 0; i < keys.Count; i++) Assert.That(Text(got[i]), Is.EqualTo(keys[i]));
                }
                replicaReads = c.GetStats().ReplicaReads;
            }
            return new[] { rep.Sum(p => GetCalls(p) - before[p]), prim.Sum(p => GetCalls(p) - before[p]) };
        }

        [Test]
        public void ReadsLandWhereReadFromSays()
        {
            var keys = Enumerable.Range(0, 100).Select(i => "csrf:" + i).ToList();
            using (var c = SlotlaneClient.Connect(new ClientOptions { Url = Servers.ReplicaCluster }))
            using (var p = c.CreatePipeline())
            {
                foreach (string k in keys) p.Add("SET", k, k);
                p.ExecuteOrThrow();
            }
            // the replicas hold the writes before they are read: each replica's replication offset
            // reaches its primary's (a WAIT on another connection would wait for that connection's
            // writes only — none — and return at once: the CI run saw a replica read miss csrf:3)
            foreach (int replica in Ports().Where(IsReplica)) WaitReplicated(replica);
            long rr;
            long[] pref = ReadsOn(ReadFrom.PreferReplica, keys, out rr);
            Assert.That(pref, Is.EqualTo(new long[] { 100, 0 }), "PreferReplica: {replicas, primaries}");
            Assert.That(rr, Is.EqualTo(100));
            long[] robin = ReadsOn(ReadFrom.ReplicasRoundRobin, keys, out rr);
            Assert.That(robin, Is.EqualTo(new long[] { 100, 0 }), "ReplicasRoundRobin: {replicas, primaries}");
            Assert.That(rr, Is.EqualTo(100));
            long[] prim = ReadsOn(ReadFrom.Primary, keys, out rr);
            Assert.That(prim, Is.EqualTo(new long[] { 0, 100 }), "Primary: {replicas, primaries}");
            Assert.That(rr, Is.EqualTo(0));
            Assert.Throws<ArgumentOutOfRangeException>(() => SlotlaneClient.Connect(new ClientOptions { Url = Servers.ReplicaCluster, ReadFrom = (ReadFrom)7 }));
        }

        // INFO replication's master_repl_offset: on a primary what it has sent, on a replica what it applied
        private static long ReplOffset(int port)
        {
            using (var c = Node(port))
                foreach (string line in Text(c.Execute("INFO", "replication")).Split('\n'))
                    if (line.StartsWith("master_repl_offset:")) return long.Parse(line.Substring(19).Trim());
            throw new InvalidOperationException(port + " has no master_repl_offset");
        }

        // Until the replica has applied everything its primary had sent when this was called.
        private static void WaitReplicated(int replica)
        {
            long want = ReplOffset(PrimaryOf(replica));
            for (int i = 0; ReplOffset(replica) < want; i++)
            {
                if (i == 30000) Assert.Fail("replica " + replica + " never reached offset " + want);
                Thread.Sleep(2); // a poll interval on the server's counter, never a verdict
            }
        }

        private static int PrimaryOf(int replica)
        {
            using (var c = Node(replica))
                foreach (string line in Text(c.Execute("INFO", "replication")).Split('\n'))
                    if (line.StartsWith("master_port:")) return int.Parse(line.Substring(12).Trim());
            throw new InvalidOperationException(replica + " has no master_port");
        }

        [Test]
        public void ReadsFallBackToThePrimaryWhileTheReplicaIsDown()
        {
            int[] ports = Ports();
            int replica = ports.First(IsReplica), primary = PrimaryOf(replica);
            var got = new BlockingCollection<ClientEventArgs>();
            var o = new ClientOptions { Url = Servers.ReplicaCluster, ReadFrom = ReadFrom.PreferReplica, OnEvent = (s, e) => got.Add(e) };
            using (var c = SlotlaneClient.Connect(o))
            {
                var owner = new int[16384];
                foreach (object[] range in (object[])c.Execute("CLUSTER", "SLOTS"))
                    for (long x = (long)range[0]; x <= (long)range[1]; x++) owner[x] = (int)(long)((object[])range[2])[1];
                var keys = Enumerable.Range(0, 1000).Select(i => "csfb:" + i).Where(k => owner[SlotlaneClient.KeySlot(k)] == primary).Take(20).ToList();
                Assert.That(keys.Count, Is.EqualTo(20));
                foreach (string k in keys) c.Set(k, k);
                WaitReplicated(replica);
                Action readAll = () =>
                {
                    using (var p = c.CreatePipeline())
                    {
                        foreach (string k in keys) p.Add("GET", k);
                        object[] r = p.ExecuteOrThrow();
                        for (int i = 0; i < keys.Count; i++) Assert.That(Text(r[i]), Is.EqualTo(keys[i]));
                    }
                };
                long onReplica = GetCalls(replica), onPrimary = GetCalls(primary);
                readAll();   // the replica serves them (its connection is up from now on)
                Assert.That(GetCalls(replica) - onReplica, Is.EqualTo(20), "reads on the replica");
                Assert.That(GetCalls(primary) - onPrimary, Is.EqualTo(0), "reads on the primary");
                Servers.Script("redis-cluster.sh", "kill " + Servers.ReplicaDir + " " + replica);
                try
                {
                    onPrimary = GetCalls(primary);
                    readAll();   // no read fails: they go to the primary
                    Assert.That(GetCalls(primary) - onPrimary, Is.GreaterThanOrEqualTo(20), "reads on the primary while the replica is down");
                    ClientEventArgs e;
                    DateTime deadline = DateTime.UtcNow + Wait;
                    do
                    {
                        TimeSpan left = deadline - DateTime.UtcNow;
                        Assert.That(left, Is.GreaterThan(TimeSpan.Zero), "no NodeDown for the killed replica");
                        if (!got.TryTake(out e, left)) continue;
                        if (e.Kind == ClientEventKind.NodeDown && e.Address == "127.0.0.1:" + replica) break;
                    } while (true);
                    Assert.That(c.GetStats().NodesDown, Is.GreaterThanOrEqualTo(1));
                }
                finally { Servers.Script("redis-cluster.sh", "restart " + Servers.ReplicaDir + " " + replica); }
            }
        }

        /// <summary>An INCR held by CLIENT PAUSE WRITE on its primary (the server has it: blocked_clients says so)
        /// when its connection is killed: it was sent and never executed. Without RetryWrites it fails with the
        /// documented I/O error; with it, it is sent once more and runs once.</summary>
        [TestCase(false)]
        [TestCase(true)]
        public void ASentWriteWhoseConnectionBrokeFailsUnlessRetryWrites(bool retry)
        {
            string key = "csrw:" + retry;
            using (var c = SlotlaneClient.Connect(new ClientOptions { Url = Servers.ReplicaCluster, RetryWrites = retry }))
            {
                c.Set(key, "0");
                int primary = 0;
                foreach (object[] range in (object[])c.Execute("CLUSTER", "SLOTS"))
                {
                    int slot = SlotlaneClient.KeySlot(key);
                    if ((long)range[0] <= slot && slot <= (long)range[1]) primary = (int)(long)((object[])range[2])[1];
                }
                using (var admin = Node(primary))
                {
                    Func<long> blocked = () =>
                    {
                        foreach (string line in Text(admin.Execute("INFO", "clients")).Split('\n'))
                            if (line.StartsWith("blocked_clients:")) return long.Parse(line.Substring(16).Trim());
                        return -1;
                    };
                    Assert.That(blocked(), Is.EqualTo(0));
                    admin.Execute("CLIENT", "PAUSE", 20000, "WRITE");
                    System.Threading.Tasks.Task<object> incr;
                    try
                    {
                        incr = c.ExecuteAsync("INCR", key);
                        DateTime deadline = DateTime.UtcNow + Wait;
                        while (blocked() < 1) Assert.That(DateTime.UtcNow, Is.LessThan(deadline), "the INCR never reached the paused server");
                        Assert.That(admin.Execute("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"), Is.GreaterThanOrEqualTo(1L));
                    }
                    finally { admin.Execute("CLIENT", "UNPAUSE"); }
                    if (retry)
                    {
                        Assert.That(incr.Wait(Wait), Is.True);
                        Assert.That(incr.Result, Is.EqualTo(1L));
                    }
                    else
                    {
                        var e = Assert.Throws<AggregateException>(() => incr.Wait(Wait));
                        Assert.That(e.InnerException, Is.InstanceOf<SlotlaneConnectionException>(), e.ToString());
                        StringAssert.EndsWith("(the command was sent: it may have been executed)", e.InnerException.Message);
                    }
                    Assert.That(c.Get(key), Is.EqualTo(retry ? "1" : "0"), "the INCR ran " + (retry ? "once" : "never"));
                }
            }
        }

        [Test]
        public void OnEventSeesTheTopologyChangeAfterAFailover()
        {
            var got = new BlockingCollection<ClientEventArgs>();
            int handlerThread = -1, testThread = System.Threading.Thread.CurrentThread.ManagedThreadId;
            var o = new ClientOptions
            {
                Url = Servers.ReplicaCluster,
                RetryWrites = true,
                OnEvent = (s, e) => { handlerThread = System.Threading.Thread.CurrentThread.ManagedThreadId; got.Add(e); },
            };
            using (var c = SlotlaneClient.Connect(o))
            {
                c.Set("csev:k", "v");
                int replica = Ports().First(IsReplica);
                Servers.Script("redis-cluster.sh", "failover " + Servers.ReplicaDir + " " + replica);
                ClientEventArgs e;
                while (got.TryTake(out e)) { }  // what came before the refresh
                c.Refresh();
                ClientEventArgs seen = null;
                DateTime deadline = DateTime.UtcNow + Wait;
                while (seen == null)
                {
                    TimeSpan left = deadline - DateTime.UtcNow;
                    Assert.That(left, Is.GreaterThan(TimeSpan.Zero), "no TopologyChanged event after the refresh");
                    if (got.TryTake(out e, left) && e.Kind == ClientEventKind.TopologyChanged) seen = e;
                }
                StringAssert.StartsWith("127.0.0.1:", seen.Address);
                StringAssert.StartsWith("TopologyChanged 127.0.0.1:", seen.ToString());
                Assert.That(handlerThread, Is.Not.EqualTo(testThread), "the handler ran on the thread of the execution");
                Assert.That(c.Get("csev:k"), Is.EqualTo("v"));  // served across the change
            }
        }

        [Test]
        public void AHandlerThatThrowsIsContained()
        {
            int calls = 0;
            var o = new ClientOptions
            {
                Url = Servers.ReplicaCluster,
                OnEvent = (s, e) => { System.Threading.Interlocked.Increment(ref calls); throw new InvalidOperationException("boom"); },
            };
            using (var c = SlotlaneClient.Connect(o))
            {
                int replica = Ports().First(IsReplica);
                Servers.Script("redis-cluster.sh", "failover " + Servers.ReplicaDir + " " + replica);
                c.Refresh();
                DateTime deadline = DateTime.UtcNow + Wait;
                while (System.Threading.Volatile.Read(ref calls) == 0)
                {
                    Assert.That(DateTime.UtcNow, Is.LessThan(deadline), "the handler was never called");
                    System.Threading.Thread.Yield();
                }
                c.Set("csev:after", "1");   // the client works on
                Assert.That(c.Get("csev:after"), Is.EqualTo("1"));
            }
        }
    }
}
