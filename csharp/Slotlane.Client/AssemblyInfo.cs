using System.Runtime.CompilerServices;

[assembly: InternalsVisibleTo("Slotlane.Client.Tests")]
[assembly: InternalsVisibleTo("Slotlane.Client.Benchmarks")]   // --async-cost reads the dispatcher's wake-up counters
