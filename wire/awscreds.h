/* awscreds.h — AWS credentials and settings from the standard places.
 *
 * Order: AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN in the
 * environment; else the profile (argument, else AWS_PROFILE, else "default")
 * in AWS_SHARED_CREDENTIALS_FILE or ~/.aws/credentials. */
#ifndef FENCE_AWSCREDS_H
#define FENCE_AWSCREDS_H

#include <stddef.h>

struct aws_credentials {
	char *access_key;
	char *secret_key;
	char *session_token; /* NULL when none */
};

/* Fills cred (all strings malloc'd, owned by the caller; free with
 * aws_credentials_clear). Returns 0, or -1 with a message in err that says
 * what to set (e.g. "AWS_SECRET_ACCESS_KEY is not set (AWS_ACCESS_KEY_ID is)"). */
int aws_credentials_load(const char *profile, struct aws_credentials *cred,
			 char *err, size_t errlen);

/* Frees and zeroes. Accepts NULL. */
void aws_credentials_clear(struct aws_credentials *cred);

#endif
