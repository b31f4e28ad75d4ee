// A user's test helper in a scratch project (ci/test-packages.sh csharp): the installed
// package's Slotlane.Testing.SlotlaneServer starts a 4-shard slotlane-server inside this process
// (runtimes/linux-x64/native/libslotlane_server.so beside the program); 64 keys over its
// slots, every reply checked, then Dispose stops it.
using System;
using Slotlane;
using Slotlane.Testing;

static class ExampleTesting
{
    static int Main()
    {
        using (var server = new SlotlaneServer(new SlotlaneServerOptions { Shards = 4 }))
        using (var client = SlotlaneClient.Connect(new ClientOptions { Url = server.Url }))
        {
            for (int i = 0; i < 64; i++) client.Set("pkg:cs:t:" + i, i.ToString());
            for (int i = 0; i < 64; i++)
            {
                string s = client.Get("pkg:cs:t:" + i);
                if (s != i.ToString()) throw new Exception("pkg:cs:t:" + i + " read back " + s);
            }
            Console.WriteLine("csharp-testing ok: 64 keys over " + server.Ports.Count + " shards at " + server.Url);
        }
        return 0;
    }
}
