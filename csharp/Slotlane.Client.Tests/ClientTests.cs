using System;
using System.Collections.Generic;
using System.Linq;
using System.Text;
using NUnit.Framework;
#if NUNIT2
using OneTimeSetUpAttribute = NUnit.Framework.TestFixtureSetUpAttribute;
using OneTimeTearDownAttribute = NUnit.Framework.TestFixtureTearDownAttribute;
#endif

namespace Slotlane.Tests
{
    /// <summary>Every public method of the client against the bundled slotlane-server (4 shards, cluster replies).</summary>
    [TestFixture]
    public class ClientTests
    {
        private SlotlaneClient _c;

        [OneTimeSetUp]
        public void Open() { _c = SlotlaneClient.Connect(new ClientOptions { Url = Servers.Bundled }); }

        [OneTimeTearDown]
        public void Close() { if (_c != null) _c.Dispose(); }

        [SetUp]
        public void Flush() { _c.Flushall(); }

        [Test]
        public void ConnectsInClusterModeAndReportsVersion()
        {
            Assert.That(_c.Mode, Is.EqualTo(ClientMode.Cluster));
            Assert.That(System.Text.RegularExpressions.Regex.IsMatch(SlotlaneClient.CoreVersion, @"^\d+\.\d+\.\d+"), Is.True, SlotlaneClient.CoreVersion);
            Assert.That(_c.GetStats().Nodes, Is.EqualTo(4));
        }

        [Test]
        public void ConnectWithHostAndPortAndPlainMode()
        {
            using (var c = SlotlaneClient.Connect(new ClientOptions { Host = Servers.Host, Port = Servers.BundledPort + 2, Mode = ClientMode.Plain }))
            {
                Assert.That(c.Mode, Is.EqualTo(ClientMode.Plain));
                Assert.That(c.Ping(), Is.EqualTo("PONG"));
                // plain mode: no routing, so a key of another shard gets the server's MOVED
                string key = Enumerable.Range(0, 1000).Select(i => "p" + i).First(k => SlotlaneClient.KeySlot(k) < 4096);
                var ex = Assert.Throws<SlotlaneReplyException>(() => c.Get(key));
                Assert.That(ex.Prefix, Is.EqualTo("MOVED"));
            }
        }

        [Test]
        public void ConnectWithUrlString()
        {
            using (var c = SlotlaneClient.Connect(Servers.Bundled)) Assert.That(c.Ping(), Is.EqualTo("PONG"));
        }

        [Test]
        public void ConnectRefusedIsAConnectionException()
        {
            Assert.Throws<SlotlaneConnectionException>(() =>
                SlotlaneClient.Connect(new ClientOptions { Url = "redis://127.0.0.1:" + Servers.UnusedPort, ConnectTimeout = TimeSpan.FromMilliseconds(300) }));
        }

        [Test]
        public void GetSetAndBytes()
        {
            Assert.That(_c.Set("a", "1"), Is.True);
            Assert.That(_c.Get("a"), Is.EqualTo("1"));
            Assert.That(_c.Get("missing"), Is.Null);
            var bin = new byte[] { 0, 1, 2, 255, 13, 10 };
            Assert.That(_c.Set("b", bin), Is.True); // a byte[] value; binary replies through Execute (bulk strings are byte[])
            Assert.That(_c.Execute("GET", "b"), Is.EqualTo(bin));
            Assert.That(_c.Strlen("b"), Is.EqualTo(6));
            Assert.That(_c.Set("ü", "ünïcödé"), Is.True);
            Assert.That(_c.Get("ü"), Is.EqualTo("ünïcödé"));
            Assert.That(_c.Set("n", 42L), Is.True);
            Assert.That(_c.Incr("n"), Is.EqualTo(43));
            Assert.That(_c.Incrby("n", -10), Is.EqualTo(33));
            Assert.That(_c.Set("f", 1.5), Is.True);
            Assert.That(_c.Incrbyfloat("f", 1), Is.EqualTo(2.5));
        }

