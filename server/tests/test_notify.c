/* The command table's keyspace-notification declarations (notify.h): every WRITE
 * command says which events it fires — a fixed event (EV), a function choosing them
 * (EVF), "inside the command" (EVIN) or "none, as Redis 7.0" (EVNONE) — so a command
 * added without a thought for its events fails here. The events themselves are
 * compared with redis-server 7.0 by tests/integration/test_notify_commands.py. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "server.h"
#include "notify.h"

/* Redis 7.0's event names per class (its notifyKeyspaceEvent calls) that a table entry
 * may fire as its fixed event */
static const struct { int cls; const char *names; } redis_events[] = {
    {SV_N_GENERIC, " del expire persist rename_from rename_to copy_to move_from move_to "},
    {SV_N_STRING, " set setrange incrby incrbyfloat append setbit pfadd "},
    {SV_N_LIST, " lpush rpush lpop rpop linsert lset lrem ltrim sortstore "},
    {SV_N_SET, " sadd srem spop sinterstore sunionstore sdiffstore "},
    {SV_N_HASH, " hset hdel hincrby hincrbyfloat "},
    {SV_N_ZSET, " zadd zincr zrem zpopmin zpopmax zremrangebyrank zremrangebyscore zremrangebylex "
                "zunionstore zinterstore zdiffstore zrangestore geosearchstore georadiusstore "},
    {SV_N_STREAM, " xadd xtrim xdel xsetid xgroup-create xgroup-createconsumer xgroup-setid "
                  "xgroup-delconsumer xgroup-destroy "},
};

static int redis_fires(int cls, const char *event)
{
    char word[64];
    snprintf(word, sizeof(word), " %s ", event);
    for (size_t i = 0; i < sizeof(redis_events) / sizeof(redis_events[0]); i++)
        if (redis_events[i].cls == cls && strstr(redis_events[i].names, word)) return 1;
    return 0;
}

static void test_every_write_command_declares_its_events(void **state)
{
    (void)state;
    sv_cmdtable_init();
    char missing[4096] = "", wrong[4096] = "";
    size_t nwrite = 0;
    for (size_t i = 0; i < sv_cmd_count(); i++) {
        const sv_cmd *c = sv_cmd_at(i);
        if (!(c->flags & SV_CMD_WRITE)) {
            /* a read fires only "keymiss" (the keyspace does): no declaration */
            if (c->ev_class || c->event || c->ev_fire) snprintf(wrong + strlen(wrong), sizeof(wrong) - strlen(wrong), " %s(read)", c->name);
            continue;
        }
        nwrite++;
        int declared = c->ev_rule == SV_EV_NONE || c->ev_class;
        if (!declared) {
            snprintf(missing + strlen(missing), sizeof(missing) - strlen(missing), " %s", c->name);
            continue;
        }
        int fixed = c->ev_rule < SV_EV_INSIDE;
        /* a fixed event names one of Redis's events of its class, or a function;
         * "inside" and "none" name neither */
        int ok = fixed ? (c->ev_fire != NULL) != (c->event != NULL) && (!c->event || redis_fires(c->ev_class, c->event))
                       : !c->event && !c->ev_fire && (c->ev_rule == SV_EV_INSIDE) == (c->ev_class != 0);
        if (!ok) snprintf(wrong + strlen(wrong), sizeof(wrong) - strlen(wrong), " %s", c->name);
    }
    if (missing[0]) fprintf(stderr, "WRITE commands without an event declaration:%s\n", missing);
    if (wrong[0]) fprintf(stderr, "inconsistent event declarations:%s\n", wrong);
    assert_string_equal(missing, "");
    assert_string_equal(wrong, "");
    assert_true(nwrite > 100); /* the walk saw the table */
}

static void test_known_events_check_rejects_others(void **state)
{
    (void)state;
    assert_true(redis_fires(SV_N_ZSET, "zunionstore"));
    assert_false(redis_fires(SV_N_ZSET, "zunion"));
    assert_false(redis_fires(SV_N_LIST, "set"));
}

int main(void)
{
    sv_server_for_tests();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_write_command_declares_its_events),
        cmocka_unit_test(test_known_events_check_rejects_others),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
