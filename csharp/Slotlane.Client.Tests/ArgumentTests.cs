using System;
using System.Collections.Generic;
using NUnit.Framework;
#if NUNIT2
using OneTimeSetUpAttribute = NUnit.Framework.TestFixtureSetUpAttribute;
using OneTimeTearDownAttribute = NUnit.Framework.TestFixtureTearDownAttribute;
#endif

namespace Slotlane.Tests
{
    /// <summary>Bad arguments raise ArgumentException (or a subclass) with a message that names the problem,
    /// and leave the client and the pipeline usable.</summary>
    [TestFixture]
    public class ArgumentTests
    {
        private SlotlaneClient _c;

        [OneTimeSetUp]
        public void Open() { _c = SlotlaneClient.Connect(new ClientOptions { Url = Servers.Bundled }); }

        [OneTimeTearDown]
        public void Close() { if (_c != null) _c.Dispose(); }

        private static void Throws(TestDelegate d, string fragment)
        {
            var ex = Assert.Catch<ArgumentException>(d);
            Assert.That(ex.Message, Does_Contain(fragment));
        }

        private static NUnit.Framework.Constraints.Constraint Does_Contain(string s)
        {
#if NUNIT2
            return Is.StringContaining(s);
#else
            return Does.Contain(s);
#endif
        }

        [Test]
        public void BadOptions()
        {
            Assert.Throws<ArgumentNullException>(() => SlotlaneClient.Connect((ClientOptions)null));
            Assert.Throws<ArgumentNullException>(() => SlotlaneClient.Connect((string)null));
            Throws(() => SlotlaneClient.Connect(new ClientOptions()), "exactly one of");
            Throws(() => SlotlaneClient.Connect(new ClientOptions { Url = "redis://x:1", Host = "x" }), "exactly one of");
            Throws(() => SlotlaneClient.Connect(new ClientOptions { Host = "a:1" }), "bare host");
            Throws(() => SlotlaneClient.Connect(new ClientOptions { Host = "h", Port = 0 }), "Port");
            Throws(() => SlotlaneClient.Connect(new ClientOptions { Host = "h", Port = 70000 }), "Port");
            Throws(() => SlotlaneClient.Connect(new ClientOptions { Url = Servers.Bundled, Protocol = 4 }), "Protocol");
            Throws(() => SlotlaneClient.Connect(new ClientOptions { Url = Servers.Bundled, Mode = (ClientMode)7 }), "Mode");
            Throws(() => SlotlaneClient.Connect(new ClientOptions { Url = Servers.Bundled, Database = -1 }), "Database");
            Throws(() => SlotlaneClient.Connect(new ClientOptions { Url = Servers.Bundled, ConnectTimeout = TimeSpan.Zero }), "ConnectTimeout");
            Throws(() => SlotlaneClient.Connect(new ClientOptions { Url = Servers.Bundled, CommandTimeout = TimeSpan.FromSeconds(-1) }), "CommandTimeout");
            Throws(() => SlotlaneClient.Connect(new ClientOptions { Url = Servers.Bundled, RefreshInterval = TimeSpan.FromDays(30) }), "RefreshInterval");
            Throws(() => SlotlaneClient.Connect(new ClientOptions { Url = Servers.Bundled, MaxRedirects = -1 }), "MaxRedirects");
            Throws(() => SlotlaneClient.Connect(new ClientOptions { Url = Servers.Bundled, MaxPoolSize = 0 }), "MaxPoolSize");
            Throws(() => SlotlaneClient.Connect(new ClientOptions { Url = "a\0b" }), "NUL");
        }

        [Test]
        public void UrlsTheCoreRejectsAreArgumentExceptions()
        {
            // parsed by the core (url.c): its message is passed on
            Assert.Catch<ArgumentException>(() => SlotlaneClient.Connect("http://127.0.0.1:" + Servers.UnusedPort));
            Assert.Catch<ArgumentException>(() => SlotlaneClient.Connect("redis://127.0.0.1:notaport"));
            Assert.Catch<NotSupportedException>(() => SlotlaneClient.Connect("rediss://127.0.0.1:" + Servers.UnusedPort));
        }

        [Test]
        public void BadCommandArguments()
        {
            Throws(() => _c.Execute(), "at least its name");
            Assert.Throws<ArgumentNullException>(() => _c.Execute((object[])null));
            Throws(() => _c.Execute("GET", null), "argument 1 is null");
            Throws(() => _c.Execute("SET", "k", new object()), "argument 2 has type System.Object");
            Throws(() => _c.Execute("SET", "k", true), "bool");
            Throws(() => _c.Execute("SET", "k", double.NaN), "NaN");
            Throws(() => _c.Execute("SET", "k", default(ArraySegment<byte>)), "ArraySegment");
            Assert.That(_c.Ping(), Is.EqualTo("PONG"));
        }

        [Test]
        public void BadHelperArguments()
        {
            Assert.Throws<ArgumentNullException>(() => _c.Get(null));
            Assert.Throws<ArgumentNullException>(() => _c.GetBytes(null));
            Assert.Throws<ArgumentNullException>(() => _c.Set(null, "v"));
            Assert.Throws<ArgumentNullException>(() => _c.Set("k", null));
            Throws(() => _c.Set("k", "v", TimeSpan.Zero), "expiry");
            Throws(() => _c.Set("k", "v", null, (SetWhen)9), "SetWhen");
            Throws(() => _c.Del(), "at least one key");
            Assert.Throws<ArgumentNullException>(() => _c.Del((string[])null));
            Throws(() => _c.Exists("a", null), "key 1 is null");
            Throws(() => _c.MGet(), "at least one key");
            Assert.Throws<ArgumentNullException>(() => _c.MSet(null));
            Throws(() => _c.MSet(new KeyValuePair<string, object>[0]), "at least one key");
            Throws(() => _c.MSet(new[] { new KeyValuePair<string, object>("k", null) }), "value of \"k\" is null");
            Throws(() => _c.Expire("k", TimeSpan.Zero), "ttl");
            Assert.Throws<ArgumentNullException>(() => _c.HSet("h", null, "v"));
            Assert.Throws<ArgumentNullException>(() => _c.HGet(null, "f"));
            Throws(() => _c.RPush("l"), "at least one value");
            Throws(() => _c.LPush("l"), "at least one value");
            Throws(() => _c.SAdd("s"), "at least one value");
            Assert.Throws<ArgumentNullException>(() => SlotlaneClient.KeySlot((string)null));
            Assert.Throws<ArgumentNullException>(() => SlotlaneClient.KeySlot((byte[])null));
        }

        [Test]
        public void BadRoutes()
        {
            Assert.Throws<ArgumentOutOfRangeException>(() => Route.Slot(-1));
            Assert.Throws<ArgumentOutOfRangeException>(() => Route.Slot(16384));
            Throws(() => Route.Node(""), "host:port");
            Throws(() => Route.Node("a\0b"), "NUL");
        }

        [Test]
        public void BadPipelineArgumentsQueueNothing()
        {
            using (var p = _c.CreatePipeline())
            {
                p.Add("SET", "pa", "1");
                Throws(() => p.Add("SET", "pb", new List<int>()), "argument 2");
                Throws(() => p.Add(), "at least its name");
                Assert.Throws<ArgumentNullException>(() => p.Get(null));
                Assert.Throws<ArgumentNullException>(() => p.Set("k", null));
                Assert.That(p.Count, Is.EqualTo(1));
                object[] r = p.Execute();
                Assert.That(r, Is.EqualTo(new object[] { "OK" }));
            }
        }
    }
}
