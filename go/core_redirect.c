// Compiles the vendored core's src/redirect.c into this package (cgo builds only the .c
// files of the package directory). The copy under internal/csrc is written by
// ci/vendor-core.sh; TestEveryCoreSourceIsCompiled checks there is one such file per source.
#include "internal/csrc/src/redirect.c"
