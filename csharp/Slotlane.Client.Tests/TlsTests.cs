using System;
using System.Collections.Generic;
using System.IO;
using System.Linq;
using System.Security.Cryptography.X509Certificates;
using System.Text;
using System.Threading;
using System.Threading.Tasks;
using NUnit.Framework;
#if NUNIT2
using OneTimeSetUpAttribute = NUnit.Framework.TestFixtureSetUpAttribute;
using OneTimeTearDownAttribute = NUnit.Framework.TestFixtureTearDownAttribute;
#endif

namespace Slotlane.Tests
{
    /// <summary>TLS (ClientOptions.Tls, rediss://) against Debian's redis-server serving TLS only (ci/redis-plain.sh
    /// with SL_REDIS_TLS_DIR) and a tls-cluster 3-primary Redis Cluster, certificates made by openssl now
    /// (ci/tls-certs.sh): verification from a CA file, PEM text and X509Certificate2 objects, mutual TLS from
    /// files, PEM and an X509Certificate2 (an RSA PKCS#12 made here), and each failure a SlotlaneTlsException
    /// saying what failed (wrong CA, host name mismatch, expired certificate), within the connect timeout.</summary>
    [TestFixture]
    public class TlsTests
    {
        private string _certs;
        private readonly List<string> _started = new List<string>();
        private bool _cluster;

        private string Cert(string name) { return Path.Combine(_certs, name); }
        private static string Url(int port) { return "rediss://" + Servers.Host + ":" + port; }
        private string Dir(string name) { return Path.Combine(Servers.WorkDir, "tls", name); }

        private Dictionary<string, string> Env(string auth, string cert)
        {
            return new Dictionary<string, string> { { "SL_REDIS_TLS_DIR", _certs }, { "SL_REDIS_TLS_AUTH_CLIENTS", auth }, { "SL_REDIS_TLS_CERT", cert } };
        }

        [OneTimeSetUp]
        public void Start()
        {
            Assert.That(TlsOptions.Supported, Is.True, "libslotlane.so was built without TLS (build-native.sh needs libssl-dev)");
            _certs = Path.Combine(Servers.WorkDir, "tls", "certs");
            Servers.Script("tls-certs.sh", _certs);
            foreach (var s in new[] { Tuple.Create("tls", Servers.TlsPort, "optional", "server"), Tuple.Create("mtls", Servers.MtlsPort, "yes", "server"),
                                      Tuple.Create("wrong-name", Servers.TlsWrongNamePort, "optional", "wrong-name"),
                                      Tuple.Create("expired", Servers.TlsExpiredPort, "optional", "expired") })
            {
                _started.Add(s.Item1);
                Servers.Script("redis-plain.sh", "start " + Dir(s.Item1) + " " + s.Item2, true, Env(s.Item3, s.Item4));
            }
        }

        [OneTimeTearDown]
        public void Stop()
        {
            foreach (string d in _started) Servers.Script("redis-plain.sh", "stop " + Dir(d), false, Env("optional", "server"));
            if (_cluster) Servers.Script("redis-cluster.sh", "stop " + Dir("cluster"), false, Env("optional", "server"));
        }

        private static void Refused(ClientOptions o, string want)
        {
            o.ConnectTimeout = TimeSpan.FromSeconds(2);
            var e = Assert.Throws<SlotlaneTlsException>(() => SlotlaneClient.Connect(o).Dispose());
            StringAssert.Contains(want, e.Message);
        }

        private static long BlockedClients(SlotlaneClient c)
        {
            string info = Encoding.UTF8.GetString((byte[])c.Execute("INFO", "clients"));
            string line = info.Split('\n').First(l => l.StartsWith("blocked_clients:", StringComparison.Ordinal));
            return long.Parse(line.Substring(16).Trim());
        }

        private static void Works(ClientOptions o)
        {
            using (var c = SlotlaneClient.Connect(o))
            {
                Assert.That(c.Ping(), Is.EqualTo("PONG"));
                Assert.That(c.ExecuteAsync("PING").Result, Is.EqualTo("PONG"), "the libuv engine over TLS");
            }
        }

        [Test]
        public void FullVerificationWithACaFile()
        {
            using (var c = SlotlaneClient.Connect(new ClientOptions { Url = Url(Servers.TlsPort), Tls = new TlsOptions { CaFile = Cert("ca.crt") } }))
            using (var p = c.CreatePipeline())
            {
                string v = new string('x', 100);
                var gets = new List<Reply<string>>();
                for (int i = 0; i < 2000; i++)
                {
                    p.Set("cs:tls:" + i, v);
                    gets.Add(p.Get("cs:tls:" + i));
                }
                p.ExecuteOrThrow();                                   // replies over many TLS records
                Assert.That(gets.All(g => g.Value == v), Is.True);
                Assert.That(c.GetAsync("cs:tls:7").Result, Is.EqualTo(v));
                var many = Enumerable.Range(0, 200).Select(i => c.GetAsync("cs:tls:" + i)).ToArray();
                Assert.That(Task.WaitAll(many, TimeSpan.FromSeconds(30)), Is.True);
                Assert.That(many.All(t => t.Result == v), Is.True);
            }
        }

