/* testdata.h — the unit tests' JSON test data (AWS's published examples
 * under tests/testdata): one file of a directory named by an environment
 * variable, or by the default when it is unset, read whole and parsed.
 * Missing or malformed data is a failure, said on stderr. Test code only. */
#ifndef FENCE_TEST_TESTDATA_H
#define FENCE_TEST_TESTDATA_H

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include <cjson/cJSON.h>

/* Parses dir/file, dir from getenv(env_var) or dflt. Returns the document
 * (the caller's, cJSON_Delete) or NULL; who names the test in messages. */
static inline cJSON *testdata_json(const char *env_var, const char *dflt, const char *file,
				   const char *who)
{
	const char *env = getenv(env_var);
	char path[PATH_MAX];
	cJSON *doc = NULL;
	char *text = NULL;
	long len;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", env && *env ? env : dflt, file);
	f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "%s: cannot open %s (run from the repo root or set %s)\n", who,
			path, env_var);
		return NULL;
	}
	if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0 &&
	    (text = malloc((size_t)len + 1)) && fread(text, 1, (size_t)len, f) == (size_t)len) {
		text[len] = '\0';
		doc = cJSON_Parse(text);
	}
	fclose(f);
	free(text);
	return doc;
}

#endif
