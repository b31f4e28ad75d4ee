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
            // parsed by the core (url.c): its message is passed on, as errors.json's ArgumentError (SL_EINVAL)
            Assert.That(Assert.Catch<SlotlaneArgumentException>(() => SlotlaneClient.Connect("http://127.0.0.1:" + Servers.UnusedPort)).Kind, Is.EqualTo(ErrorKind.Argument));
            Assert.Catch<SlotlaneArgumentException>(() => SlotlaneClient.Connect("redis://127.0.0.1:notaport"));
            // rediss:// is accepted (TLS with the system's CAs: nothing listens there), or, in a build without TLS,
            // SL_EUNSUPPORTED: errors.json's ResourceError
            if (TlsOptions.Supported)
                Assert.Catch<SlotlaneConnectionException>(() => SlotlaneClient.Connect("rediss://127.0.0.1:" + Servers.UnusedPort));
            else
                Assert.That(Assert.Catch<SlotlaneResourceException>(() => SlotlaneClient.Connect("rediss://127.0.0.1:" + Servers.UnusedPort)).Kind, Is.EqualTo(ErrorKind.Client));
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
        public void BadTypedArguments()
        {
            Assert.Throws<ArgumentNullException>(() => _c.Get(null));
            Assert.Throws<ArgumentNullException>(() => _c.Set(null, "v"));
            Assert.Throws<ArgumentNullException>(() => _c.Set("k", null));
            Throws(() => _c.Set("k", true), "bool");
            Throws(() => _c.Set("k", new object()), "type System.Object");
            Throws(() => _c.Delete(), "keys needs at least one element");
            Assert.Throws<ArgumentNullException>(() => _c.Delete((string[])null));
            Throws(() => _c.Exists("a", null), "argument 2 is null");
            Throws(() => _c.Mget(), "keys needs at least one element");
            Assert.Throws<ArgumentNullException>(() => _c.Mset(null));
            Throws(() => _c.Mset(new ValueTuple<string, object>[0]), "key_value needs at least one element");
            Throws(() => _c.Mset(new (string, object)[] { ("k", null) }), "argument 2 is null");
            Throws(() => _c.Zadd("z", new (double, object)[] { (double.NaN, "m") }), "NaN");
            Assert.Throws<ArgumentNullException>(() => _c.Hget(null, "f"));
            Assert.Throws<ArgumentNullException>(() => _c.Hget("h", null));
            Throws(() => _c.Rpush("l"), "elements needs at least one element");
            Throws(() => _c.Lpush("l"), "elements needs at least one element");
            Throws(() => _c.Sadd("s"), "members needs at least one element");
            Assert.Throws<ArgumentNullException>(() => SlotlaneClient.KeySlot((string)null));
            Assert.Throws<ArgumentNullException>(() => SlotlaneClient.KeySlot((byte[])null));
            using (var p = _c.CreatePipeline())
            {
                Assert.Throws<ArgumentNullException>(() => p.Get(null));
                Throws(() => p.Set("k", false), "bool");
                Throws(() => p.Zadd("z", new (double, object)[] { (1, "a"), (2, null) }), "is null");
                Assert.That(p.Count, Is.EqualTo(0), "a refused command is not queued");
                var ok = p.Set("ok", 1);
                p.Execute();
                Assert.That(ok.Value, Is.True);
            }
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
