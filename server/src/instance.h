/* instance: a server's start and stop over its sv_server (the executable's main and
 * the library API of slotlane_server.h share them). sv_cfg of the instance is set
 * before sv_instance_start. */
#ifndef SV_INSTANCE_H
#define SV_INSTANCE_H

#include "server.h"

enum { SV_START_EBIND = -2, SV_START_EDIR = -3 }; /* as SL_SERVER_EBIND, SL_SERVER_EDIR */

/* Params, shards, log replay, listeners (port 0: the kernel's), shard threads. 0, or
 * an SV_START_* code with the message in err and nothing left running. */
int sv_instance_start(sv_server *s, char *err, size_t cap);
/* Stops the shards, waits for their threads and frees them; a no-op when stopped. */
void sv_instance_stop(sv_server *s);
/* The settings and the state (sv_server_free_state); after sv_instance_stop. */
void sv_instance_free(sv_server *s);

#endif
