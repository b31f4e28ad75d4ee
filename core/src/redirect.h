/* redirect: MOVED / ASK / TRYAGAIN / CLUSTERDOWN replies (redirect.c). */
#ifndef SL_REDIRECT_H
#define SL_REDIRECT_H

#include "batch.h"

/* Looks at command ci's error reply r (in b's data): a redirect updates the slot table
 * (MOVED), flags the command for a resend in the next round (SL__F_RESEND, and
 * SL__F_ASKING for ASK) and counts it in the client's stats; past opts.max_redirects the
 * reply is kept and marked SL_ERR_REDIRECTS. Any other error is left alone. */
void sl__redirect_check(sl_batch *b, uint32_t ci, sl_reply *r);

#endif
