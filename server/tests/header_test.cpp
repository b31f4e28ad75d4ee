// slotlane_server.h compiles as C++ (see header_test.c).
#include "slotlane_server.h"

int sv_header_test_cxx();
int sv_header_test_cxx()
{
    sl_server_options o = SL_SERVER_OPTIONS_INIT;
    return o.shards == 1 ? 0 : 1;
}