        [Test]
        public void SetConditionsAndExpiry()
        {
            Assert.That(_c.Set("k", "v", new SetOptions { Xx = true }), Is.False);
            Assert.That(_c.Get("k"), Is.Null);
            Assert.That(_c.Set("k", "v", new SetOptions { Nx = true }), Is.True);
            Assert.That(_c.Set("k", "w", new SetOptions { Nx = true }), Is.False);
            Assert.That(_c.Get("k"), Is.EqualTo("v"));
            Assert.That(_c.Ttl("k"), Is.EqualTo(-1));
            Assert.That(_c.Set("k", "x", new SetOptions { Ex = 100 }), Is.True);
            long ttl = _c.Ttl("k");
            Assert.That(ttl > 90 && ttl <= 100, Is.True, ttl.ToString());
            Assert.That(_c.Expire("k", 5), Is.True);
            Assert.That(_c.Ttl("k"), Is.LessThanOrEqualTo(5));
            Assert.That(_c.Expire("k", 1, new ExpireOptions { Gt = true }), Is.False);
            Assert.That(_c.Expire("nokey", 5), Is.False);
            Assert.That(_c.SetGet("k", "y"), Is.EqualTo("x"));
            Assert.That(_c.SetGet("nok", "y", new SetGetOptions { Nx = true }), Is.Null);
            // options the server refuses together are sent as given: its syntax error
            Assert.That(Assert.Throws<SlotlaneReplyException>(() => _c.Set("k", "v", new SetOptions { Nx = true, Xx = true })).Prefix, Is.EqualTo("ERR"));
        }

        [Test]
        public void MultiKeyCommandsAcrossSlots()
        {
            var keys = Enumerable.Range(0, 50).Select(i => "mk:" + i).ToArray();
            Assert.That(keys.Select(SlotlaneClient.KeySlot).Distinct().Count(), Is.GreaterThan(10));
            Assert.That(_c.Mset(keys.Select(k => ValueTuple.Create(k, (object)("v-" + k))).ToArray()), Is.True);
            Assert.That(_c.Mget(keys), Is.EqualTo(keys.Select(k => "v-" + k).ToArray()));
            Assert.That(_c.Mget("mk:1", "nope", "mk:2"), Is.EqualTo(new[] { "v-mk:1", null, "v-mk:2" }));
            Assert.That(_c.Exists(keys), Is.EqualTo(50));
            Assert.That(_c.Exists("mk:1", "mk:1", "nope"), Is.EqualTo(2));
            Assert.That(_c.Dbsize(), Is.EqualTo(50));
            Assert.That(_c.Delete(keys.Take(20).ToArray()), Is.EqualTo(20));
            Assert.That(_c.Dbsize(), Is.EqualTo(30));
            Assert.That(_c.Flushall(), Is.True);
            Assert.That(_c.Dbsize(), Is.EqualTo(0));
        }

        [Test]
        public void HashesListsSets()
        {
            Assert.That(_c.Hset("h", new[] { ValueTuple.Create((object)"f1", (object)"v1") }), Is.EqualTo(1));
            Assert.That(_c.Hset("h", new (object, object)[] { ("f1", "v1b"), ("f2", 7) }), Is.EqualTo(1));
            Assert.That(_c.Hget("h", "f1"), Is.EqualTo("v1b"));
            Assert.That(_c.Hget("h", "nof"), Is.Null);
            Assert.That(_c.Hgetall("h"), Is.EquivalentTo(new Dictionary<string, string> { { "f1", "v1b" }, { "f2", "7" } }));
            Assert.That(_c.Hgetall("noh"), Is.Empty);
            Assert.That(_c.Rpush("l", "b", "c"), Is.EqualTo(2));
            Assert.That(_c.Lpush("l", "a"), Is.EqualTo(3));
            Assert.That(_c.Lrange("l", 0, -1), Is.EqualTo(new[] { "a", "b", "c" }));
            Assert.That(_c.Lrange("l", 1, 1), Is.EqualTo(new[] { "b" }));
            Assert.That(_c.Sadd("s", "x", "y", "x"), Is.EqualTo(2));
            Assert.That(_c.Smembers("s"), Is.EquivalentTo(new[] { "x", "y" }));
            Assert.That(_c.Zadd("z", new (double, object)[] { (1.5, "a"), (3, "b") }), Is.EqualTo(2));
            Assert.That(_c.ZrangeWithscores("z", 0, -1), Is.EqualTo(new[] { new KeyValuePair<string, double>("a", 1.5), new KeyValuePair<string, double>("b", 3) }));
            Assert.That(_c.Zscore("z", "none"), Is.Null);
        }

