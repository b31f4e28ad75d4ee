using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.IO;
using System.Threading;
using Slotlane.Testing;

namespace Slotlane.Tests
{
    /// <summary>The servers the tests use, started on first use and stopped by PID at process exit
    /// (and by ci/test-csharp.sh's trap if the runner dies). Ports Base..Base+49: Base is
    /// SL_CSHARP_TEST_PORT, or else the first free block of 50 in the csharp range of ci/lib.sh's
    /// port map, held with a lock file for the run (PortBlocks).</summary>
    internal static class Servers
    {
        internal const string Host = "127.0.0.1";
        internal const int BlockSize = 50;
        private static PortBlocks.Block s_block; // held until the process exits
        internal static readonly int Base = ChooseBase();
        internal static readonly int BundledPort = Base;            // embedded slotlane-server (SlotlaneServer), 4 shards, per-shard: +0..+3
        internal static readonly int ReplicaClusterPort = Base + 14; // ci/redis-cluster.sh, 3 primaries x 1 replica: +14..+19, buses +20..+25
        internal static readonly int PlainRedisPort = Base + 26;    // ci/redis-plain.sh
        internal static readonly int ClusterRedisPort = Base + 30;  // ci/redis-cluster.sh, 3 primaries: +30..+35
        internal static readonly int ChaosRedisPort = Base + 40;    // ci/redis-cluster.sh for kill/migrate: +40..+45
        internal static readonly int UnusedPort = Base + BlockSize - 1; // in the block, never listened on
        internal static readonly int TlsClusterPort = Base + 4;     // TlsTests: a tls-cluster 3-primary Redis Cluster: +4..+9
        internal static readonly int TlsPort = Base + 10;           // TlsTests: redis-server with tls-port only, client certificates optional
        internal static readonly int MtlsPort = Base + 11;          //   ... client certificates required
        internal static readonly int TlsWrongNamePort = Base + 12;  //   ... serving a certificate for DNS:wrong.example only
        internal static readonly int TlsExpiredPort = Base + 13;    //   ... serving a certificate that expired yesterday

        private static int ChooseBase()
        {
            string fixedBase = Environment.GetEnvironmentVariable("SL_CSHARP_TEST_PORT");
            if (!string.IsNullOrEmpty(fixedBase)) return int.Parse(fixedBase);
            int[] r = PortBlocks.SuiteRange(Root, "csharp");
            s_block = PortBlocks.Choose(r[0], r[1], BlockSize, "csharp", Path.GetTempPath());
            return s_block.Base;
        }

        private static readonly object s_lock = new object();
        private static SlotlaneServer s_bundled;
        private static bool s_plain, s_cluster, s_replicas, s_exitHook;

        internal static string Root
        {
            get
            {
                string r = Environment.GetEnvironmentVariable("SL_ROOT");
                if (!string.IsNullOrEmpty(r)) return r;
                string d = AppDomain.CurrentDomain.BaseDirectory;
                while (d != null && !File.Exists(Path.Combine(d, "core", "include", "slotlane.h"))) d = Path.GetDirectoryName(d);
                if (d == null) throw new InvalidOperationException("cannot find the repository root: set SL_ROOT");
                return d;
            }
        }

        internal static string WorkDir
        {
            get
            {
                string w = Environment.GetEnvironmentVariable("SL_CSHARP_WORK");
                if (string.IsNullOrEmpty(w)) w = Path.Combine(Root, "csharp", "out", "test-work");
                Directory.CreateDirectory(w);
                return w;
            }
        }

        private static void Hook()
        {
            if (s_exitHook) return;
            s_exitHook = true;
            AppDomain.CurrentDomain.ProcessExit += (s, e) => StopAll();
            AppDomain.CurrentDomain.DomainUnload += (s, e) => StopAll();
        }

        /// <summary>URL of the bundled slotlane-server (4 shards, per-shard ports, Redis Cluster replies),
        /// embedded in this process through <see cref="SlotlaneServer"/> (libslotlane_server.so beside
        /// libslotlane.so) on BundledPort..+3, and disposed at exit: the suite needs no executable.</summary>
        internal static string Bundled
        {
            get
            {
                lock (s_lock)
                {
                    Hook();
                    if (s_bundled == null)
                        s_bundled = new SlotlaneServer(new SlotlaneServerOptions { Shards = 4, Port = BundledPort, Bind = Host });
                    return "redis://" + Host + ":" + BundledPort;
                }
            }
        }

