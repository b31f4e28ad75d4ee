using System;
using System.IO;
using System.Net.Sockets;
using System.Runtime.InteropServices;
using System.Text.RegularExpressions;

namespace Slotlane.Tests
{
    /// <summary>The tests' loopback ports: a block of the suite's range in ci/lib.sh's port map (the
    /// one place ranges are assigned), chosen as the Go tests do — the first block whose lock file
    /// this process can flock and whose ports all refuse a connection — so two checkouts' runs on
    /// one machine never share a port.</summary>
    internal static class PortBlocks
    {
        /// <summary>A chosen block: its base and the locked file that holds it (released by
        /// Dispose or the process's exit).</summary>
        internal sealed class Block : IDisposable
        {
            internal readonly int Base;
            private int _fd;

            internal Block(int b, int fd)
            {
                Base = b;
                _fd = fd;
            }

            public void Dispose()
            {
                if (_fd >= 0) close(_fd);
                _fd = -1;
            }
        }

        // flock(2) through libc: Mono's FileShare is not a lock between processes.
        private const int O_RDWR = 2, O_CREAT = 0x40, LOCK_EX = 2, LOCK_NB = 4;

        [DllImport("libc", SetLastError = true)]
        private static extern int open(string path, int flags, int mode);

        [DllImport("libc", SetLastError = true)]
        private static extern int flock(int fd, int operation);

        [DllImport("libc")]
        private static extern int close(int fd);

        /// <summary>{lo, hi} of suite in ci/lib.sh's port map.</summary>
        internal static int[] SuiteRange(string root, string suite)
        {
            string text = File.ReadAllText(Path.Combine(root, "ci", "lib.sh"));
            Match m = Regex.Match(text, @"^\s*" + Regex.Escape(suite) + @"\)\s+echo ""(\d+) (\d+)""", RegexOptions.Multiline);
            if (!m.Success) throw new InvalidOperationException("ci/lib.sh has no port range for " + suite);
            return new[] { int.Parse(m.Groups[1].Value), int.Parse(m.Groups[2].Value) };
        }

        internal static bool PortOpen(int port)
        {
            using (var c = new TcpClient())
            {
                try
                {
                    return c.ConnectAsync("127.0.0.1", port).Wait(200) && c.Connected;
                }
                catch (AggregateException)
                {
                    return false;
                }
                catch (SocketException)
                {
                    return false;
                }
            }
        }

        /// <summary>The first base in [lo, hi] (steps of size) whose lock file
        /// slotlane-NAME-ports-BASE.lock in lockDir this process could flock and whose size ports
        /// are all free.</summary>
        internal static Block Choose(int lo, int hi, int size, string name, string lockDir)
        {
            for (int b = lo; b + size - 1 <= hi; b += size)
            {
                string path = Path.Combine(lockDir, "slotlane-" + name + "-ports-" + b + ".lock");
                int fd = open(path, O_RDWR | O_CREAT, Convert.ToInt32("666", 8));
                if (fd < 0) throw new IOException("cannot open " + path + ": errno " + Marshal.GetLastWin32Error());
                bool free = flock(fd, LOCK_EX | LOCK_NB) == 0; // else another run holds this block
                for (int p = b; free && p < b + size; p++) free = !PortOpen(p);
                if (free) return new Block(b, fd);
                close(fd);
            }
            throw new InvalidOperationException("no block of " + size + " free ports in " + lo + "-" + hi);
        }
    }
}
