// Instructions per queued pipeline command (GET or SET) of a Slotlane.Client.dll, without a server:
// the pipeline is built by reflection (its client is only used by Execute) and cleared every 64 commands.
using System;
using System.Reflection;
using Slotlane;

static class QueueCost
{
    static void Main(string[] a)
    {
        int n = int.Parse(a[0]);
        bool get = a[1] == "GET";
        var ctor = typeof(Pipeline).GetConstructor(BindingFlags.NonPublic | BindingFlags.Instance, null, new[] { typeof(SlotlaneClient) }, null);
        var p = (Pipeline)ctor.Invoke(new object[] { null });
        var keys = new string[64];
        for (int i = 0; i < 64; i++) keys[i] = "key:" + i;
        string v = "value-of-sixteen";
        // warm up (the JIT), then the measured loop
        for (int i = 0; i < 640; i++) { if (get) p.Get(keys[i & 63]); else p.Set(keys[i & 63], v); if ((i & 63) == 63) p.Clear(); }
        for (int i = 0; i < n; i++) { if (get) p.Get(keys[i & 63]); else p.Set(keys[i & 63], v); if ((i & 63) == 63) p.Clear(); }
        Console.WriteLine(p.Count);
    }
}
