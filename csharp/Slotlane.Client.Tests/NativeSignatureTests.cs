using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.IO;
using System.Linq;
using System.Reflection;
using System.Runtime.InteropServices;
using System.Text;
using System.Text.RegularExpressions;
using NUnit.Framework;

namespace Slotlane.Tests
{
    /// <summary>The hand-written P/Invoke layer (Native.cs) against core/include/slotlane.h and
    /// slotlane_uv.h: every declaration's parameter and return types, the mirrored structs' layouts
    /// (offsets and sizes from a C probe compiled against the header), and enum and constant values.</summary>
    [TestFixture]
    public class NativeSignatureTests
    {
        private static string HeaderText(bool keepPreprocessor = false)
        {
            string inc = Path.Combine(Servers.Root, "core", "include");
            string all = File.ReadAllText(Path.Combine(inc, "slotlane.h")) + "\n" + File.ReadAllText(Path.Combine(inc, "slotlane_uv.h"));
            all = Regex.Replace(all, @"/\*.*?\*/", " ", RegexOptions.Singleline);
            all = Regex.Replace(all, @"//[^\n]*", " ");
            if (!keepPreprocessor) all = Regex.Replace(all, @"^\s*#.*$", " ", RegexOptions.Multiline);
            return all;
        }

        internal sealed class Proto
        {
            internal string Name, Ret;
            internal List<string> Params = new List<string>();
        }

        private static string NormType(string t)
        {
            t = Regex.Replace(t, @"\bconst\b", " ");
            t = Regex.Replace(t, @"\s*\*\s*", "*");
            t = Regex.Replace(t, @"\s+", " ").Trim();
            return t;
        }

        internal static Dictionary<string, Proto> Prototypes()
        {
            var d = new Dictionary<string, Proto>();
            foreach (Match m in Regex.Matches(HeaderText(), @"SL_EXTERN\s+([^;(]*?)\b(sl_\w+)\s*\(([^;]*?)\)\s*;", RegexOptions.Singleline))
            {
                var p = new Proto { Name = m.Groups[2].Value, Ret = NormType(m.Groups[1].Value) };
                string ps = m.Groups[3].Value.Trim();
                if (ps != "void" && ps.Length > 0)
                    foreach (string one in ps.Split(','))
                    {
                        // drop the parameter's name: the last identifier
                        var pm = Regex.Match(one.Trim(), @"^(.*?)(\w+)$", RegexOptions.Singleline);
                        p.Params.Add(NormType(pm.Groups[1].Value));
                    }
                d[p.Name] = p;
            }
            return d;
        }

        // C type → the C# types that bind it correctly (on 64-bit Linux; size_t ↔ UIntPtr).
        private static readonly Dictionary<string, string[]> Map = new Dictionary<string, string[]>
        {
            { "void", new[] { "System.Void" } },
            { "int", new[] { "System.Int32" } },
            { "unsigned int", new[] { "System.UInt32" } },
            { "size_t", new[] { "System.UIntPtr" } },
            { "uint64_t", new[] { "System.UInt64" } },
            { "int64_t", new[] { "System.Int64" } },
            { "char*", new[] { "System.IntPtr", "System.Byte*" } },
            { "void*", new[] { "System.Void*", "System.Byte*", "System.IntPtr" } },
            { "uint8_t**", new[] { "System.Byte**" } },
            { "size_t*", new[] { "System.UIntPtr*" } },
            { "sl_client*", new[] { "System.IntPtr" } },
            { "sl_batch*", new[] { "System.IntPtr" } },
            { "sl_loop*", new[] { "System.IntPtr" } },
            { "sl_client**", new[] { "System.IntPtr*" } },
            { "sl_batch**", new[] { "System.IntPtr*" } },
            { "sl_loop**", new[] { "System.IntPtr*" } },
            { "sl_cq*", new[] { "System.IntPtr" } },
            { "sl_tls*", new[] { "System.IntPtr" } },
            { "sl_tls**", new[] { "System.IntPtr*" } },
            { "sl_tls_options*", new[] { "Slotlane.SlTlsOptions*" } },
            { "sl_cq**", new[] { "System.IntPtr*" } },
            { "sl_completion*", new[] { "Slotlane.SlCompletion*" } },
            { "sl_client_options*", new[] { "Slotlane.SlClientOptions*" } },
            { "sl_stats*", new[] { "Slotlane.SlStats*" } },
            { "sl_sizes*", new[] { "Slotlane.SlSizes*" } },
            { "sl_route*", new[] { "Slotlane.SlRoute*" } },
            { "sl_reply*", new[] { "Slotlane.SlReply*" } },
            { "sl_exec_cb", new[] { "System.IntPtr" } },
            { "sl_node_info*", new[] { "System.IntPtr" } },
            { "sl_node_info**", new[] { "System.IntPtr*" } },
            { "sl_scan*", new[] { "System.IntPtr" } },
            { "sl_session*", new[] { "System.IntPtr" } },
            { "sl_session**", new[] { "System.IntPtr*" } },
            { "sl_scan**", new[] { "System.IntPtr*" } },
            { "sl_scan_options*", new[] { "Slotlane.SlScanOptions*" } },
            { "int*", new[] { "System.Int32*" } },
            { "sl_subscriber*", new[] { "System.IntPtr" } },
            { "sl_subscriber**", new[] { "System.IntPtr*" } },
            { "sl_subscriber_options*", new[] { "Slotlane.SlSubscriberOptions*" } },
            { "sl_subscriber_stats*", new[] { "Slotlane.SlSubscriberStats*" } },
            { "sl_message*", new[] { "Slotlane.SlMessage*" } },
        };

