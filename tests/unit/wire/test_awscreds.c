/* test_awscreds.c — wire/awscreds.c: environment first, then a profile of
 * the shared credentials file, and the error messages that tell the user
 * what to set. HOME points at a private temporary directory so the real
 * ~/.aws is never read; every file the tests write lives there. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "wire/awscreds.h"

static char tmpdir[200];
static char aws_dir[220];
static char home_creds[240];  /* $HOME/.aws/credentials */
static char alt_creds[240];   /* for AWS_SHARED_CREDENTIALS_FILE */

static const char *const aws_vars[] = {
	"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
	"AWS_PROFILE", "AWS_SHARED_CREDENTIALS_FILE",
};

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

static int group_setup(void **state)
{
	const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";

	(void)state;
	if (strlen(base) > 150)
		base = "/tmp";
	snprintf(tmpdir, sizeof(tmpdir), "%.150s/test_awscreds.XXXXXX", base);
	if (!mkdtemp(tmpdir))
		return -1;
	snprintf(aws_dir, sizeof(aws_dir), "%s/.aws", tmpdir);
	snprintf(home_creds, sizeof(home_creds), "%s/credentials", aws_dir);
	snprintf(alt_creds, sizeof(alt_creds), "%s/alt-credentials", tmpdir);
	if (mkdir(aws_dir, 0700))
		return -1;
	return setenv("HOME", tmpdir, 1);
}

static int group_teardown(void **state)
{
	(void)state;
	unlink(home_creds);
	unlink(alt_creds);
	rmdir(aws_dir);
	return rmdir(tmpdir);
}

/* Each test starts with no AWS variables and no credentials files. */
static int test_setup(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(aws_vars) / sizeof(aws_vars[0]); i++)
		unsetenv(aws_vars[i]);
	unlink(home_creds);
	unlink(alt_creds);
	return 0;
}

static const char sample_file[] =
	"# shared credentials\n"
	"; another comment style\n"
	"\n"
	"[default]\n"
	"aws_access_key_id = AKIDDEFAULT\n"
	"aws_secret_access_key=secret/default+key\n"
	"\n"
	"  [ work ]  \n"
	"\taws_access_key_id\t=\tAKIDWORK   \r\n"
	"aws_secret_access_key = secretwork\n"
	"aws_session_token = token=with=equals\n"
	"region = eu-west-1\n"
	"\n"
	"[nosecret]\n"
	"aws_access_key_id = AKIDNOSECRET\n";

static void test_env_credentials(void **state)
{
	struct aws_credentials cred;
	char err[256];

	(void)state;
	setenv("AWS_ACCESS_KEY_ID", "AKIDENV", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "secretenv", 1);
	assert_int_equal(aws_credentials_load(NULL, &cred, err, sizeof(err)), 0);
	assert_string_equal(cred.access_key, "AKIDENV");
	assert_string_equal(cred.secret_key, "secretenv");
	assert_null(cred.session_token);
	aws_credentials_clear(&cred);
	assert_null(cred.access_key);

	setenv("AWS_SESSION_TOKEN", "tokenenv", 1);
	assert_int_equal(aws_credentials_load(NULL, &cred, err, sizeof(err)), 0);
	assert_string_equal(cred.session_token, "tokenenv");
	aws_credentials_clear(&cred);
}

static void test_env_beats_file(void **state)
{
	struct aws_credentials cred;
	char err[256];

	(void)state;
	write_file(home_creds, sample_file);
	setenv("AWS_ACCESS_KEY_ID", "AKIDENV", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "secretenv", 1);
	assert_int_equal(aws_credentials_load("work", &cred, err, sizeof(err)), 0);
	assert_string_equal(cred.access_key, "AKIDENV");
	assert_null(cred.session_token);
	aws_credentials_clear(&cred);
}

static void test_env_half_set(void **state)
{
	struct aws_credentials cred;
	char err[256];

	(void)state;
	write_file(home_creds, sample_file); /* must not be used as a fallback */
	setenv("AWS_ACCESS_KEY_ID", "AKIDENV", 1);
	assert_int_equal(aws_credentials_load(NULL, &cred, err, sizeof(err)), -1);
	assert_string_equal(err, "AWS_SECRET_ACCESS_KEY is not set (AWS_ACCESS_KEY_ID is)");
	assert_null(cred.access_key);

	unsetenv("AWS_ACCESS_KEY_ID");
	setenv("AWS_SECRET_ACCESS_KEY", "secretenv", 1);
	assert_int_equal(aws_credentials_load(NULL, &cred, err, sizeof(err)), -1);
	assert_string_equal(err, "AWS_ACCESS_KEY_ID is not set (AWS_SECRET_ACCESS_KEY is)");
}

static void test_empty_env_is_unset(void **state)
{
	struct aws_credentials cred;
	char err[256];

	(void)state;
	write_file(home_creds, sample_file);
	setenv("AWS_ACCESS_KEY_ID", "", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "", 1);
	setenv("AWS_PROFILE", "", 1);
	assert_int_equal(aws_credentials_load(NULL, &cred, err, sizeof(err)), 0);
	assert_string_equal(cred.access_key, "AKIDDEFAULT");
	aws_credentials_clear(&cred);
}

