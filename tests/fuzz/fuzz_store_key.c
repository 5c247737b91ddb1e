/* fuzz_store_key.c — libFuzzer target for store_key_valid() (lock/store/store.c),
 * the gate between object keys and paths under the local store's directory.
 *
 * Input: the key bytes, not NUL-terminated. Checks the verdict against an
 * independent segment-by-segment reading of the rule, and that an accepted
 * key, joined lexically below a directory, can never climb out of it. Aborts
 * on any violation; it does not touch the file system. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lock/store/store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The rule as store.h states it, written the other way round: split on '/'
 * and judge each segment. */
static int reference_valid(const uint8_t *key, size_t len)
{
	size_t start = 0, i;

	if (len == 0 || len > 1024 || key[0] == '/')
		return 0;
	for (i = 0; i < len; i++)
		if (key[i] < 0x20 || key[i] == 0x7f)
			return 0;
	while (start <= len) {
		const uint8_t *slash = memchr(key + start, '/', len - start);
		size_t end = slash ? (size_t)(slash - key) : len;
		size_t seg = end - start;

		if (seg == 0 && slash)
			return 0; /* "//" (a leading '/' was refused above) */
		if (seg == 1 && key[start] == '.')
			return 0;
		if (seg == 2 && key[start] == '.' && key[start + 1] == '.')
			return 0;
		if (!slash)
			break;
		start = end + 1;
	}
	return 1;
}

/* Depth of the lexical join of key below a directory, never below 0 for an
 * accepted key: there is no ".." to pop and no "." or "" to hide one. */
static void check_stays_inside(const uint8_t *key, size_t len)
{
	size_t start = 0, i;
	long depth = 0;

	for (i = 0; i <= len; i++) {
		if (i < len && key[i] != '/')
			continue;
		if (i - start == 2 && key[start] == '.' && key[start + 1] == '.')
			depth--;
		else if (i > start && !(i - start == 1 && key[start] == '.'))
			depth++;
		if (depth < 1)
			abort(); /* the path would name the directory itself or above */
		start = i + 1;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *copy;
	int valid = store_key_valid((const char *)data, size);

	if (valid != 0 && valid != 1)
		abort();
	if (valid != reference_valid(data, size))
		abort();
	if (!valid)
		return 0;
	check_stays_inside(data, size);
	/* A valid key has no NUL inside, so as a C string it is the same key. */
	copy = malloc(size + 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	copy[size] = '\0';
	if (strlen(copy) != size || !store_key_valid(copy, strlen(copy)))
		abort();
	free(copy);
	return 0;
}