        private static IEnumerable<MethodInfo> Imports()
        {
            return typeof(Native).GetMethods(BindingFlags.Static | BindingFlags.NonPublic | BindingFlags.Public)
                .Where(m => (m.Attributes & MethodAttributes.PinvokeImpl) != 0);
        }

        [Test]
        public void EveryImportMatchesTheHeader()
        {
            var protos = Prototypes();
            Assert.That(protos.Count, Is.GreaterThanOrEqualTo(25), "prototypes parsed from the headers");
            var problems = new List<string>();
            int n = 0;
            foreach (MethodInfo m in Imports())
            {
                n++;
                Proto p;
                if (!protos.TryGetValue(m.Name, out p)) { problems.Add(m.Name + ": not in slotlane.h/slotlane_uv.h"); continue; }
                string[] ok;
                if (!Map.TryGetValue(p.Ret, out ok)) problems.Add(m.Name + ": no mapping for return type " + p.Ret);
                else if (!ok.Contains(m.ReturnType.ToString())) problems.Add(m.Name + ": returns " + m.ReturnType + ", C has " + p.Ret);
                ParameterInfo[] ps = m.GetParameters();
                if (ps.Length != p.Params.Count) { problems.Add(m.Name + ": " + ps.Length + " parameters, C has " + p.Params.Count); continue; }
                for (int i = 0; i < ps.Length; i++)
                {
                    if (!Map.TryGetValue(p.Params[i], out ok)) problems.Add(m.Name + ": no mapping for parameter type " + p.Params[i]);
                    else if (!ok.Contains(ps[i].ParameterType.ToString()))
                        problems.Add(m.Name + " parameter " + i + ": " + ps[i].ParameterType + ", C has " + p.Params[i]);
                    if (ps[i].ParameterType.IsArray || ps[i].ParameterType == typeof(string))
                        problems.Add(m.Name + " parameter " + i + ": marshalled managed type " + ps[i].ParameterType);
                }
            }
            Assert.That(n, Is.GreaterThanOrEqualTo(20), "DllImport methods found");
            Assert.That(problems, Is.Empty, string.Join("\n", problems));
        }

        [Test]
        public void EveryHeaderFunctionIsBoundOrListedAsNotBound()
        {
            var bound = new HashSet<string>(Imports().Select(m => m.Name));
            var missing = Prototypes().Keys.Where(k => !bound.Contains(k) && !Native.NotBound.Contains(k)).ToList();
            Assert.That(missing, Is.Empty, "header functions neither bound nor in Native.NotBound");
            foreach (string nb in Native.NotBound) Assert.That(Prototypes().ContainsKey(nb), nb + " is in NotBound but not in the headers");
        }

        [Test]
        public void ImportsUseCdeclAndTheLibraryName()
        {
            foreach (MethodInfo m in Imports())
            {
                var a = (DllImportAttribute)m.GetCustomAttributes(typeof(DllImportAttribute), false).FirstOrDefault();
                Assert.That(a, Is.Not.Null, m.Name);
                Assert.That(a.Value, Is.EqualTo("slotlane"), m.Name);
                Assert.That(a.CallingConvention, Is.EqualTo(CallingConvention.Cdecl), m.Name);
                Assert.That(m.GetCustomAttributes(false).Any(x => x.GetType().Name == "SuppressGCTransitionAttribute"), Is.False,
                            m.Name + ": SuppressGCTransition must not be used (calls may block)");
            }
        }

