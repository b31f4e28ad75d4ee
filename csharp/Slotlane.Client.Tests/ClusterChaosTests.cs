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
    /// <summary>Against Debian's Redis Cluster (ci/redis-cluster.sh, 3 primaries, no replicas), short runs:
    /// a primary killed while pipelines run, and MOVED/ASK during a live reshard.</summary>
    [TestFixture]
    public class ClusterChaosTests
    {
        [TearDown]
        public void Stop() { Servers.StopChaos(); }

        /// <summary>slot → client port, from CLUSTER SLOTS.</summary>
        private static int[] SlotOwners(SlotlaneClient c)
        {
            var owners = new int[16384];
            foreach (object[] range in (object[])c.Execute("CLUSTER", "SLOTS"))
            {
                long a = (long)range[0], b = (long)range[1];
                int port = (int)(long)((object[])range[2])[1];
                for (long s = a; s <= b; s++) owners[s] = port;
            }
            return owners;
        }

        [Test]
        public void PrimaryKilledMidPipelineFailsOnlyItsCommands()
        {
            string url = Servers.StartChaos();
            int[] ports = File.ReadAllLines(Path.Combine(Servers.ChaosDir, "ports")).Where(l => l.Trim().Length > 0).Select(int.Parse).ToArray();
            Assert.That(ports.Length, Is.EqualTo(3));
            int victim = ports[1];
            using (var c = SlotlaneClient.Connect(new ClientOptions { Url = url, ConnectTimeout = TimeSpan.FromMilliseconds(300), CommandTimeout = TimeSpan.FromSeconds(3) }))
            {
                int[] owner = SlotOwners(c);
                string[] keys = Enumerable.Range(0, 3000).Select(i => "kill:" + i).ToArray();
                var victimKey = keys.Select(k => owner[SlotlaneClient.KeySlot(k)] == victim).ToArray();
                Assert.That(victimKey.Count(x => x), Is.InRange(500, 1500));
                var problems = new ConcurrentQueue<string>();
                int pipelines = 0, partial = 0, failedCmds = 0;
                var stop = new ManualResetEventSlim();
                var worker = new Thread(() =>
                {
                    using (var p = c.CreatePipeline())
                    {
                        while (!stop.IsSet)
                        {
                            foreach (string k in keys) p.Set(k, k);
                            object[] r;
                            try { r = p.Execute(); }
                            catch (Exception e) { problems.Enqueue("pipeline threw " + e); return; }
                            int ok = 0, bad = 0;
                            for (int i = 0; i < keys.Length; i++)
                            {
                                if ("OK".Equals(r[i])) { ok++; continue; }
                                bad++;
                                var ex = r[i] as SlotlaneException;
                                if (ex == null || !(ex is SlotlaneConnectionException || ex is SlotlaneClusterException || ex is SlotlaneTimeoutException))
                                    problems.Enqueue("command " + i + ": unexpected result " + r[i]);
                                else if (!victimKey[i])
                                    problems.Enqueue("command " + i + " for a live node failed: " + ex.Message);
                            }
                            if (ok > 0 && bad > 0) Interlocked.Increment(ref partial);
                            Interlocked.Add(ref failedCmds, bad);
                            Interlocked.Increment(ref pipelines);
                        }
                    }
                });
                worker.Start();
                while (Volatile.Read(ref pipelines) < 5) Thread.Sleep(5);
                Servers.Script("redis-cluster.sh", "kill " + Servers.ChaosDir + " " + victim);
                int after = Volatile.Read(ref pipelines);
                var deadline = DateTime.UtcNow.AddSeconds(10);
                while (Volatile.Read(ref pipelines) < after + 5 && DateTime.UtcNow < deadline) Thread.Sleep(10);
                stop.Set();
                Assert.That(worker.Join(15000), Is.True, "the worker finished");
                Assert.That(problems, Is.Empty, string.Join("\n", problems.Take(5)));
                Assert.That(partial, Is.GreaterThan(0), "pipelines where only the dead node's commands failed");
                Assert.That(failedCmds, Is.GreaterThan(0));

                // the node comes back: the next batches reconnect and every command succeeds again
                Servers.Script("redis-cluster.sh", "restart " + Servers.ChaosDir + " " + victim);
                bool allOk = false;
                deadline = DateTime.UtcNow.AddSeconds(15);
                using (var p = c.CreatePipeline())
                    while (!allOk && DateTime.UtcNow < deadline)
                    {
                        foreach (string k in keys) p.Get(k);
                        object[] r = p.Execute();
                        allOk = r.All(x => x is byte[] || x == null);
                        if (!allOk) Thread.Sleep(200);
                    }
                Assert.That(allOk, Is.True, "every command succeeds after the restart");
                Assert.That(c.GetStats().Reconnects, Is.GreaterThan(0));
            }
        }

        [Test]
        public void MovedDuringALiveReshard()
        {
            string url = Servers.StartChaos();
            int[] ports = File.ReadAllLines(Path.Combine(Servers.ChaosDir, "ports")).Where(l => l.Trim().Length > 0).Select(int.Parse).ToArray();
            using (var c = SlotlaneClient.Connect(new ClientOptions { Url = url, CommandTimeout = TimeSpan.FromSeconds(5) }))
            {
                int[] owner = SlotOwners(c);
                // three slots of the first node, 40 keys each (hash tags), moved to the second node
                var tags = Enumerable.Range(0, 100000).Select(i => "t" + i).Where(t => owner[SlotlaneClient.KeySlot(t)] == ports[0])
                                     .GroupBy(SlotlaneClient.KeySlot).Take(3).Select(g => g.First()).ToArray();
                Assert.That(tags.Length, Is.EqualTo(3));
                string[] keys = tags.SelectMany(t => Enumerable.Range(0, 40).Select(i => "{" + t + "}:" + i)).ToArray();
                using (var p = c.CreatePipeline())
                {
                    foreach (string k in keys) p.Set(k, "v:" + k);
                    Assert.That(p.ExecuteOrThrow().All(x => "OK".Equals(x)), Is.True);
                }
                var before = c.GetStats();
                var migrate = new Thread(() =>
                {
                    foreach (string t in tags)
                        Servers.Script("redis-cluster.sh", "migrate " + Servers.ChaosDir + " " + SlotlaneClient.KeySlot(t) + " " + ports[0] + " " + ports[1]);
                });
                migrate.Start();
                var problems = new List<string>();
                int rounds = 0;
                using (var p = c.CreatePipeline())
                {
                    while (migrate.IsAlive || rounds < 3)
                    {
                        foreach (string k in keys) p.Get(k);
                        object[] r = p.Execute();
                        for (int i = 0; i < keys.Length; i++)
                        {
                            var b = r[i] as byte[];
                            if (b == null || Encoding.UTF8.GetString(b) != "v:" + keys[i]) problems.Add(keys[i] + ": " + r[i]);
                        }
                        rounds++;
                        if (problems.Count > 0) break;
                    }
                }
                Assert.That(migrate.Join(60000), Is.True);
                Assert.That(problems, Is.Empty, string.Join("\n", problems.Take(5)));
                var after = c.GetStats();
                Assert.That(after.Moved + after.Ask - before.Moved - before.Ask, Is.GreaterThan(0), "redirects followed");
                Assert.That(after.Moved - before.Moved, Is.GreaterThan(0), "MOVED after the slots changed owner");
                // the slots really moved
                foreach (string t in tags)
                    Assert.That(c.Execute(Route.Node("127.0.0.1:" + ports[1]), "CLUSTER", "COUNTKEYSINSLOT", SlotlaneClient.KeySlot(t)), Is.EqualTo(40L));
                Assert.That(rounds, Is.GreaterThan(1));
            }
        }
    }
}
