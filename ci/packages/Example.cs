// The C# package's example (ci/test-packages.sh: `nuget install` from a local folder feed into a
// scratch project, compiled with mcs against lib/netstandard2.1 and run under mono): SETs and
// GETs over the cluster at args[0] in one pipeline, then an ExecuteAsync on the core's libuv
// loop; every reply checked.
using System;
using System.Text;
using Slotlane;

static class Example
{
    static string Text(object o) { var b = o as byte[]; return b != null ? Encoding.UTF8.GetString(b) : o as string; }

    static int Main(string[] args)
    {
        using (var client = SlotlaneClient.Connect(new ClientOptions { Url = args[0] }))
        {
            object[] r;
            using (var p = client.CreatePipeline())
            {
                for (int i = 0; i < 32; i++) p.Set("pkg:cs:" + i, "value-" + i);
                for (int i = 0; i < 32; i++) p.Get("pkg:cs:" + i);
                r = p.Execute();
            }
            for (int i = 0; i < 32; i++)
                if (Text(r[32 + i]) != "value-" + i) throw new Exception("GET pkg:cs:" + i + " = " + r[32 + i]);
            object[] a;
            using (var p = client.CreatePipeline())
            {
                p.Add("GET", "pkg:cs:5");
                a = p.ExecuteAsync().GetAwaiter().GetResult();
            }
            if (Text(a[0]) != "value-5") throw new Exception("ExecuteAsync GET = " + a[0]);
            Console.WriteLine("csharp ok: 32 SET + 32 GET, ExecuteAsync, core " + SlotlaneClient.CoreVersion
                              + " from " + typeof(SlotlaneClient).Assembly.Location);
        }
        return 0;
    }
}
