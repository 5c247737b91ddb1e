/* fencing_delete.c — DeleteObjects (POST /{bucket}?delete) on a fenced
 * bucket. Its keys are in the body, where neither the lock-file guard nor
 * the object CAS of a forwarded request can see them. */
#include "fencing_int.h"

enum proxy_action fencing_delete_start(struct freq *fr)
{
	fr->verdict = "refused";
	return fencing_reply_error(fr, 501, "NotImplemented",
				   "multi-object delete is not fenced object by object yet; delete "
				   "keys one at a time (each DELETE is compare-and-swapped)",
				   false, 0);
}