        [Test]
        public void CasFromPemTextAndCertificateObjectsSharedByHandles()
        {
            Works(new ClientOptions { Url = Url(Servers.TlsPort), Tls = new TlsOptions { CaPem = File.ReadAllText(Cert("ca.crt")) } });
            Works(new ClientOptions { Url = Url(Servers.TlsPort), Tls = new TlsOptions { CaCertificates = new X509Certificate2Collection(new X509Certificate2(Cert("ca.crt"))) } });
            Works(new ClientOptions { Url = Url(Servers.TlsPort), Tls = new TlsOptions { CaDirectory = Cert("cadir") } });
            using (var c = SlotlaneClient.Connect(new ClientOptions { Url = Url(Servers.TlsPort), MaxPoolSize = 4, Tls = new TlsOptions { CaFile = Cert("ca.crt") } }))
            {
                // a second caller while the first holds its core handle (a BLPOP the server keeps
                // until the test pushes) gets a second handle, with the client's one configuration
                c.Execute("DEL", "tls:handles");
                var held = Task.Factory.StartNew(() => c.Execute("BLPOP", "tls:handles", "0"), TaskCreationOptions.LongRunning);
                for (int i = 0; BlockedClients(c) != 1; i++)
                {
                    if (i == 30000 || held.IsCompleted) Assert.Fail("the BLPOP never blocked on the server");
                    Thread.Sleep(2); // a poll interval on the server's counter, never a verdict
                }
                Assert.That(c.Ping(), Is.EqualTo("PONG"));
                c.Execute("RPUSH", "tls:handles", "x");
                Assert.That(held.Wait(TimeSpan.FromSeconds(60)), Is.True);
                Assert.That(((object[])held.Result).Length, Is.EqualTo(2));
                // (GetStats waits for every handle to be idle: only now)
                Assert.That(c.GetStats().Handles, Is.GreaterThan(1), "the INFO above ran on a second handle");
            }
        }

        [Test]
        public void AWrongCaFails()
        {
            Refused(new ClientOptions { Url = Url(Servers.TlsPort), Tls = new TlsOptions { CaFile = Cert("other-ca.crt") } }, "certificate verify failed");
            // rediss:// alone: the system's CAs, which do not know the test CA
            Refused(new ClientOptions { Url = Url(Servers.TlsPort) }, "certificate verify failed");
            Refused(new ClientOptions { Url = Url(Servers.TlsExpiredPort), Tls = new TlsOptions { CaFile = Cert("ca.crt") } },
                    "certificate verify failed: certificate has expired");
        }

        [Test]
        public void AHostNameMismatchFails()
        {
            Refused(new ClientOptions { Url = Url(Servers.TlsPort), Tls = new TlsOptions { CaFile = Cert("ca.crt"), ServerName = "wrong.example" } },
                    "host name mismatch: expected wrong.example, certificate names 127.0.0.1");
            Refused(new ClientOptions { Url = Url(Servers.TlsWrongNamePort), Tls = new TlsOptions { CaFile = Cert("ca.crt") } },
                    "host name mismatch: expected 127.0.0.1");
            // what is asked for: the name of the certificate, the chain only, nothing
            Works(new ClientOptions { Url = Url(Servers.TlsWrongNamePort), Tls = new TlsOptions { CaFile = Cert("ca.crt"), ServerName = "wrong.example" } });
            Works(new ClientOptions { Url = Url(Servers.TlsWrongNamePort), Tls = new TlsOptions { CaFile = Cert("ca.crt"), Verify = TlsVerify.Chain } });
            Works(new ClientOptions { Url = Url(Servers.TlsPort), Tls = new TlsOptions { Verify = TlsVerify.NoneInsecure } });
        }

