/* slotlane-load --mode blpop|publish (msg_modes.c): message loads on plain sockets. */
#ifndef SL_LOAD_MSG_MODES_H
#define SL_LOAD_MSG_MODES_H

/* Runs the mode named by --mode with its own arguments; returns the exit code. */
int sl_load_msg_mode(int argc, char **argv);

#endif
