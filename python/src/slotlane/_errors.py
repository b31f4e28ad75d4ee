"""Exceptions. A failed command's reply is an instance of one of these; the server's
message is the exception's message (``str(exc)``) and ``exc.message``."""
from typing import Optional

__all__ = ["Error", "ResponseError", "ConnectionError", "TimeoutError", "ClusterError",
           "ProtocolError", "CancelledError"]


class Error(Exception):
    """Base class of every slotlane error.

    ``message``: the text (the server's error message for ResponseError);
    ``kind``: where it comes from — ``"server"``, ``"io"``, ``"timeout"``, ``"redirects"``,
    ``"protocol"``, ``"cancelled"``, ``"cluster"``, ``"argument"`` for a command's reply,
    or ``"client"`` for an error of the client as a whole.
    """

    kind: str = "client"

    def __init__(self, message: str = "", kind: Optional[str] = None) -> None:
        super().__init__(message)
        self.message = message
        if kind is not None:
            self.kind = kind

    def __eq__(self, other: object) -> bool:  # errors in result lists compare by content
        if type(other) is not type(self):
            return False
        assert isinstance(other, Error)
        return other.message == self.message and other.kind == self.kind

    def __hash__(self) -> int:
        return hash((type(self), self.message, self.kind))

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (type(self), (self.message, self.kind))


class ResponseError(Error):
    """The server answered this command with an error (ERR, WRONGTYPE, CROSSSLOT...)."""

    kind = "server"

    @property
    def code(self) -> str:
        """The error's first word: ``"ERR"``, ``"WRONGTYPE"``, ..."""
        return self.message.split(" ", 1)[0]


class ConnectionError(Error):
    """Connecting to the command's node, writing or reading failed."""

    kind = "io"


class ProtocolError(ConnectionError):
    """The node sent bytes that are not RESP, or a reply exceeded a limit."""

    kind = "protocol"


class TimeoutError(Error):
    """A connect or execution deadline passed."""

    kind = "timeout"


class ClusterError(Error):
    """Cluster trouble: discovery failed, no node owns the slot, too many redirects,
    or the client refused the command (a CROSSSLOT transaction)."""

    kind = "cluster"


class CancelledError(Error):
    """The execution was cancelled (the client was closed while it ran)."""

    kind = "cancelled"
