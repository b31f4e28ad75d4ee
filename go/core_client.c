// Compiles the vendored core's src/client.c into this package (cgo builds only the .c
// files of the package directory). The copy under internal/csrc is written by
// ci/vendor-core.sh; TestEveryCoreSourceIsCompiled checks there is one such file per source.
/* The library version: the VERSION file of the vendored copy (checked by TestVersion). */
#define SL_VERSION_STRING "0.1.0"
#include "internal/csrc/src/client.c"
