using System.Runtime.CompilerServices;

[assembly: InternalsVisibleTo("Slotlane.Client.Tests")]
