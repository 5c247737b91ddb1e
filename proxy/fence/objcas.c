/* objcas.c — the steps of S3 mode's object compare-and-swap (objcas.h):
 * which condition an allowed write goes upstream with, what a HEAD's
 * answer leads to, and what a failed condition means (the unread create
 * of a cache miss: objcas.h). Pure: the caller
 * does every read, write and cache update. */
#include "objcas.h"

#include <string.h>

const char *objcas_straction(enum objcas_action a)
{
	switch (a) {
	case OBJCAS_IF_MATCH: return "if_match";
	case OBJCAS_IF_ABSENT: return "if_absent";
	case OBJCAS_HEAD: return "head";
	case OBJCAS_GONE: return "gone";
	case OBJCAS_STALE: return "stale";
	case OBJCAS_NO_SUCH_KEY: return "no_such_key";
	case OBJCAS_PRECONDITION: return "precondition";
	case OBJCAS_GIVE_UP: return "give_up";
	case OBJCAS_HEAD_FAILED: return "head_failed";
	}
	return "unknown";
}

static void step(struct objcas_step *out, enum objcas_action a, const char *etag, bool ours)
{
	out->action = a;
	out->etag = etag;
	out->ours = ours;
	out->unread = false;
}

static bool has_client_if_match(const struct objcas_in *in)
{
	return in->client_if_match && in->client_if_match[0];
}

void objcas_first(const struct objcas_in *in, struct objcas_step *out)
{
	if (in->client_inm) {
		step(out, OBJCAS_IF_ABSENT, NULL, false); /* create only: S3 checks it */
		return;
	}
	if (has_client_if_match(in)) {
		if (in->cached && strcmp(in->cached->etag, in->client_if_match) == 0)
			step(out, OBJCAS_IF_MATCH, in->client_if_match, false);
		else
			step(out, OBJCAS_HEAD, NULL, false);
		return;
	}
	if (in->cached) {
		step(out, OBJCAS_IF_MATCH, in->cached->etag, true);
	} else if (in->plain_put && !in->is_delete && in->can_resend) {
		step(out, OBJCAS_IF_ABSENT, NULL, true); /* the unread create */
		out->unread = true;
	} else {
		step(out, OBJCAS_HEAD, NULL, false);
	}
}

void objcas_after_head(const struct objcas_in *in, struct objcas_step *out)
{
	if (in->head_found < 0) {
		step(out, OBJCAS_HEAD_FAILED, NULL, false);
		return;
	}
	if (in->head_found && in->head_epoch > in->epoch) {
		step(out, OBJCAS_STALE, NULL, false);
		return;
	}
	if (in->after_race) {
		if (!in->head_found && in->is_delete) {
			step(out, OBJCAS_GONE, NULL, false);
			return;
		}
		if (in->resends >= in->max_resends || !in->can_resend) {
			step(out, OBJCAS_GIVE_UP, NULL, false);
			return;
		}
	}
	if (has_client_if_match(in)) {
		if (!in->head_found)
			step(out, OBJCAS_NO_SUCH_KEY, NULL, false);
		else if (strcmp(in->head_etag, in->client_if_match) != 0)
			step(out, OBJCAS_PRECONDITION, NULL, false);
		else
			step(out, OBJCAS_IF_MATCH, in->client_if_match, false);
		return;
	}
	if (!in->head_found)
		step(out, in->is_delete ? OBJCAS_GONE : OBJCAS_IF_ABSENT, NULL, !in->is_delete);
	else
		step(out, OBJCAS_IF_MATCH, in->head_etag, true);
}

enum objcas_answer objcas_on_answer(int status, bool ours, bool cond_if_match, bool unread,
				    bool is_delete)
{
	if (ours && unread && !cond_if_match && (status == 412 || status == 409))
		return OBJCAS_EXISTS; /* it was never read: the key exists, no race */
	if (status == 404 && is_delete && ours)
		return OBJCAS_DELETED; /* vanished under our If-Match: deleted is deleted */
	if (!ours || !(status == 412 || status == 409 || (status == 404 && cond_if_match)))
		return OBJCAS_RELAY; /* the client's own condition, or no race */
	return OBJCAS_RACE;
}
