/* config: see config.h. */
#include "config.h"
#include "params.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <strings.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>


void sv_log(int level, const char *fmt, ...)
{
    if (level < sv_cfg.loglevel) return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (sv_cur->log_fn) {
        sv_cur->log_fn(sv_cur->log_ud, level, msg);
        return;
    }
    char ts[32];
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm);
    fprintf(stderr, "%d %s %c %s\n", (int)getpid(), ts, "-.*#"[level], msg);
}

static const char *usage =
    "Usage: slotlane-server [options]\n"
    "\n"
    "A sharded RESP (Redis protocol) server: N shards, one thread and one event loop each,\n"
    "each owning a contiguous range of the 16384 cluster slots.\n"
    "\n"
    "Options (a TOML file given with --config takes the same settings, with '_' for '-'):\n"
    "  --config FILE           read settings from a TOML file (flags override it)\n"
    "  --shards N              number of shards (default 1, at most 256)\n"
    "  --cpus LIST             pin shard i to the i-th listed CPU, e.g. 1,2-3; more shards\n"
    "                          than CPUs share them round-robin (default: no pinning)\n"
    "  --bind ADDR             address to listen on (default 127.0.0.1)\n"
    "  --announce ADDR         address told to clients in CLUSTER replies and MOVED\n"
    "                          (default: the bind address, or 127.0.0.1 for 0.0.0.0)\n"
    "  --port P                base port; shard i listens on P+i (default 7000)\n"
    "  --port-mode MODE        per-shard (default) or one-port (every shard accepts on\n"
    "                          --port with SO_REUSEPORT and forwards keys of other shards)\n"
    "  --misrouted MODE        per-shard mode, a key of another shard: moved (default,\n"
    "                          -MOVED like Redis Cluster) or forward (run on its owner)\n"
    "  --durability MODE       memory (default: nothing written), everysec (append-only log\n"
    "                          per shard, fsync in the background once a second) or always\n"
    "                          (fsync before any reply of a loop turn leaves)\n"
    "  --dir DIR               directory of the logs and the manifest (default .)\n"
    "  --aof-rewrite-percentage P  rewrite a shard's log when it has grown by P percent\n"
    "                          over its size after the last rewrite or load (default 100;\n"
    "                          0 disables automatic rewrites)\n"
    "  --aof-rewrite-min-size BYTES  no automatic rewrite below this size (default 64mb;\n"
    "                          kb, mb, gb suffixes)\n"
    "  --maxclients N          connections per shard (default 10000)\n"
    "  --loglevel LEVEL        debug, verbose, notice (default) or warning\n"
    "  --output-limit BYTES    unsent reply bytes after which a client that does not read\n"
    "                          is disconnected (default 1073741824)\n"
    "  --forward-queue N       forwarding: requests in flight from one shard to another\n"
    "                          (1..1048576, default 65536); at the limit the sending shard\n"
    "                          stops reading the clients whose next command needs that\n"
    "                          shard until replies come back (INFO forward_queue_full)\n"
    "  --enable-debug-command no|yes|local  allow DEBUG (local: from loopback clients only;\n"
    "                          default no, as Redis 7.0)\n"
    "  --<redis-parameter> V   any CONFIG parameter of Redis 7.0 (e.g. --hash-max-listpack-entries 64;\n"
    "                          in the file with '_' for '-'); see server/README.md, CONFIG\n"
    "  --help                  this text\n"
    "  --version               print the version\n";

void sv_config_defaults(void)
{
    memset(&sv_cfg, 0, sizeof(sv_cfg));
    sv_cfg.shards = 1;
    snprintf(sv_cfg.bind, sizeof(sv_cfg.bind), "127.0.0.1");
    sv_cfg.port = 7000;
    snprintf(sv_cfg.dir, sizeof(sv_cfg.dir), ".");
    sv_cfg.maxclients = SV_MAXCLIENTS_DEFAULT;
    sv_cfg.loglevel = SV_LOG_NOTICE;
    sv_cfg.output_limit = 1024LL * 1024 * 1024;
    sv_cfg.forward_queue = 65536;
    sv_cfg.busy_reply_ms = 5000; /* Redis's busy-reply-threshold */
    sv_cfg.aof_rewrite_pct = 100;
    sv_cfg.aof_rewrite_min = 64LL * 1024 * 1024;
}

