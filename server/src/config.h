/* config: the settings, from flags and from a TOML file (--config FILE); keys in the
 * file are the flag names with '_' for '-'. Flags override the file. A bad value is
 * a one-line error and exit code 2. */
#ifndef SV_CONFIG_H
#define SV_CONFIG_H

#include "server.h"

#define SV_MAXCLIENTS_DEFAULT 10000
/* File descriptors besides the clients': stdio, per shard a listener, the loop's
 * epoll and eventfds, the forwarding async handles; with room to spare. */
#define SV_FD_RESERVED(shards) (32 + 8 * (shards))

/* Fills sv_cfg from argv (and the file it names). Exits 0 after --help/--version,
 * 2 on a bad flag or value. */
void sv_config_load(int argc, char **argv);
void sv_config_free(void);
/* The executable's defaults into sv_cfg (sv_config_load starts with them). */
void sv_config_defaults(void);
/* After the settings: checks what depends on several of them and derives the rest
 * (announce address, one-port forwarding); NULL or the error. */
const char *sv_config_finish(void);
/* Applies one setting (name with '-' or '_'); returns NULL or an error message. */
const char *sv_config_set(const char *name, const char *value, char *err, size_t errcap);
/* Raises the soft open-files limit towards what `want` clients per shard need (up to
 * the hard limit); returns how many clients per shard the limit then allows (at
 * least 1; `want` or more when it is enough). */
int sv_fd_limit_clients(int want);

#endif