        [Test]
        public void MutualTls()
        {
            Refused(new ClientOptions { Url = Url(Servers.MtlsPort), Tls = new TlsOptions { CaFile = Cert("ca.crt") } }, "certificate required");
            Works(new ClientOptions { Url = Url(Servers.MtlsPort), Tls = new TlsOptions { CaFile = Cert("ca.crt"), CertificateFile = Cert("client.crt"), KeyFile = Cert("client.key") } });
            Works(new ClientOptions { Url = Url(Servers.MtlsPort), Tls = new TlsOptions
            {
                CaFile = Cert("ca.crt"), CertificatePem = File.ReadAllText(Cert("client.crt")), KeyPem = File.ReadAllText(Cert("client.key")),
            } });
            // an X509Certificate2 with its key: an RSA client certificate of the test CA, as PKCS#12 (legacy
            // algorithms: Mono reads no other)
            string dir = Path.Combine(Servers.WorkDir, "tls", "pfx");
            Directory.CreateDirectory(dir);
            File.WriteAllText(Path.Combine(dir, "make.sh"), "set -e\ncd " + dir + "\n" +
                "openssl req -new -newkey rsa:2048 -nodes -keyout rc.key -out rc.csr -subj /CN=rsa-client 2>/dev/null\n" +
                "printf 'extendedKeyUsage=clientAuth\\n' > rc.ext\n" +
                "openssl x509 -req -in rc.csr -CA " + Cert("ca.crt") + " -CAkey " + Cert("ca.key") + " -set_serial 0x77 -days 1 -extfile rc.ext -out rc.crt 2>/dev/null\n" +
                "openssl pkcs12 -export -in rc.crt -inkey rc.key -out rc.pfx -passout pass:pw -keypbe PBE-SHA1-3DES -certpbe PBE-SHA1-3DES -macalg sha1\n");
            NativeSignatureTests.Run("bash", Path.Combine(dir, "make.sh"));
            var cert = new X509Certificate2(Path.Combine(dir, "rc.pfx"), "pw", X509KeyStorageFlags.Exportable);
            Works(new ClientOptions { Url = Url(Servers.MtlsPort), Tls = new TlsOptions { CaFile = Cert("ca.crt"), ClientCertificate = cert } });
            var noKey = new X509Certificate2(Path.Combine(dir, "rc.crt"));
            Assert.Throws<ArgumentException>(() => SlotlaneClient.Connect(new ClientOptions { Url = Url(Servers.MtlsPort), Tls = new TlsOptions { ClientCertificate = noKey } }));
        }

        [Test]
        public void PlaintextAndTlsMismatched()
        {
            var plain = new Uri(Servers.PlainRedis);
            Refused(new ClientOptions { Url = Url(plain.Port), Tls = new TlsOptions { CaFile = Cert("ca.crt") } }, "TLS to " + Servers.Host + ":" + plain.Port);
            var e = Assert.Throws<SlotlaneConnectionException>(() => SlotlaneClient.Connect(new ClientOptions
            {
                Url = "redis://" + Servers.Host + ":" + Servers.TlsPort, ConnectTimeout = TimeSpan.FromSeconds(2),
            }).Dispose());
            StringAssert.Contains("if the port speaks TLS, use rediss://", e.Message);
        }

        [Test]
        public void BadOptionsFailAtOnce()
        {
            Refused(new ClientOptions { Url = Url(Servers.TlsPort), Tls = new TlsOptions { CaFile = "/nonexistent/ca.pem" } }, "cannot load the CA file /nonexistent");
            Refused(new ClientOptions { Url = Url(Servers.TlsPort), Tls = new TlsOptions { CaFile = Cert("ca.crt"), CertificateFile = Cert("client.crt"), KeyFile = Cert("server.key") } },
                    "client key");
            Assert.Throws<ArgumentException>(() => SlotlaneClient.Connect(new ClientOptions { Url = Url(Servers.TlsPort), Tls = new TlsOptions { KeyFile = Cert("client.key") } }));
            Assert.Throws<ArgumentOutOfRangeException>(() => SlotlaneClient.Connect(new ClientOptions { Url = Url(Servers.TlsPort), Tls = new TlsOptions { Verify = (TlsVerify)7 } }));
        }

        [Test]
        public void ATlsRedisCluster()
        {
            _cluster = true;
            Servers.Script("redis-cluster.sh", "start " + Dir("cluster") + " " + Servers.TlsClusterPort + " 3", true, Env("optional", "server"));
            var o = new ClientOptions
            {
                Url = Url(Servers.TlsClusterPort),
                Tls = new TlsOptions { CaFile = Cert("ca.crt"), CertificateFile = Cert("client.crt"), KeyFile = Cert("client.key") },
            };
            using (var c = SlotlaneClient.Connect(o))
            using (var p = c.CreatePipeline())
            {
                Assert.That(c.Mode, Is.EqualTo(ClientMode.Cluster));
                var gets = new List<Reply<string>>();
                for (int i = 0; i < 4096; i++) p.Set("cs:tlsc:" + i, "v" + i);            // keys over every node
                for (int i = 0; i < 4096; i++) gets.Add(p.Get("cs:tlsc:" + i));
                p.ExecuteOrThrow();
                for (int i = 0; i < 4096; i++) Assert.That(gets[i].Value, Is.EqualTo("v" + i));
                Assert.That(c.GetStats().Nodes, Is.EqualTo(3), "every primary reached over TLS, verified by its announced address");
                var many = Enumerable.Range(0, 512).Select(i => c.GetAsync("cs:tlsc:" + i)).ToArray();
                Assert.That(Task.WaitAll(many, TimeSpan.FromSeconds(30)), Is.True);
                for (int i = 0; i < 512; i++) Assert.That(many[i].Result, Is.EqualTo("v" + i));
            }
            Refused(new ClientOptions { Url = Url(Servers.TlsClusterPort), Tls = new TlsOptions { CaFile = Cert("other-ca.crt") } }, "certificate verify failed");
        }
    }
}