        [Test]
        public void HGetAllInResp3IsAMap()
        {
            using (var c = SlotlaneClient.Connect(new ClientOptions { Url = Servers.Bundled, Protocol = 3 }))
            {
                c.Hset("h3", new (object, object)[] { ("a", "1") });
                Assert.That(c.Execute("HGETALL", "h3"), Is.InstanceOf<KeyValuePair<object, object>[]>());
                Assert.That(c.Hgetall("h3")["a"], Is.EqualTo("1"));
                c.Zadd("z3", new (double, object)[] { (2.5, "m") });
                Assert.That(c.ZrangeWithscores("z3", 0, -1), Is.EqualTo(new[] { new KeyValuePair<string, double>("m", 2.5) }));
            }
        }

        [Test]
        public void ExecuteDecodesReplyTypes()
        {
            Assert.That(_c.Execute("SET", "e", "v"), Is.EqualTo("OK"));
            Assert.That(_c.Execute("GET", "e"), Is.EqualTo(Encoding.UTF8.GetBytes("v")));
            Assert.That(_c.Execute("INCR", "cnt"), Is.EqualTo(1L));
            Assert.That(_c.Execute("GET", "none"), Is.Null);
            Assert.That(_c.Execute("RPUSH", "el", 1, 2.5, -3L, 4m, (byte)5, new ArraySegment<byte>(new byte[] { 9, 54, 9 }, 1, 1),
                                   new ReadOnlyMemory<byte>(Encoding.ASCII.GetBytes("rom"))), Is.EqualTo(7L));
            var arr = (object[])_c.Execute("LRANGE", "el", 0, -1);
            Assert.That(arr.Select(x => Encoding.UTF8.GetString((byte[])x)), Is.EqualTo(new[] { "1", "2.5", "-3", "4", "5", "6", "rom" }));
        }

        [Test]
        public void ServerErrorsThrowReplyExceptions()
        {
            _c.Rpush("alist", "x");
            var ex = Assert.Throws<SlotlaneReplyException>(() => _c.Get("alist"));
            Assert.That(ex.Prefix, Is.EqualTo("WRONGTYPE"));
            Assert.That(ex.Kind, Is.EqualTo(ErrorKind.Server));
            var ex2 = Assert.Throws<SlotlaneReplyException>(() => _c.Execute("NOSUCHCOMMAND", "x"));
            Assert.That(ex2.Prefix, Is.EqualTo("ERR"));
            Assert.Throws<SlotlaneReplyException>(() => _c.Incr("alist"));
        }

        [Test]
        public void RoutedExecute()
        {
            Assert.That(_c.Execute(Route.AllPrimaries, "PING"), Is.EqualTo("PONG"));
            Assert.That(_c.Execute(Route.Random, "PING"), Is.EqualTo("PONG"));
            _c.Set("rk", "v");
            int slot = SlotlaneClient.KeySlot("rk");
            Assert.That(_c.Execute(Route.Slot(slot), "DBSIZE"), Is.EqualTo(1L));
            Assert.That(_c.Execute(Route.Slot((slot + 8192) % 16384), "DBSIZE"), Is.EqualTo(0L));
            Assert.That(_c.Execute(Route.ByKey, "GET", "rk"), Is.EqualTo(Encoding.UTF8.GetBytes("v")));
            long sum = 0;
            for (int i = 0; i < 4; i++) sum += (long)_c.Execute(Route.Node(Servers.Host + ":" + (Servers.BundledPort + i)), "DBSIZE");
            Assert.That(sum, Is.EqualTo(1));
            Assert.Throws<SlotlaneArgumentException>(() => _c.Execute(Route.Node("no-port-here"), "PING"));
            Assert.Throws<SlotlaneConnectionException>(() => _c.Execute(Route.Node("127.0.0.1:1"), "PING"));
        }

