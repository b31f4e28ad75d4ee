using System;
using System.IO;
using System.Net;
using System.Net.Sockets;
using NUnit.Framework;

namespace Slotlane.Tests
{
    /// <summary>PortBlocks: a held block or a listening port moves the choice to the next block.</summary>
    [TestFixture]
    public class PortBlockTests
    {
        private static readonly int[] Range = PortBlocks.SuiteRange(Servers.Root, "csharp");
        private string _dir;

        [SetUp]
        public void MakeDir()
        {
            _dir = Path.Combine(Servers.WorkDir, "port-locks-" + Guid.NewGuid().ToString("N"));
            Directory.CreateDirectory(_dir);
        }

        [TearDown]
        public void RemoveDir()
        {
            Directory.Delete(_dir, true);
        }

        [Test]
        public void TheTestsBlockIsInTheCsharpRange()
        {
            Assert.That(Servers.Base, Is.GreaterThanOrEqualTo(Range[0]));
            Assert.That(Servers.Base + Servers.BlockSize - 1, Is.LessThanOrEqualTo(Range[1]));
        }

        [Test]
        public void AHeldBlockIsSkippedAndReleasedWithItsLock()
        {
            int first;
            using (var a = PortBlocks.Choose(Range[0], Range[1], 10, "test", _dir))
            {
                first = a.Base;
                // flock locks per open file: this process's second open is refused as another run's would be
                using (var b = PortBlocks.Choose(Range[0], Range[1], 10, "test", _dir))
                    Assert.That(b.Base, Is.GreaterThanOrEqualTo(first + 10));
            }
            using (var c = PortBlocks.Choose(Range[0], Range[1], 10, "test", _dir))
                Assert.That(c.Base, Is.EqualTo(first));
        }

        [Test]
        public void AListenerMovesTheChoice()
        {
            int first;
            using (var a = PortBlocks.Choose(Range[0], Range[1], 10, "test", _dir)) first = a.Base;
            var l = new TcpListener(IPAddress.Loopback, first + 3);
            l.Start();
            try
            {
                using (var b = PortBlocks.Choose(Range[0], Range[1], 10, "test", _dir))
                    Assert.That(b.Base, Is.GreaterThanOrEqualTo(first + 10));
            }
            finally
            {
                l.Stop();
            }
        }

        [Test]
        public void NoFreeBlockIsAClearError()
        {
            var l = new TcpListener(IPAddress.Loopback, 0);
            l.Start();
            try
            {
                int p = ((IPEndPoint)l.LocalEndpoint).Port;
                var e = Assert.Throws<InvalidOperationException>(() => PortBlocks.Choose(p, p, 1, "test", _dir));
                StringAssert.Contains("no block of 1 free ports", e.Message);
            }
            finally
            {
                l.Stop();
            }
        }
    }
}