static void test_home_file_profiles(void **state)
{
	struct aws_credentials cred;
	char err[256];

	(void)state;
	write_file(home_creds, sample_file);

	assert_int_equal(aws_credentials_load(NULL, &cred, err, sizeof(err)), 0);
	assert_string_equal(cred.access_key, "AKIDDEFAULT");
	assert_string_equal(cred.secret_key, "secret/default+key");
	assert_null(cred.session_token);
	aws_credentials_clear(&cred);

	/* whitespace around names, keys and values; '=' inside a value */
	assert_int_equal(aws_credentials_load("work", &cred, err, sizeof(err)), 0);
	assert_string_equal(cred.access_key, "AKIDWORK");
	assert_string_equal(cred.secret_key, "secretwork");
	assert_string_equal(cred.session_token, "token=with=equals");
	aws_credentials_clear(&cred);

	/* AWS_PROFILE when no argument; the argument wins over it */
	setenv("AWS_PROFILE", "work", 1);
	assert_int_equal(aws_credentials_load(NULL, &cred, err, sizeof(err)), 0);
	assert_string_equal(cred.access_key, "AKIDWORK");
	aws_credentials_clear(&cred);
	assert_int_equal(aws_credentials_load("default", &cred, err, sizeof(err)), 0);
	assert_string_equal(cred.access_key, "AKIDDEFAULT");
	aws_credentials_clear(&cred);
}

static void test_shared_credentials_file_env(void **state)
{
	struct aws_credentials cred;
	char err[512], want[512];

	(void)state;
	write_file(home_creds, sample_file);
	write_file(alt_creds, "[default]\naws_access_key_id=AKIDALT\n"
		   "aws_secret_access_key=secretalt\n");
	setenv("AWS_SHARED_CREDENTIALS_FILE", alt_creds, 1);
	assert_int_equal(aws_credentials_load(NULL, &cred, err, sizeof(err)), 0);
	assert_string_equal(cred.access_key, "AKIDALT");
	aws_credentials_clear(&cred);

	/* the profile only exists in ~/.aws/credentials: not looked at */
	assert_int_equal(aws_credentials_load("work", &cred, err, sizeof(err)), -1);
	snprintf(want, sizeof(want), "no AWS credentials: set AWS_ACCESS_KEY_ID and "
		 "AWS_SECRET_ACCESS_KEY, or add profile \"work\" to %s", alt_creds);
	assert_string_equal(err, want);
}

static void test_no_credentials_message(void **state)
{
	struct aws_credentials cred;
	char err[256];

	(void)state;
	/* no file at all */
	assert_int_equal(aws_credentials_load("x", &cred, err, sizeof(err)), -1);
	assert_string_equal(err, "no AWS credentials: set AWS_ACCESS_KEY_ID and "
			    "AWS_SECRET_ACCESS_KEY, or add profile \"x\" to "
			    "~/.aws/credentials");
	/* no HOME and no AWS_SHARED_CREDENTIALS_FILE */
	unsetenv("HOME");
	assert_int_equal(aws_credentials_load("x", &cred, err, sizeof(err)), -1);
	setenv("HOME", tmpdir, 1);
	assert_string_equal(err, "no AWS credentials: set AWS_ACCESS_KEY_ID and "
			    "AWS_SECRET_ACCESS_KEY (HOME is not set, so "
			    "~/.aws/credentials cannot be read)");
	/* a file without that profile */
	write_file(home_creds, sample_file);
	setenv("AWS_PROFILE", "missing", 1);
	assert_int_equal(aws_credentials_load(NULL, &cred, err, sizeof(err)), -1);
	assert_string_equal(err, "no AWS credentials: set AWS_ACCESS_KEY_ID and "
			    "AWS_SECRET_ACCESS_KEY, or add profile \"missing\" to "
			    "~/.aws/credentials");
	assert_null(cred.access_key);
}

static void test_incomplete_and_malformed(void **state)
{
	struct aws_credentials cred;
	char err[256];

	(void)state;
	write_file(home_creds, sample_file);
	assert_int_equal(aws_credentials_load("nosecret", &cred, err, sizeof(err)), -1);
	assert_string_equal(err, "profile \"nosecret\" in ~/.aws/credentials has no "
			    "aws_secret_access_key");
	assert_null(cred.access_key);

	write_file(home_creds, "[default\naws_access_key_id=A\n");
	assert_int_equal(aws_credentials_load(NULL, &cred, err, sizeof(err)), -1);
	assert_string_equal(err, "~/.aws/credentials:1: section header without ']'");

	write_file(home_creds, "[default]\naws_access_key_id=A\njunk line\n");
	assert_int_equal(aws_credentials_load(NULL, &cred, err, sizeof(err)), -1);
	assert_string_equal(err, "~/.aws/credentials:3: expected 'key = value' in "
			    "profile \"default\"");
	assert_null(cred.access_key);
}

static void test_clear_accepts_null(void **state)
{
	struct aws_credentials cred = { 0 };

	(void)state;
	aws_credentials_clear(NULL);
	aws_credentials_clear(&cred);
	assert_null(cred.access_key);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_env_credentials, test_setup),
		cmocka_unit_test_setup(test_env_beats_file, test_setup),
		cmocka_unit_test_setup(test_env_half_set, test_setup),
		cmocka_unit_test_setup(test_empty_env_is_unset, test_setup),
		cmocka_unit_test_setup(test_home_file_profiles, test_setup),
		cmocka_unit_test_setup(test_shared_credentials_file_env, test_setup),
		cmocka_unit_test_setup(test_no_credentials_message, test_setup),
		cmocka_unit_test_setup(test_incomplete_and_malformed, test_setup),
		cmocka_unit_test_setup(test_clear_accepts_null, test_setup),
	};

	return cmocka_run_group_tests_name("awscreds", tests, group_setup,
					   group_teardown);
}