        [Test]
        public void KeySlotMatchesRedis()
        {
            Assert.That(SlotlaneClient.KeySlot("foo"), Is.EqualTo(12182));
            Assert.That(SlotlaneClient.KeySlot("{user1000}.following"), Is.EqualTo(SlotlaneClient.KeySlot("user1000")));
            Assert.That(SlotlaneClient.KeySlot(new byte[0]), Is.EqualTo(0));
        }

        [Test]
        public void StatsCountCommandsAndBytes()
        {
            var before = _c.GetStats();
            for (int i = 0; i < 10; i++) _c.Set("st" + i, "v");
            var after = _c.GetStats();
            Assert.That(after.Commands - before.Commands, Is.EqualTo(10));
            Assert.That(after.BytesWritten, Is.GreaterThan(before.BytesWritten));
            Assert.That(after.BytesRead, Is.GreaterThan(before.BytesRead));
            Assert.That(after.Connects, Is.GreaterThanOrEqualTo(1));
            Assert.That(after.Handles, Is.GreaterThanOrEqualTo(1));
            Assert.That(after.Moved + after.Ask + after.TryAgain + after.Reconnects, Is.GreaterThanOrEqualTo(0));
            Assert.That(after.Refreshes, Is.GreaterThanOrEqualTo(0));
        }

        [Test]
        public void RefreshRereadsTheSlotMap()
        {
            long r0 = _c.GetStats().Refreshes;
            _c.Refresh();
            Assert.That(_c.GetStats().Refreshes, Is.GreaterThan(r0));
        }

        [Test]
        public void DisposedClientThrowsObjectDisposed()
        {
            var c = SlotlaneClient.Connect(Servers.Bundled);
            var p = c.CreatePipeline();
            p.Add("PING");
            c.Dispose();
            c.Dispose(); // twice is fine
            Assert.Throws<ObjectDisposedException>(() => c.Ping());
            Assert.Throws<ObjectDisposedException>(() => p.Execute());
            Assert.Throws<ObjectDisposedException>(() => c.CreatePipeline());
            Assert.Throws<ObjectDisposedException>(() => c.GetStats());
            p.Dispose();
            Assert.Throws<ObjectDisposedException>(() => p.Add("PING"));
        }

        [Test]
        public void OptionsAreCopiedAndCloned()
        {
            var o = new ClientOptions { Url = Servers.Bundled, CommandTimeout = TimeSpan.FromSeconds(1), RefreshInterval = TimeSpan.FromSeconds(30),
                                        MaxRedirects = 3, Username = null, Password = null, Database = 0, MaxPoolSize = 2 };
            var copy = o.Clone();
            Assert.That(copy.Url, Is.EqualTo(o.Url));
            Assert.That(copy, Is.Not.SameAs(o));
            using (var c = SlotlaneClient.Connect(o))
            {
                o.Url = "garbage";
                Assert.That(c.Ping(), Is.EqualTo("PONG"));
            }
        }

        [Test]
        public void PasswordIsSentToTheServer()
        {
            // the bundled server has no AUTH configured: a password makes the connection fail with the server's error
            var ex = Assert.Catch<Exception>(() => SlotlaneClient.Connect(new ClientOptions { Url = Servers.Bundled, Username = "u", Password = "p" }));
            Assert.That(ex is SlotlaneException || ex is ArgumentException, Is.True, ex.ToString());
        }

