using System;
using System.IO;
using System.Linq;
using NUnit.Framework;
using Slotlane.Testing;

namespace Slotlane.Tests
{
    /// <summary>Slotlane.Testing.SlotlaneServer, the embedded slotlane-server: two servers at once on
    /// ephemeral ports, a server stopped under a connected client (an error, not a hang or the
    /// deadline), 100 starts and stops without leaked threads or file descriptors, durability
    /// Always restarted on the same directory, bad options, the fixture base.</summary>
    [TestFixture]
    public class TestingTests
    {
        private static int Count(string dir) { return Directory.GetFileSystemEntries(dir).Length; }

        [Test]
        public void TwoServersAtOnceOnEphemeralPorts()
        {
            using (var a = new SlotlaneServer())
            using (var b = new SlotlaneServer(new SlotlaneServerOptions { Shards = 2, PortMode = PortMode.OnePort }))
            {
                Assert.AreEqual(4, a.Ports.Distinct().Count());
                Assert.IsFalse(a.Ports.Contains(0) || a.Ports.Contains(b.Ports[0]));
                Assert.AreEqual(b.Ports[0], b.Ports[1]);
                Assert.AreEqual("redis://127.0.0.1:" + a.Ports[0], a.Url);
                using (var ca = SlotlaneClient.Connect(a.Url))
                using (var cb = SlotlaneClient.Connect(b.Url))
                {
                    for (int i = 0; i < 64; i++) ca.Set("key:" + i, "a" + i);
                    cb.Set("key:1", "b1");
                    Assert.AreEqual("a1", ca.Get("key:1"));
                    Assert.AreEqual("b1", cb.Get("key:1"));
                    Assert.IsNull(cb.Get("key:2"));
                    Assert.AreEqual(64, ca.Dbsize());
                    Assert.AreEqual(1, cb.Dbsize());
                }
            }
        }

        [Test]
        public void StoppedWhileConnectedGivesErrorsNotHangs()
        {
            using (var s = new SlotlaneServer(new SlotlaneServerOptions { Shards = 2 }))
            using (var c = SlotlaneClient.Connect(new ClientOptions { Url = s.Url, CommandTimeout = TimeSpan.FromSeconds(60) }))
            {
                c.Set("k", "v");
                s.Stop();
                var e = Assert.Catch<SlotlaneException>(() => c.Get("k"));
                Assert.IsFalse(e is SlotlaneTimeoutException, "never the 60 s deadline: " + e);
                Assert.IsTrue(e is SlotlaneConnectionException || e is SlotlaneClusterException, e.ToString());
                s.Stop(); // a second stop: nothing
            }
        }

        [Test]
        public void StartStop100TimesLeaksNoThreadsOrFds()
        {
            Action<int> round = i =>
            {
                var o = new SlotlaneServerOptions { Shards = i % 3 + 1, PortMode = i % 2 == 1 ? PortMode.OnePort : PortMode.PerShard, Forward = true };
                using (var s = new SlotlaneServer(o))
                using (var c = SlotlaneClient.Connect(new ClientOptions { Url = s.Url, Mode = ClientMode.Plain }))
                {
                    c.Set("k", i);
                    s.Dispose(); // with the client still connected
                }
            };
            round(0);
            round(1);
            int fds0 = Count("/proc/self/fd"), threads0 = Count("/proc/self/task");
            for (int i = 0; i < 100; i++) round(i);
            int fds1 = Count("/proc/self/fd"), threads1 = Count("/proc/self/task");
            Console.WriteLine("100 starts/stops: fds {0} -> {1}, threads {2} -> {3}", fds0, fds1, threads0, threads1);
            Assert.AreEqual(fds0, fds1);
            // the runtime's own threads come and go; 100 x 1-3 shard threads would be hundreds
            Assert.LessOrEqual(threads1, threads0 + 4);
        }

        [Test]
        public void DurabilityAlwaysRestartKeepsData()
        {
            string dir = Path.Combine(Path.GetTempPath(), "slotlane-cs-always-" + Guid.NewGuid().ToString("N"));
            var o = new SlotlaneServerOptions { Shards = 3, Durability = Durability.Always, Dir = dir };
            try
            {
                using (var s = new SlotlaneServer(o))
                {
                    var e = Assert.Throws<InvalidOperationException>(() => new SlotlaneServer(o));
                    StringAssert.Contains("in use", e.Message);
                    using (var c = SlotlaneClient.Connect(s.Url))
                        for (int i = 0; i < 50; i++) c.Set("key:" + i, "v" + i);
                }
                using (var s = new SlotlaneServer(o))
                using (var c = SlotlaneClient.Connect(s.Url))
                {
                    Assert.AreEqual(50, c.Dbsize());
                    Assert.AreEqual("v17", c.Get("key:17"));
                }
            }
            finally
            {
                if (Directory.Exists(dir)) Directory.Delete(dir, true);
            }
        }

        [Test]
        public void TheSuitesBundledServerIsEmbedded()
        {
            // every test against the bundled server (Servers.Bundled) reaches a SlotlaneServer of this
            // process on the suite's ports: INFO's process_id is ours, on every shard
            SlotlaneServer s = Servers.BundledServer;
            CollectionAssert.AreEqual(Enumerable.Range(Servers.BundledPort, 4).ToArray(), s.Ports.ToArray());
            int pid = System.Diagnostics.Process.GetCurrentProcess().Id;
            using (var c = SlotlaneClient.Connect(Servers.Bundled))
                for (int i = 0; i < 4; i++)
                {
                    string info = System.Text.Encoding.UTF8.GetString((byte[])c.Execute(Route.Node(Servers.Host + ":" + (Servers.BundledPort + i)), "INFO", "server"));
                    StringAssert.Contains("process_id:" + pid + "\r\n", info);
                }
        }

        [Test]
        public void BadOptionsAreErrors()
        {
            StringAssert.Contains("shards", Assert.Throws<InvalidOperationException>(() => new SlotlaneServer(new SlotlaneServerOptions { Shards = 0 })).Message);
            var bad = new SlotlaneServerOptions();
            bad.Settings["maxclients"] = "many";
            StringAssert.Contains("maxclients", Assert.Throws<InvalidOperationException>(() => new SlotlaneServer(bad)).Message);
            using (var a = new SlotlaneServer(new SlotlaneServerOptions { Shards = 1 }))
                StringAssert.Contains("listen", Assert.Throws<InvalidOperationException>(() => new SlotlaneServer(new SlotlaneServerOptions { Shards = 1, Port = a.Ports[0] })).Message);
        }
    }

    /// <summary>The fixture base: a 2-shard one-port server for this fixture's tests.</summary>
    [TestFixture]
    public class TestingFixtureBaseTests : SlotlaneServerFixture
    {
        protected override SlotlaneServerOptions ServerOptions() { return new SlotlaneServerOptions { Shards = 2, PortMode = PortMode.OnePort }; }

        [Test]
        public void TheFixturesServerServes()
        {
            Assert.AreEqual(2, Server.Ports.Count);
            using (var c = SlotlaneClient.Connect(ServerUrl))
            {
                c.Set("fixture", "ok");
                Assert.AreEqual("ok", c.Get("fixture"));
            }
        }
    }
}