        [Test]
        public void StructLayoutsMatchTheHeader()
        {
            var structs = new[]
            {
                Tuple.Create(typeof(SlReply), "sl_reply"), Tuple.Create(typeof(SlSizes), "sl_sizes"),
                Tuple.Create(typeof(SlStats), "sl_stats"), Tuple.Create(typeof(SlRoute), "sl_route"),
                Tuple.Create(typeof(SlClientOptions), "sl_client_options"),
                Tuple.Create(typeof(SlNodeInfo), "sl_node_info"), Tuple.Create(typeof(SlScanOptions), "sl_scan_options"),
                Tuple.Create(typeof(SlCompletion), "sl_completion"), Tuple.Create(typeof(SlTlsOptions), "sl_tls_options"),
                Tuple.Create(typeof(SlMessage), "sl_message"), Tuple.Create(typeof(SlSubscriberOptions), "sl_subscriber_options"),
                Tuple.Create(typeof(SlSubscriberStats), "sl_subscriber_stats"),
            };
            var c = new StringBuilder("#include <stdio.h>\n#include <stddef.h>\n#include \"slotlane.h\"\n#include \"slotlane_uv.h\"\nint main(void){\n");
            var expect = new List<string>();
            foreach (var s in structs)
            {
                c.AppendFormat("printf(\"{0} %zu\\n\", sizeof({0}));\n", s.Item2);
                expect.Add(s.Item2 + " " + Marshal.SizeOf(s.Item1));
                foreach (FieldInfo f in s.Item1.GetFields(BindingFlags.Instance | BindingFlags.Public | BindingFlags.NonPublic))
                {
                    c.AppendFormat("printf(\"{0}.{1} %zu\\n\", offsetof({0}, {1}));\n", s.Item2, f.Name);
                    expect.Add(s.Item2 + "." + f.Name + " " + Marshal.OffsetOf(s.Item1, f.Name));
                }
            }
            c.Append("return 0; }\n");
            string dir = Path.Combine(Servers.WorkDir, "probe");
            Directory.CreateDirectory(dir);
            File.WriteAllText(Path.Combine(dir, "probe.c"), c.ToString());
            Run("gcc", "-std=c11 -D_GNU_SOURCE -I" + Path.Combine(Servers.Root, "core", "include") + " -o " + Path.Combine(dir, "probe") + " " + Path.Combine(dir, "probe.c"));
            string got = Run(Path.Combine(dir, "probe"), "");
            Assert.That(got.Trim().Split('\n'), Is.EqualTo(expect.ToArray()));
            unsafe { Assert.That(sizeof(SlReply), Is.EqualTo(24)); Assert.That(sizeof(SlMessage), Is.EqualTo(32)); }
        }

