using System;

namespace Slotlane
{
    /// <summary>What failed, for a <see cref="SlotlaneException"/>: the core's error kinds
    /// (<c>sl_err_kind</c>) plus the failures of a call as a whole.</summary>
    public enum ErrorKind
    {
        /// <summary>The server answered an error reply (ERR, WRONGTYPE, MOVED, CROSSSLOT...).</summary>
        Server = 0,
        /// <summary>The command's node could not be reached, written or read.</summary>
        Io = 1,
        /// <summary>The deadline passed before the reply.</summary>
        Timeout = 2,
        /// <summary>The redirect limit was reached.</summary>
        Redirects = 3,
        /// <summary>The node sent malformed RESP or exceeded a reply limit.</summary>
        Protocol = 4,
        /// <summary>The execution was cancelled (the client was disposed, or a cancel was requested).</summary>
        Cancelled = 5,
        /// <summary>No node owns the slot, or the client refused the command (CROSSSLOT transaction).</summary>
        Cluster = 6,
        /// <summary>The core refused the command's bytes or arguments.</summary>
        Argument = 7,
        /// <summary>A failure outside the kinds above (out of memory, an unexpected state).</summary>
        Other = 100,
    }

    /// <summary>Base class of every failure of a command or of the client. In a pipeline's results,
    /// a failed command's slot holds an instance of one of the subclasses.</summary>
    public class SlotlaneException : Exception
    {
        /// <summary>What failed.</summary>
        public ErrorKind Kind { get; }

        /// <summary>Creates an exception of the given kind.</summary>
        /// <param name="kind">What failed.</param>
        /// <param name="message">The message (for a server error: the server's text).</param>
        public SlotlaneException(ErrorKind kind, string message) : base(message) { Kind = kind; }

        /// <summary>Maps an error record's kind and message to the matching subclass.</summary>
        internal static SlotlaneException FromKind(int kind, string message)
        {
            switch (kind)
            {
                case 0: return new SlotlaneReplyException(message);
                case 1: return new SlotlaneConnectionException(message);
                case 2: return new SlotlaneTimeoutException(message);
                case 3: return new SlotlaneClusterException(ErrorKind.Redirects, message);
                case 4: return new SlotlaneProtocolException(message);
                case 5: return new SlotlaneCancelledException(message);
                case 6: return new SlotlaneClusterException(ErrorKind.Cluster, message);
                case 7: return new SlotlaneCommandRejectedException(message);
                default: return new SlotlaneException(ErrorKind.Other, message);
            }
        }

        /// <summary>Maps a negative return code of the core for a call as a whole.</summary>
        internal static Exception FromCode(int code, string message)
        {
            if (string.IsNullOrEmpty(message)) message = Native.PtrToUtf8(Native.sl_strerror(code));
            switch ((SlCode)code)
            {
                case SlCode.SL_EINVAL: return new ArgumentException(message);
                case SlCode.SL_EIO: return new SlotlaneConnectionException(message);
                case SlCode.SL_ETIMEOUT: return new SlotlaneTimeoutException(message);
                case SlCode.SL_EPROTO: return new SlotlaneProtocolException(message);
                case SlCode.SL_ESERVER: return new SlotlaneReplyException(message);
                case SlCode.SL_EREDIRECT: return new SlotlaneClusterException(ErrorKind.Redirects, message);
                case SlCode.SL_ECANCELLED: return new SlotlaneCancelledException(message);
                case SlCode.SL_ECLUSTER: return new SlotlaneClusterException(ErrorKind.Cluster, message);
                case SlCode.SL_EUNSUPPORTED: return new NotSupportedException(message);
                default: return new SlotlaneException(ErrorKind.Other, message + " (code " + code + ")");
            }
        }
    }

    /// <summary>The server answered the command with an error reply.</summary>
    public class SlotlaneReplyException : SlotlaneException
    {
        /// <summary>Creates the exception from the server's error text.</summary>
        /// <param name="message">The error reply, e.g. "WRONGTYPE Operation against a key...".</param>
        public SlotlaneReplyException(string message) : base(ErrorKind.Server, message) { }

        /// <summary>The error's first word: "ERR", "WRONGTYPE", "MOVED", "CROSSSLOT"...</summary>
        public string Prefix
        {
            get
            {
                int sp = Message.IndexOf(' ');
                return sp < 0 ? Message : Message.Substring(0, sp);
            }
        }
    }

    /// <summary>The node serving the command could not be connected, written or read.</summary>
    public class SlotlaneConnectionException : SlotlaneException
    {
        /// <summary>Creates the exception.</summary>
        /// <param name="message">What failed.</param>
        public SlotlaneConnectionException(string message) : base(ErrorKind.Io, message) { }
    }

    /// <summary>The command's deadline passed before its reply arrived.</summary>
    public class SlotlaneTimeoutException : SlotlaneException
    {
        /// <summary>Creates the exception.</summary>
        /// <param name="message">What timed out.</param>
        public SlotlaneTimeoutException(string message) : base(ErrorKind.Timeout, message) { }
    }

    /// <summary>A cluster failure: too many redirects, no node for a slot, discovery failed,
    /// or a transaction across slots refused (CROSSSLOT).</summary>
    public class SlotlaneClusterException : SlotlaneException
    {
        /// <summary>Creates the exception.</summary>
        /// <param name="kind"><see cref="ErrorKind.Cluster"/> or <see cref="ErrorKind.Redirects"/>.</param>
        /// <param name="message">What failed.</param>
        public SlotlaneClusterException(ErrorKind kind, string message) : base(kind, message) { }
    }

    /// <summary>The node sent bytes that are not RESP, or exceeded a reply limit.</summary>
    public class SlotlaneProtocolException : SlotlaneException
    {
        /// <summary>Creates the exception.</summary>
        /// <param name="message">What was wrong.</param>
        public SlotlaneProtocolException(string message) : base(ErrorKind.Protocol, message) { }
    }

    /// <summary>The execution was cancelled before the command had its reply.</summary>
    public class SlotlaneCancelledException : SlotlaneException
    {
        /// <summary>Creates the exception.</summary>
        /// <param name="message">Why.</param>
        public SlotlaneCancelledException(string message) : base(ErrorKind.Cancelled, message) { }
    }

    /// <summary>The core refused the command's bytes or arguments without sending it.</summary>
    public class SlotlaneCommandRejectedException : SlotlaneException
    {
        /// <summary>Creates the exception.</summary>
        /// <param name="message">Why.</param>
        public SlotlaneCommandRejectedException(string message) : base(ErrorKind.Argument, message) { }
    }
}
