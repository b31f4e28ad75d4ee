// NetStandardRef.exe IN OUT NETSTANDARD_FACADE — makes the Mono-compiled Slotlane.Client.dll a
// netstandard2.1 library. mcs cannot compile against a facade alone (Mono's
// Facades/netstandard.dll only forwards its types to mscorlib, System, System.Core...), so the
// library is compiled against the facade plus the assemblies it forwards to, and then every
// type reference is pointed at netstandard here — after checking that the facade exports
// that type, so the library uses nothing outside netstandard 2.1. Fails (exit 1) naming the
// types netstandard lacks, or when any assembly reference but netstandard remains.
using System;
using System.Collections.Generic;
using System.Linq;
using Mono.Cecil;

static class NetStandardRef
{
    static int Main(string[] args)
    {
        if (args.Length != 3) { Console.Error.WriteLine("usage: NetStandardRef.exe IN OUT NETSTANDARD_FACADE"); return 2; }
        var facade = AssemblyDefinition.ReadAssembly(args[2]);
        var exported = new HashSet<string>(facade.MainModule.ExportedTypes.Select(t => t.FullName));
        foreach (var t in facade.MainModule.Types) exported.Add(t.FullName);
        var nsRef = new AssemblyNameReference(facade.Name.Name, facade.Name.Version) { PublicKeyToken = facade.Name.PublicKeyToken };

        var asm = AssemblyDefinition.ReadAssembly(args[0]);
        var module = asm.MainModule;
        module.AssemblyReferences.Add(nsRef);
        var missing = new SortedSet<string>();
        foreach (var tr in module.GetTypeReferences())
        {
            if (tr.DeclaringType != null) continue;  // nested: scoped by the outer type
            if (!(tr.Scope is AssemblyNameReference scope) || scope == nsRef) continue;
            if (!exported.Contains(tr.FullName)) { missing.Add(tr.FullName + " (" + scope.Name + ")"); continue; }
            tr.Scope = nsRef;
        }
        if (missing.Count > 0)
        {
            Console.Error.WriteLine("NetStandardRef: not in netstandard " + facade.Name.Version + ": " + string.Join(", ", missing));
            return 1;
        }
        foreach (var r in module.AssemblyReferences.Where(r => r != nsRef).ToList()) module.AssemblyReferences.Remove(r);
        asm.Write(args[1]);

        // the check: read the written file back
        var written = AssemblyDefinition.ReadAssembly(args[1]).MainModule;
        var refs = written.AssemblyReferences.Select(r => r.Name + " " + r.Version).ToList();
        if (refs.Count != 1 || written.AssemblyReferences[0].Name != "netstandard")
        {
            Console.Error.WriteLine("NetStandardRef: the assembly references " + string.Join(", ", refs));
            return 1;
        }
        Console.WriteLine("NetStandardRef: " + written.Assembly.Name.Name + " references only " + refs[0]);
        return 0;
    }
}