        [Test]
        public void EnumValuesAndConstantsMatchTheHeader()
        {
            string h = HeaderText(true);
            var values = new Dictionary<string, int>();
            foreach (Match m in Regex.Matches(h, @"\b(SL_[A-Z0-9_]+)\s*=\s*(-?\d+)")) values[m.Groups[1].Value] = int.Parse(m.Groups[2].Value);
            Assert.That(values.Count, Is.GreaterThan(40));
            foreach (var kv in values.Where(k => k.Key == "SL_OK" || Regex.IsMatch(k.Key, "^SL_E[A-Z]+$")))
                Assert.That((int)Enum.Parse(typeof(SlCode), kv.Key), Is.EqualTo(kv.Value), kv.Key);
            Assert.That(Enum.GetValues(typeof(SlCode)).Length, Is.EqualTo(values.Keys.Count(k => k == "SL_OK" || Regex.IsMatch(k, "^SL_E[A-Z]+$"))));
            foreach (var kv in values.Where(k => k.Key.StartsWith("SL_REPLY_")))
                Assert.That((int)Enum.Parse(typeof(SlReplyType), kv.Key), Is.EqualTo(kv.Value), kv.Key);
            Assert.That(Enum.GetValues(typeof(SlReplyType)).Length, Is.EqualTo(values.Keys.Count(k => k.StartsWith("SL_REPLY_"))));
            Func<string, string> norm = s => s.Replace("_", "").ToLowerInvariant();
            foreach (var kv in values.Where(k => k.Key.StartsWith("SL_ERR_")))
                Assert.That(norm(((ErrorKind)kv.Value).ToString()), Is.EqualTo(norm(kv.Key.Substring(7))), kv.Key);
            foreach (var kv in values.Where(k => k.Key.StartsWith("SL_MODE_")))
                Assert.That(norm(((ClientMode)kv.Value).ToString()), Is.EqualTo(norm(kv.Key.Substring(8))), kv.Key);
            foreach (var kv in values.Where(k => k.Key.StartsWith("SL_ROUTE_")))
                Assert.That(norm(((RouteKind)kv.Value).ToString()).Replace("bykey", "key"), Is.EqualTo(norm(kv.Key.Substring(9))), kv.Key);
            Assert.That(Regex.Match(h, @"#define SL_CLIENT_OPTIONS_VERSION (\d+)").Groups[1].Value, Is.EqualTo(Native.SL_CLIENT_OPTIONS_VERSION.ToString()));
            Assert.That(Regex.Match(h, @"#define SL_STATS_VERSION (\d+)").Groups[1].Value, Is.EqualTo(Native.SL_STATS_VERSION.ToString()));
            Assert.That(Regex.Match(h, @"#define SL_ROUTE_VERSION (\d+)").Groups[1].Value, Is.EqualTo(Native.SL_ROUTE_VERSION.ToString()));
            Assert.That(Regex.Match(h, @"#define SL_TLS_OPTIONS_VERSION (\d+)").Groups[1].Value, Is.EqualTo(Native.SL_TLS_OPTIONS_VERSION.ToString()));
            Assert.That(Regex.Match(h, @"#define SL_SUBSCRIBER_OPTIONS_VERSION (\d+)").Groups[1].Value, Is.EqualTo(Native.SL_SUBSCRIBER_OPTIONS_VERSION.ToString()));
            Assert.That(Regex.Match(h, @"#define SL_SUBSCRIBER_STATS_VERSION (\d+)").Groups[1].Value, Is.EqualTo(Native.SL_SUBSCRIBER_STATS_VERSION.ToString()));
            int n;
            n = 0;
            foreach (var kv in values.Where(k => k.Key.StartsWith("SL_MSG_"))) { n++; Assert.That(norm(((PubSubMessageKind)kv.Value).ToString()), Is.EqualTo(norm(kv.Key.Substring(7))), kv.Key); }
            Assert.That(n, Is.EqualTo(Enum.GetValues(typeof(PubSubMessageKind)).Length), "SL_MSG_* kinds");
            n = 0;
            foreach (var kv in values.Where(k => k.Key.StartsWith("SL_SUB_"))) { n++; Assert.That(norm(((SubscriptionKind)kv.Value).ToString()), Is.EqualTo(norm(kv.Key.Substring(7))), kv.Key); }
            Assert.That(n, Is.EqualTo(Enum.GetValues(typeof(SubscriptionKind)).Length), "SL_SUB_* kinds");
            n = 0;
            foreach (var kv in values.Where(k => k.Key.StartsWith("SL_EVENT_"))) { n++; Assert.That(norm(((ClientEventKind)kv.Value).ToString()), Is.EqualTo(norm(kv.Key.Substring(9))), kv.Key); }
            Assert.That(n, Is.EqualTo(Enum.GetValues(typeof(ClientEventKind)).Length), "SL_EVENT_* kinds");
            n = 0;
            foreach (var kv in values.Where(k => k.Key.StartsWith("SL_READ_"))) { n++; Assert.That(norm(((ReadFrom)kv.Value).ToString()), Is.EqualTo(norm(kv.Key.Substring(8))), kv.Key); }
            Assert.That(n, Is.EqualTo(Enum.GetValues(typeof(ReadFrom)).Length), "SL_READ_* values");
            foreach (var kv in values.Where(k => k.Key.StartsWith("SL_TLS_VERIFY_")))
                Assert.That(norm(((TlsVerify)kv.Value).ToString()), Is.EqualTo(norm(kv.Key.Substring(14))), kv.Key);
            foreach (var kv in values.Where(k => k.Key.StartsWith("SL_TLS_NODES_")))
                Assert.That(norm(((TlsNodeNames)kv.Value).ToString()), Is.EqualTo(norm(kv.Key.Substring(13))), kv.Key);
        }

        [Test]
        public void TheCheckerCatchesAWrongType()
        {
            // The checker itself must be able to fail: sl_batch_run's len is size_t, not int.
            var p = Prototypes()["sl_batch_run"];
            Assert.That(p.Params[2], Is.EqualTo("size_t"));
            Assert.That(Map[p.Params[2]], Has.No.Member("System.Int32"));
            Assert.That(p.Params.Count, Is.EqualTo(10));
            Assert.That(Prototypes()["sl_batch_replies"].Ret, Is.EqualTo("sl_reply*"));
        }

        internal static string Run(string file, string args)
        {
            var psi = new ProcessStartInfo(file, args) { UseShellExecute = false, RedirectStandardOutput = true, RedirectStandardError = true };
            using (var p = Process.Start(psi))
            {
                var err = p.StandardError.ReadToEndAsync();
                string o = p.StandardOutput.ReadToEnd();
                p.WaitForExit();
                if (p.ExitCode != 0) throw new InvalidOperationException(file + " " + args + ": exit " + p.ExitCode + ": " + err.Result);
                return o;
            }
        }
    }
}