        /// <summary>The embedded bundled server, started if need be (for tests that look at it).</summary>
        internal static SlotlaneServer BundledServer
        {
            get
            {
                string unused = Bundled;
                lock (s_lock) return s_bundled;
            }
        }

        /// <summary>URL of a standalone redis-server.</summary>
        internal static string PlainRedis
        {
            get
            {
                lock (s_lock)
                {
                    Hook();
                    if (!s_plain)
                    {
                        Script("redis-plain.sh", "start " + Path.Combine(WorkDir, "plain") + " " + PlainRedisPort);
                        s_plain = true;
                    }
                    return "redis://" + Host + ":" + PlainRedisPort;
                }
            }
        }

        /// <summary>URL of a 3-primary Redis Cluster (no replicas).</summary>
        internal static string ClusterRedis
        {
            get
            {
                lock (s_lock)
                {
                    Hook();
                    if (!s_cluster)
                    {
                        Script("redis-cluster.sh", "start " + Path.Combine(WorkDir, "cluster") + " " + ClusterRedisPort + " 3");
                        s_cluster = true;
                    }
                    return "redis://" + Host + ":" + ClusterRedisPort;
                }
            }
        }

        internal static string ReplicaDir { get { return Path.Combine(WorkDir, "replicas"); } }

        /// <summary>URL of a Redis Cluster of 3 primaries x 1 replica (cluster-node-timeout 2 s). Roles change
        /// when a test fails a replica over: ask each node (INFO replication) for its role.</summary>
        internal static string ReplicaCluster
        {
            get
            {
                lock (s_lock)
                {
                    Hook();
                    if (!s_replicas)
                    {
                        Script("redis-cluster.sh", "start " + ReplicaDir + " " + ReplicaClusterPort + " 3 1", true,
                               new Dictionary<string, string> { { "SL_CLUSTER_NODE_TIMEOUT", "2000" } });
                        s_replicas = true;
                    }
                    return "redis://" + Host + ":" + ReplicaClusterPort;
                }
            }
        }

        internal static string ChaosDir { get { return Path.Combine(WorkDir, "chaos"); } }

        /// <summary>Starts a fresh 3-primary cluster for a test that kills or reshards it.</summary>
        internal static string StartChaos()
        {
            Hook();
            Script("redis-cluster.sh", "stop " + ChaosDir);
            Script("redis-cluster.sh", "start " + ChaosDir + " " + ChaosRedisPort + " 3");
            return "redis://" + Host + ":" + ChaosRedisPort;
        }

        internal static void StopChaos() { Script("redis-cluster.sh", "stop " + ChaosDir, false); }

        /// <summary>Runs ci/NAME ARGS with bash; throws with its output when it fails.</summary>
        internal static string Script(string name, string args, bool check = true, IDictionary<string, string> env = null)
        {
            var psi = new ProcessStartInfo("bash", Path.Combine(Root, "ci", name) + " " + args)
            {
                UseShellExecute = false,
                RedirectStandardOutput = true,
                RedirectStandardError = true,
            };
            if (env != null) foreach (var kv in env) psi.EnvironmentVariables[kv.Key] = kv.Value;
            using (var p = Process.Start(psi))
            {
                var err = p.StandardError.ReadToEndAsync();
                string output = p.StandardOutput.ReadToEnd();
                p.WaitForExit();
                if (check && p.ExitCode != 0)
                    throw new InvalidOperationException("ci/" + name + " " + args + " failed (" + p.ExitCode + "): " + output + err.Result);
                return output;
            }
        }

        /// <summary>Starts ci/NAME ARGS in the background.</summary>
        internal static Process ScriptAsync(string name, string args)
        {
            var psi = new ProcessStartInfo("bash", Path.Combine(Root, "ci", name) + " " + args)
            {
                UseShellExecute = false,
                RedirectStandardOutput = true,
                RedirectStandardError = true,
            };
            return Process.Start(psi);
        }

        internal static void StopAll()
        {
            lock (s_lock)
            {
                if (s_bundled != null)
                {
                    try { s_bundled.Dispose(); } catch { }
                    s_bundled = null;
                }
                if (s_plain) { try { Script("redis-plain.sh", "stop " + Path.Combine(WorkDir, "plain"), false); } catch { } s_plain = false; }
                if (s_cluster) { try { Script("redis-cluster.sh", "stop " + Path.Combine(WorkDir, "cluster"), false); } catch { } s_cluster = false; }
                if (s_replicas) { try { Script("redis-cluster.sh", "stop " + ReplicaDir, false); } catch { } s_replicas = false; }
            }
        }
    }
}
