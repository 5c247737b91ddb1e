/* awscreds.c — finds AWS credentials where the AWS CLI and SDKs look: the
 * AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN environment
 * variables, else a profile of the shared credentials file (INI). It does not
 * read ~/.aws/config, run credential_process, or talk to SSO, STS or the
 * instance metadata service. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "awscreds.h"

#define AWSCREDS_DEFAULT_FILE "~/.aws/credentials"

/* Value of an environment variable, NULL when unset or empty. */
static const char *env_nonempty(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

static char *trim(char *s)
{
	char *end;

	while (*s == ' ' || *s == '\t')
		s++;
	end = s + strlen(s);
	while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r' ||
			   end[-1] == '\n'))
		end--;
	*end = '\0';
	return s;
}

/* Replaces *slot with a copy of value. Returns 0 or -1 (ENOMEM). */
static int set_string(char **slot, const char *value)
{
	char *copy = strdup(value);

	if (!copy)
		return -1;
	if (*slot) {
		explicit_bzero(*slot, strlen(*slot));
		free(*slot);
	}
	*slot = copy;
	return 0;
}

static int load_from_env(const char *access_key, const char *secret_key,
			 struct aws_credentials *cred, char *err, size_t errlen)
{
	const char *token = env_nonempty("AWS_SESSION_TOKEN");

	if (set_string(&cred->access_key, access_key) ||
	    set_string(&cred->secret_key, secret_key) ||
	    (token && set_string(&cred->session_token, token))) {
		snprintf(err, errlen, "out of memory reading AWS credentials");
		return -1;
	}
	return 0;
}

/* Reads profile from the INI file at path (display_path in messages).
 * Returns 0, 1 when the file or the profile is missing, -1 on other errors
 * (err filled). */
static int load_from_file(const char *path, const char *display_path,
			  const char *profile, struct aws_credentials *cred,
			  char *err, size_t errlen)
{
	FILE *f = NULL;
	char *line = NULL;
	size_t linecap = 0;
	int in_profile = 0, found = 0, rc = -1;
	unsigned long lineno = 0;

	f = fopen(path, "r");
	if (!f) {
		if (errno == ENOENT || errno == ENOTDIR) {
			rc = 1;
			goto out;
		}
		snprintf(err, errlen, "cannot read %s: %s", display_path,
			 strerror(errno));
		goto out;
	}
	while (getline(&line, &linecap, f) >= 0) {
		char *s = trim(line);
		char *eq, *key, *value, *close;
		char **slot = NULL;

		lineno++;
		if (*s == '\0' || *s == '#' || *s == ';')
			continue;
		if (*s == '[') {
			close = strchr(s, ']');
			if (!close) {
				snprintf(err, errlen, "%s:%lu: section header "
					 "without ']'", display_path, lineno);
				goto out;
			}
			*close = '\0';
			in_profile = strcmp(trim(s + 1), profile) == 0;
			found |= in_profile;
			continue;
		}
		if (!in_profile)
			continue;
		eq = strchr(s, '=');
		if (!eq) {
			snprintf(err, errlen, "%s:%lu: expected 'key = value' in "
				 "profile \"%s\"", display_path, lineno, profile);
			goto out;
		}
		*eq = '\0';
		key = trim(s);
		value = trim(eq + 1);
		if (strcasecmp(key, "aws_access_key_id") == 0)
			slot = &cred->access_key;
		else if (strcasecmp(key, "aws_secret_access_key") == 0)
			slot = &cred->secret_key;
		else if (strcasecmp(key, "aws_session_token") == 0 ||
			 strcasecmp(key, "aws_security_token") == 0)
			slot = &cred->session_token;
		if (slot && *value && set_string(slot, value)) {
			snprintf(err, errlen, "out of memory reading %s", display_path);
			goto out;
		}
	}
	if (ferror(f)) {
		snprintf(err, errlen, "cannot read %s: %s", display_path,
			 strerror(errno));
		goto out;
	}
	if (!found) {
		rc = 1;
		goto out;
	}
	if (!cred->access_key || !cred->secret_key) {
		snprintf(err, errlen, "profile \"%s\" in %s has no %s", profile,
			 display_path, !cred->access_key ? "aws_access_key_id" :
			 "aws_secret_access_key");
		goto out;
	}
	rc = 0;
out:
	if (line) {
		explicit_bzero(line, linecap);
		free(line);
	}
	if (f)
		fclose(f);
	return rc;
}

/* The credentials file to read (malloc'd): AWS_SHARED_CREDENTIALS_FILE,
 * else $HOME/.aws/credentials; *display_path names it for messages. NULL
 * with err filled when HOME is unset or on ENOMEM. */
static char *credentials_path(const char **display_path, char *err,
			      size_t errlen)
{
	const char *env = env_nonempty("AWS_SHARED_CREDENTIALS_FILE");
	const char *home;
	char *path = NULL;

	if (env) {
		*display_path = env;
		path = strdup(env);
	} else {
		home = env_nonempty("HOME");
		if (!home) {
			snprintf(err, errlen, "no AWS credentials: set "
				 "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
				 "(HOME is not set, so %s cannot be read)",
				 AWSCREDS_DEFAULT_FILE);
			return NULL;
		}
		*display_path = AWSCREDS_DEFAULT_FILE;
		if (asprintf(&path, "%s/.aws/credentials", home) < 0)
			path = NULL;
	}
	if (!path)
		snprintf(err, errlen, "out of memory reading AWS credentials");
	return path;
}

int aws_credentials_load(const char *profile, struct aws_credentials *cred,
			 char *err, size_t errlen)
{
	const char *access_key, *secret_key, *display_path = NULL;
	char *path = NULL;
	int rc = -1;

	if (err && errlen)
		err[0] = '\0';
	if (!cred)
		return -1;
	memset(cred, 0, sizeof(*cred));

	access_key = env_nonempty("AWS_ACCESS_KEY_ID");
	secret_key = env_nonempty("AWS_SECRET_ACCESS_KEY");
	if (access_key && secret_key) {
		rc = load_from_env(access_key, secret_key, cred, err, errlen);
		goto out;
	}
	if (access_key || secret_key) {
		snprintf(err, errlen, "%s is not set (%s is)",
			 access_key ? "AWS_SECRET_ACCESS_KEY" : "AWS_ACCESS_KEY_ID",
			 access_key ? "AWS_ACCESS_KEY_ID" : "AWS_SECRET_ACCESS_KEY");
		goto out;
	}

	if (!profile || !*profile)
		profile = env_nonempty("AWS_PROFILE");
	if (!profile)
		profile = "default";
	path = credentials_path(&display_path, err, errlen);
	if (!path)
		goto out;
	rc = load_from_file(path, display_path, profile, cred, err, errlen);
	if (rc == 1) {
		snprintf(err, errlen, "no AWS credentials: set AWS_ACCESS_KEY_ID "
			 "and AWS_SECRET_ACCESS_KEY, or add profile \"%s\" to %s",
			 profile, display_path);
		rc = -1;
	}
out:
	free(path);
	if (rc)
		aws_credentials_clear(cred);
	return rc;
}

void aws_credentials_clear(struct aws_credentials *cred)
{
	char **fields[3];
	size_t i;

	if (!cred)
		return;
	fields[0] = &cred->access_key;
	fields[1] = &cred->secret_key;
	fields[2] = &cred->session_token;
	for (i = 0; i < 3; i++) {
		if (*fields[i]) {
			explicit_bzero(*fields[i], strlen(*fields[i]));
			free(*fields[i]);
		}
		*fields[i] = NULL;
	}
}
