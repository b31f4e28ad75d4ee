using System.IO;
using System.Linq;
using System.Xml.Linq;
using NUnit.Framework;

namespace Slotlane.Tests
{
    /// <summary>The project files that this machine cannot build (no .NET SDK): checked for what they must say.</summary>
    [TestFixture]
    public class PackageTests
    {
        private static XDocument Load(string rel) { return XDocument.Load(Path.Combine(Servers.Root, "csharp", rel)); }

        private static string Prop(XDocument d, string name)
        {
            var e = d.Descendants(name).FirstOrDefault();
            return e == null ? null : e.Value.Trim();
        }

        [Test]
        public void LibraryProject()
        {
            var d = Load("Slotlane.Client/Slotlane.Client.csproj");
            Assert.That(d.Root.Attribute("Sdk").Value, Is.EqualTo("Microsoft.NET.Sdk"));
            Assert.That(Prop(d, "TargetFrameworks"), Is.EqualTo("netstandard2.1;net8.0"));
            Assert.That(Prop(d, "LangVersion"), Is.EqualTo("7.2"));
            Assert.That(Prop(d, "AllowUnsafeBlocks"), Is.EqualTo("true"));
            Assert.That(Prop(d, "GenerateDocumentationFile"), Is.EqualTo("true"));
            var packed = d.Descendants().Where(e => e.Attribute("PackagePath") != null).Select(e => e.Attribute("PackagePath").Value).ToList();
            Assert.That(packed, Has.Member("runtimes/linux-x64/native/libslotlane.so"));
            Assert.That(packed, Has.Member("build/Slotlane.Client.targets"));
            Assert.That(packed, Has.Member("buildTransitive/Slotlane.Client.targets"));
            // every source file of the folder is compiled by both (the SDK globs *.cs; mono-build.sh too)
            Assert.That(d.Descendants("Compile").Any(e => e.Attribute("Remove") != null), Is.False);
        }

        [Test]
        public void TargetsFileCopiesTheNativeLibrary()
        {
            var d = Load("Slotlane.Client/build/Slotlane.Client.targets");
            var item = d.Descendants().FirstOrDefault(e => e.Attribute("Include") != null && e.Attribute("Include").Value.Contains("runtimes/linux-x64/native/libslotlane.so"));
            Assert.That(item, Is.Not.Null);
            Assert.That(item.Descendants().Any(e => e.Name.LocalName == "CopyToOutputDirectory"), Is.True);
        }

        [Test]
        public void TestAndBenchmarkProjects()
        {
            var t = Load("Slotlane.Client.Tests/Slotlane.Client.Tests.csproj");
            Assert.That(t.Descendants("PackageReference").Select(e => e.Attribute("Include").Value), Has.Member("NUnit").And.Member("NUnit3TestAdapter").And.Member("Microsoft.NET.Test.Sdk"));
            Assert.That(t.Descendants("ProjectReference").Count(), Is.EqualTo(1));
            var b = Load("Slotlane.Client.Benchmarks/Slotlane.Client.Benchmarks.csproj");
            Assert.That(Prop(b, "OutputType"), Is.EqualTo("Exe"));
            Assert.That(Prop(b, "LangVersion"), Is.EqualTo("7.2"));
        }
    }
}