        [Test]
        public void CommandTimeoutIsNotABlockingCommandsDeadline()
        {
            // a blocking command runs on a connection leased for it, with its block time plus
            // the grace as its deadline: a BLPOP of 0.3 s gets the server's nil, never a
            // timeout at CommandTimeout's 200 ms (core/tests/test_lease.c has the rule)
            using (var c = SlotlaneClient.Connect(new ClientOptions { Url = Servers.PlainRedis, CommandTimeout = TimeSpan.FromMilliseconds(200) }))
            {
                Assert.That(c.Execute("BLPOP", "never-" + Guid.NewGuid(), "0.3"), Is.Null);
                Assert.That(c.Ping(), Is.EqualTo("PONG")); // the client stays usable
            }
        }

        [Test]
        public void CancellationStopsARunningPipeline()
        {
            using (var c = SlotlaneClient.Connect(new ClientOptions { Url = Servers.PlainRedis, CommandTimeout = TimeSpan.Zero, MaxPoolSize = 1 }))
            using (var p = c.CreatePipeline())
            using (var cts = new System.Threading.CancellationTokenSource())
            {
                p.Add("BLPOP", "never-" + Guid.NewGuid(), "0");   // blocks forever, alone: on a lease
                cts.CancelAfter(300);
                var t0 = DateTime.UtcNow;
                object[] r = p.Execute(cts.Token);
                Assert.That(DateTime.UtcNow - t0, Is.LessThan(TimeSpan.FromSeconds(5)));
                Assert.That(r[0], Is.InstanceOf<SlotlaneCancelledException>());
                // with another command it is refused before anything is sent
                p.Add("SET", "before", "1");
                p.Add("BLPOP", "never-" + Guid.NewGuid(), "0");
                object[] refused = p.Execute();
                Assert.That(refused[0], Is.InstanceOf<SlotlaneArgumentException>());
                Assert.That(c.Execute("EXISTS", "before"), Is.EqualTo(0L));
                // the same (single) handle runs the next command at once: no stale reply, no stale cancel
                Assert.That(c.Ping(), Is.EqualTo("PONG"));
                p.Add("PING");
                Assert.That(p.Execute(), Is.EqualTo(new object[] { "PONG" }));
                p.Add("PING");
                Assert.Throws<OperationCanceledException>(() => p.Execute(cts.Token));
                p.Add("PING");
                using (var live = new System.Threading.CancellationTokenSource())
                    Assert.That(p.Execute(live.Token), Is.EqualTo(new object[] { "PONG" }));
            }
        }

        [Test]
        public void TimeoutClosesTheBlockedConnection()
        {
            // the core closes connections that still owe replies when the deadline passes: the next
            // command on the same core handle must not wait behind the BLPOP
            using (var c = SlotlaneClient.Connect(new ClientOptions { Url = Servers.PlainRedis, CommandTimeout = TimeSpan.FromMilliseconds(200), MaxPoolSize = 1 }))
            using (var p = c.CreatePipeline())
            {
                p.Add("BLPOP", "never-" + Guid.NewGuid(), "0.3"); // on its lease: the server's nil, its own deadline
                Assert.That(p.Execute()[0], Is.Null);
                var t0 = DateTime.UtcNow;
                Assert.That(c.Ping(), Is.EqualTo("PONG"));
                Assert.That(DateTime.UtcNow - t0, Is.LessThan(TimeSpan.FromSeconds(1)));
            }
        }

        [Test]
        public void DatabaseSelectionInPlainMode()
        {
            using (var c0 = SlotlaneClient.Connect(new ClientOptions { Url = Servers.PlainRedis, Database = 0 }))
            using (var c3 = SlotlaneClient.Connect(new ClientOptions { Url = Servers.PlainRedis, Database = 3 }))
            {
                Assert.That(c3.Mode, Is.EqualTo(ClientMode.Plain));
                c0.Set("dbk", "zero");
                c3.Set("dbk", "three");
                Assert.That(c0.Get("dbk"), Is.EqualTo("zero"));
                Assert.That(c3.Get("dbk"), Is.EqualTo("three"));
            }
        }
    }
}
