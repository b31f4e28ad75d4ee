/* slotlane_server.h compiles alone as C11 -pedantic (and, as header_test.cpp, as C++):
 * built by server/CMakeLists.txt; a failure is a build error. */
#include "slotlane_server.h"

int sv_header_test(void);
int sv_header_test(void)
{
    sl_server_options o = SL_SERVER_OPTIONS_INIT;
    return o.shards == 1 && o.version == SL_SERVER_OPTIONS_VERSION ? 0 : 1;
}