/* A byte count with an optional kb/mb/gb suffix (powers of 1024, as Redis's memtoll). */
static int parse_bytes(const char *v, long long *out)
{
    char *end;
    errno = 0;
    long long n = strtoll(v, &end, 10);
    if (end == v || errno || n < 0) return 0;
    long long mul = 1;
    if (!strcasecmp(end, "kb") || !strcasecmp(end, "k")) mul = 1024;
    else if (!strcasecmp(end, "mb") || !strcasecmp(end, "m")) mul = 1024 * 1024;
    else if (!strcasecmp(end, "gb") || !strcasecmp(end, "g")) mul = 1024LL * 1024 * 1024;
    else if (*end) return 0;
    if (n > (1LL << 50) / mul) return 0;
    *out = n * mul;
    return 1;
}

static int parse_int(const char *s, long long min, long long max, long long *out)
{
    char *end;
    if (!*s || isspace((unsigned char)*s)) return 0;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (*end || errno || v < min || v > max) return 0;
    *out = v;
    return 1;
}

static int parse_cpus(const char *s, char *err, size_t cap)
{
    int *cpus = NULL;
    int n = 0;
    const char *p = s;
    while (*p) {
        char *end;
        errno = 0;
        long a = strtol(p, &end, 10);
        if (end == p || a < 0 || a > 4095) goto bad;
        long b = a;
        p = end;
        if (*p == '-') {
            p++;
            b = strtol(p, &end, 10);
            if (end == p || b < a || b > 4095) goto bad;
            p = end;
        }
        for (long i = a; i <= b; i++) {
            cpus = sv_realloc(cpus, sizeof(int) * (size_t)(n + 1));
            cpus[n++] = (int)i;
        }
        if (*p == ',') {
            p++;
            if (!*p) goto bad;
        } else if (*p) {
            goto bad;
        }
    }
    if (n == 0) goto bad;
    free(sv_cfg.cpus);
    sv_cfg.cpus = cpus;
    sv_cfg.ncpus = n;
    return 1;
bad:
    free(cpus);
    snprintf(err, cap, "invalid --cpus value '%s' (expected a list like 1,2-3)", s);
    return 0;
}

static int valid_addr(const char *s)
{
    unsigned char buf[16];
    return inet_pton(AF_INET, s, buf) == 1 || inet_pton(AF_INET6, s, buf) == 1;
}

const char *sv_config_set(const char *rawname, const char *v, char *err, size_t cap)
{
    char name[64];
    size_t i;
    for (i = 0; rawname[i] && i < sizeof(name) - 1; i++) name[i] = rawname[i] == '_' ? '-' : rawname[i];
    name[i] = 0;
    long long n;
    if (!strcmp(name, "shards")) {
        if (!parse_int(v, 1, SV_MAX_SHARDS, &n)) goto badint;
        sv_cfg.shards = (int)n;
    } else if (!strcmp(name, "cpus")) {
        if (!parse_cpus(v, err, cap)) return err;
    } else if (!strcmp(name, "bind")) {
        if (!valid_addr(v) || strlen(v) >= sizeof(sv_cfg.bind)) goto badaddr;
        snprintf(sv_cfg.bind, sizeof(sv_cfg.bind), "%s", v);
    } else if (!strcmp(name, "announce")) {
        if (!valid_addr(v) || strlen(v) >= sizeof(sv_cfg.announce)) goto badaddr;
        snprintf(sv_cfg.announce, sizeof(sv_cfg.announce), "%s", v);
    } else if (!strcmp(name, "port")) {
        if (!parse_int(v, 1, 65535, &n)) goto badint;
        sv_cfg.port = (int)n;
    } else if (!strcmp(name, "port-mode")) {
        if (!strcmp(v, "per-shard")) sv_cfg.port_mode = 0;
        else if (!strcmp(v, "one-port")) sv_cfg.port_mode = 1;
        else goto badenum;
    } else if (!strcmp(name, "misrouted")) {
        if (!strcmp(v, "moved")) sv_cfg.misrouted = 0;
        else if (!strcmp(v, "forward")) sv_cfg.misrouted = 1;
        else goto badenum;
    } else if (!strcmp(name, "durability")) {
        if (!strcmp(v, "memory")) sv_cfg.durability = 0;
        else if (!strcmp(v, "everysec")) sv_cfg.durability = 1;
        else if (!strcmp(v, "always")) sv_cfg.durability = 2;
        else goto badenum;
    } else if (!strcmp(name, "dir")) {
        if (!*v || strlen(v) >= sizeof(sv_cfg.dir)) {
            snprintf(err, cap, "invalid --dir value '%s'", v);
            return err;
        }
        snprintf(sv_cfg.dir, sizeof(sv_cfg.dir), "%s", v);
    } else if (!strcmp(name, "aof-rewrite-percentage")) {
        if (!parse_int(v, 0, 1000000, &n)) goto badint;
        sv_cfg.aof_rewrite_pct = (int)n;
    } else if (!strcmp(name, "aof-rewrite-min-size")) {
        long long b;
        if (!parse_bytes(v, &b)) {
            snprintf(err, cap, "invalid --%s value '%s' (expected bytes, optionally with kb, mb or gb)", name, v);
            return err;
        }
        sv_cfg.aof_rewrite_min = b;
    } else if (!strcmp(name, "maxclients")) {
        if (!parse_int(v, 1, 1000000, &n)) goto badint;
        sv_cfg.maxclients = (int)n;
    } else if (!strcmp(name, "loglevel")) {
        static const char *levels[] = {"debug", "verbose", "notice", "warning"};
        int found = -1;
        for (int k = 0; k < 4; k++)
            if (!strcmp(v, levels[k])) found = k;
        if (found < 0) goto badenum;
        sv_cfg.loglevel = found;
    } else if (!strcmp(name, "output-limit")) {
        if (!parse_int(v, 1024, 1LL << 40, &n)) goto badint;
        sv_cfg.output_limit = n;
    } else if (!strcmp(name, "forward-queue")) {
        if (!parse_int(v, 1, 1 << 20, &n)) goto badint;
        sv_cfg.forward_queue = (int)n;
    } else if (!strcmp(name, "enable-debug-command")) {
        if (!strcmp(v, "no")) sv_cfg.enable_debug = 0;
        else if (!strcmp(v, "yes")) sv_cfg.enable_debug = 1;
        else if (!strcmp(v, "local")) sv_cfg.enable_debug = 2;
        else goto badenum;
    } else {
        /* one of Redis's CONFIG parameters (params.c): stored, applied where it means something */
        int r = sv_params_set_startup(rawname, v, err, cap);
        if (r < 0) return err;
        if (r == 0) {
            snprintf(err, cap, "unknown setting '%s'", rawname);
            return err;
        }
    }
    return NULL;
badint:
    snprintf(err, cap, "invalid --%s value '%s' (expected an integer in range)", name, v);
    return err;
badaddr:
    snprintf(err, cap, "invalid --%s value '%s' (expected an IPv4 or IPv6 address)", name, v);
    return err;
badenum:
    snprintf(err, cap, "invalid --%s value '%s'", name, v);
    return err;
}

