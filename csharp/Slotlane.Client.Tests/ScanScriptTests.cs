using System;
using System.Collections.Generic;
using System.Linq;
using System.Text;
using NUnit.Framework;

namespace Slotlane.Tests
{
    /// <summary>ClusterScan, ClusterNode and Script against the bundled server (per-shard), standalone Redis
    /// and a 3-primary Redis Cluster: 10 000 keys each once, MATCH and TYPE, an empty keyspace, the node list,
    /// a script with keys on every shard reloaded once (the node's INFO commandstats) after SCRIPT FLUSH on one
    /// node, FUNCTION LOAD then FCALL on every shard.</summary>
    [TestFixture]
    public class ScanScriptTests
    {
        private static IEnumerable<string[]> Targets()
        {
            yield return new[] { "bundled", Servers.Bundled };
            yield return new[] { "plain", Servers.PlainRedis };
            yield return new[] { "redis-cluster", Servers.ClusterRedis };
        }

        private static Dictionary<string, int> Scan(SlotlaneClient c, string match = null, int count = 0, string type = null)
        {
            var seen = new Dictionary<string, int>();
            foreach (byte[] k in ClusterScan.Keys(c, match, count, type))
            {
                string s = Encoding.UTF8.GetString(k);
                int n;
                seen.TryGetValue(s, out n);
                seen[s] = n + 1;
            }
            return seen;
        }

        private static string KeyOn(ClusterNode n, string prefix)
        {
            for (int i = 0; ; i++)
            {
                string k = prefix + i;
                int s = SlotlaneClient.KeySlot(k);
                if (s >= n.Slots[0][0] && s <= n.Slots[0][1]) return k;
            }
        }

        private static long ScriptLoads(SlotlaneClient c, string addr)
        {
            object info = c.Execute(Route.Node(addr), "INFO", "commandstats");
            string text = info is byte[] ? Encoding.UTF8.GetString((byte[])info) : info.ToString();
            foreach (string line in text.Split('\n'))
                if (line.StartsWith("cmdstat_script|load:calls=")) return long.Parse(line.Split(new[] { "calls=" }, StringSplitOptions.None)[1].Split(',')[0]);
            return 0;
        }

        [Test]
        public void EveryKeyOnceMatchTypeEmptyAndNodes()
        {
            foreach (string[] t in Targets())
                using (var c = SlotlaneClient.Connect(new ClientOptions { Url = t[1] }))
                {
                    c.Flushall();
                    Assert.That(Scan(c).Count, Is.EqualTo(0), t[0] + ": empty");
                    for (int i = 0; i < 10000; i += 1000)
                    {
                        var p = c.CreatePipeline();
                        for (int k = i; k < i + 1000; k++) p.Add("SET", "cs:" + k, "v");
                        p.ExecuteOrThrow();
                    }
                    for (int i = 0; i < 20; i++) c.Execute("HSET", "csh:" + i, "f", "v");
                    var seen = Scan(c, count: 500);
                    Assert.That(seen.Count, Is.EqualTo(10020), t[0]);
                    Assert.That(seen.Values.All(n => n == 1), Is.True, t[0] + ": a key twice");
                    var m = Scan(c, "cs:1*");
                    Assert.That(m.Count, Is.EqualTo(1111), t[0] + ": MATCH");
                    Assert.That(m.Keys.All(k => k.StartsWith("cs:1")), Is.True, t[0]);
                    Assert.That(Scan(c, type: "hash").Count, Is.EqualTo(20), t[0] + ": TYPE");
                    var ps = ClusterNode.List(c).Where(n => n.IsPrimary).ToList();
                    Assert.That(ps.Sum(n => n.Slots.Sum(r => r[1] - r[0] + 1)), Is.EqualTo(16384), t[0]);
                    Assert.That(ps.Count, Is.EqualTo(t[0] == "plain" ? 1 : t[0] == "bundled" ? 4 : 3), t[0]);
                    foreach (var n in ps) Assert.That(c.Execute(Route.Node(n.Address), "PING"), Is.EqualTo("PONG"));
                    Assert.Throws<ArgumentException>(() => ClusterScan.Keys(c, null, -1));
                    using (var e = ClusterScan.Keys(c, null, 10).GetEnumerator()) Assert.That(e.MoveNext(), Is.True);
                    c.Flushall();
                }
        }

        [Test]
        public void ScriptOnEveryShardReloadedOnceAndFunctions()
        {
            foreach (string[] t in Targets())
                using (var c = SlotlaneClient.Connect(new ClientOptions { Url = t[1] }))
                {
                    c.Flushall();
                    c.Execute("SCRIPT", "FLUSH");
                    var s = Script.Create(c, "return redis.call('INCRBY', KEYS[1], ARGV[1])");
                    object sha = c.Execute("SCRIPT", "LOAD", "return redis.call('INCRBY', KEYS[1], ARGV[1])");
                    Assert.That(Encoding.UTF8.GetString((byte[])sha), Is.EqualTo(s.Sha), t[0]);
                    var ps = ClusterNode.List(c).Where(n => n.IsPrimary).ToList();
                    var keys = ps.Select(n => KeyOn(n, "ck:")).ToList();
                    foreach (string k in keys) Assert.That(s.Run(new object[] { k }, "5"), Is.EqualTo(5L), t[0] + " " + k);
                    string victim = ps[ps.Count - 1].Address, last = keys[keys.Count - 1];
                    long before = ScriptLoads(c, victim);
                    c.Execute(Route.Node(victim), "SCRIPT", "FLUSH");
                    Assert.That(s.Run(new object[] { last }, "1"), Is.EqualTo(6L), t[0]);
                    Assert.That(s.Run(new object[] { last }, "1"), Is.EqualTo(7L), t[0]);
                    long after = ScriptLoads(c, victim);
                    if (before > 0 || after > 0) Assert.That(after - before, Is.EqualTo(1), t[0] + ": reloads on " + victim);
                    var ro = Script.Create(c, "return redis.call('GET', KEYS[1])");
                    Assert.That(Encoding.UTF8.GetString((byte[])ro.RunReadOnly(new object[] { keys[0] })), Is.EqualTo(keys.Count == 1 ? "7" : "5"), t[0]);
                    Assert.Throws<SlotlaneReplyException>(() => Script.Create(c, "not lua").Run(new object[] { keys[0] }));
                    c.Execute("FUNCTION", "FLUSH");
                    object lib = c.Execute("FUNCTION", "LOAD",
                        "#!lua name=cslib\nredis.register_function('csf', function(keys, args) return redis.call('INCR', keys[1]) end)");
                    Assert.That(Encoding.UTF8.GetString((byte[])lib), Is.EqualTo("cslib"), t[0]);
                    foreach (string k in keys)
                    {
                        long v = long.Parse(Encoding.UTF8.GetString((byte[])c.Execute("GET", k)));
                        Assert.That(c.Execute("FCALL", "csf", "1", k), Is.EqualTo(v + 1), t[0] + " FCALL " + k);
                    }
                    c.Execute("FUNCTION", "DELETE", "cslib");
                    Assert.Throws<SlotlaneReplyException>(() => c.Execute("FCALL", "csf", "1", keys[0]));
                    c.Flushall();
                }
        }
    }
}
