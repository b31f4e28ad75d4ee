'use strict';
// The error classes of slotlane. Every error a command can fail with is a SlotlaneError;
// `kind` tells which of the core's error kinds (sl_err_kind) it came from.

class SlotlaneError extends Error {
  constructor(message, kind) {
    super(message);
    this.name = this.constructor.name;
    this.kind = kind;
  }
}

/** The server answered an error reply (WRONGTYPE, ERR ..., MOVED ...). `code` is its first word. */
class ReplyError extends SlotlaneError {
  constructor(message, kind = 'server') {
    super(message, kind);
    const sp = message.indexOf(' ');
    this.code = sp < 0 ? message : message.slice(0, sp);
  }
}

/** Connecting, writing or reading failed; the client was closed; the server broke the protocol. */
class ConnectionError extends SlotlaneError {}

/** The command's deadline passed before its reply came. */
class TimeoutError extends SlotlaneError {}

/** Discovery failed, no node owns the slot, too many redirects, or a CROSSSLOT refusal. */
class ClusterError extends SlotlaneError {}

// sl_err_kind order (core/include/slotlane.h)
const KINDS = ['server', 'io', 'timeout', 'redirects', 'protocol', 'cancelled', 'cluster', 'argument'];

function errorFromRecord(flags, message) {
  const kind = KINDS[flags] || 'unknown';
  switch (flags) {
    case 0: return new ReplyError(message, kind);
    case 1: case 4: case 5: return new ConnectionError(message, kind);
    case 2: return new TimeoutError(message, kind);
    case 3: case 6: return new ClusterError(message, kind);
    default: return new SlotlaneError(message, kind);
  }
}

// SL_E* codes (negative) of whole-call failures
const CODES = {
  [-1]: 'argument', [-2]: 'nomem', [-3]: 'io', [-4]: 'timeout', [-5]: 'protocol',
  [-6]: 'server', [-7]: 'redirects', [-8]: 'cancelled', [-9]: 'cluster', [-10]: 'toosmall',
  [-11]: 'unsupported', [-12]: 'state',
};

function errorFromCode(code, message) {
  const kind = CODES[code] || 'unknown';
  switch (code) {
    case -3: case -5: case -8: case -12: return new ConnectionError(message, kind);
    case -4: return new TimeoutError(message, kind);
    case -7: case -9: return new ClusterError(message, kind);
    default: return new SlotlaneError(message, kind);
  }
}

module.exports = {
  SlotlaneError, ReplyError, ConnectionError, TimeoutError, ClusterError,
  errorFromRecord, errorFromCode, KINDS,
};