int sv_fd_limit_clients(int want)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return want;
    rlim_t reserved = SV_FD_RESERVED(sv_cfg.shards);
    rlim_t need = (rlim_t)want * (rlim_t)sv_cfg.shards + reserved;
    if (rl.rlim_cur < need) {
        rlim_t target = rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= need ? need : rl.rlim_max;
        struct rlimit nl = {target, rl.rlim_max};
        if (target > rl.rlim_cur && setrlimit(RLIMIT_NOFILE, &nl) == 0) rl.rlim_cur = target;
    }
    if (rl.rlim_cur >= need) return want;
    long long room = rl.rlim_cur > reserved ? (long long)(rl.rlim_cur - reserved) / sv_cfg.shards : 0;
    return room > 0 ? (int)room : 1;
}

static void die(const char *msg)
{
    fprintf(stderr, "slotlane-server: %s\n", msg);
    sv_config_free();
    exit(2);
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s)) s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1])) *--e = 0;
    return s;
}

/* A TOML subset: key = "string" | 'string' | integer | [list of those] | bare word,
 * comments, blank lines and [table] headers (ignored). Lists join with commas. */
static void load_file(const char *path)
{
    char err[512];
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, sizeof(err), "cannot open config file '%s': %s", path, strerror(errno));
        die(err);
    }
    char line[4096];
    int lineno = 0;
    while (fgets(line, sizeof(line), f)) {
        lineno++;
        /* strip comments outside quotes */
        int inq = 0;
        for (char *p = line; *p; p++) {
            if (*p == '"' || *p == '\'') inq = !inq;
            else if (*p == '#' && !inq) {
                *p = 0;
                break;
            }
        }
        char *s = trim(line);
        if (!*s || *s == '[') continue;
        char *eq = strchr(s, '=');
        if (!eq) {
            fclose(f);
            snprintf(err, sizeof(err), "%s:%d: expected key = value", path, lineno);
            die(err);
        }
        *eq = 0;
        char *key = trim(s), *val = trim(eq + 1);
        char value[4096];
        size_t vn = 0;
        if (*val == '[') {
            char *end = strrchr(val, ']');
            if (!end) {
                fclose(f);
                snprintf(err, sizeof(err), "%s:%d: unterminated list", path, lineno);
                die(err);
            }
            *end = 0;
            for (char *tok = strtok(val + 1, ","); tok; tok = strtok(NULL, ",")) {
                char *t = trim(tok);
                size_t tl = strlen(t);
                if (tl >= 2 && (t[0] == '"' || t[0] == '\'')) {
                    t++;
                    tl -= 2;
                }
                if (vn && vn < sizeof(value) - 1) value[vn++] = ',';
                for (size_t k = 0; k < tl && vn < sizeof(value) - 1; k++) value[vn++] = t[k];
            }
            value[vn] = 0;
        } else if (*val == '"' || *val == '\'') {
            char q = *val;
            char *end = strchr(val + 1, q);
            if (!end) {
                fclose(f);
                snprintf(err, sizeof(err), "%s:%d: unterminated string", path, lineno);
                die(err);
            }
            *end = 0;
            snprintf(value, sizeof(value), "%s", val + 1);
        } else {
            snprintf(value, sizeof(value), "%s", val);
        }
        if (sv_config_set(key, value, err, sizeof(err))) {
            char full[700];
            fclose(f);
            snprintf(full, sizeof(full), "%s:%d: %s", path, lineno, err);
            die(full);
        }
    }
    fclose(f);
}

/* CONFIG REWRITE writes to the file the server was started with. */
static void set_config_file(const char *path)
{
    free(sv_cfg.config_file);
    sv_cfg.config_file = sv_memdup(path, strlen(path));
}

void sv_config_load(int argc, char **argv)
{
    char err[512];
    sv_config_defaults();
    /* the file first, so that flags override it wherever they appear */
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--config")) {
            if (i + 1 >= argc) die("--config needs a FILE");
            load_file(argv[++i]);
            set_config_file(argv[i]);
        } else if (!strncmp(argv[i], "--config=", 9)) {
            load_file(argv[i] + 9);
            set_config_file(argv[i] + 9);
        }
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage, stdout);
            sv_config_free();
            exit(0);
        }
        if (!strcmp(a, "--version") || !strcmp(a, "-v")) {
            printf("slotlane-server (Redis protocol %s)\n", SV_VERSION);
            sv_config_free();
            exit(0);
        }
        if (strncmp(a, "--", 2) != 0) {
            snprintf(err, sizeof(err), "unexpected argument '%s' (see --help)", a);
            die(err);
        }
        char name[64];
        const char *value;
        const char *eq = strchr(a, '=');
        if (eq) {
            snprintf(name, sizeof(name), "%.*s", (int)(eq - a - 2), a + 2);
            value = eq + 1;
        } else {
            snprintf(name, sizeof(name), "%s", a + 2);
            if (i + 1 >= argc) {
                snprintf(err, sizeof(err), "--%s needs a value (see --help)", name);
                die(err);
            }
            value = argv[++i];
        }
        if (!strcmp(name, "config")) continue;
        if (strchr(name, '_')) {
            snprintf(err, sizeof(err), "unknown option '--%s' (see --help)", name);
            die(err);
        }
        if (sv_config_set(name, value, err, sizeof(err))) {
            if (!strncmp(err, "unknown setting", 15)) snprintf(err, sizeof(err), "unknown option '--%s' (see --help)", name);
            die(err);
        }
    }
    const char *bad = sv_config_finish();
    if (bad) die(bad);
}

const char *sv_config_finish(void)
{
    if (sv_cfg.port_mode == 0 && (long long)sv_cfg.port + sv_cfg.shards - 1 > 65535) return "--port plus --shards exceeds port 65535";
    if (!sv_cfg.announce[0]) {
        if (!strcmp(sv_cfg.bind, "0.0.0.0")) snprintf(sv_cfg.announce, sizeof(sv_cfg.announce), "127.0.0.1");
        else if (!strcmp(sv_cfg.bind, "::")) snprintf(sv_cfg.announce, sizeof(sv_cfg.announce), "::1");
        else snprintf(sv_cfg.announce, sizeof(sv_cfg.announce), "%s", sv_cfg.bind);
    }
    if (sv_cfg.port_mode == 1) sv_cfg.misrouted = 1; /* one port: keys of other shards are always forwarded */
    return NULL;
}

void sv_config_free(void)
{
    free(sv_cfg.cpus);
    sv_cfg.cpus = NULL;
    free(sv_cfg.config_file);
    sv_cfg.config_file = NULL;
    sv_params_free();
    sv_cfg.ncpus = 0;
}
