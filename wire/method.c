/* method.c — HTTP method names to bits (method.h). */
#include <stddef.h>
#include <string.h>

#include "method.h"

static const struct {
	const char *name;
	unsigned bit;
} method_bits[] = {
	{ "GET", METHOD_GET },
	{ "HEAD", METHOD_HEAD },
	{ "PUT", METHOD_PUT },
	{ "POST", METHOD_POST },
	{ "DELETE", METHOD_DELETE },
	{ "PATCH", METHOD_PATCH },
	{ "OPTIONS", METHOD_OPTIONS },
};

unsigned method_from_name(const char *name)
{
	if (!name)
		return 0;
	for (size_t i = 0; i < sizeof(method_bits) / sizeof(method_bits[0]); i++)
		if (strcmp(name, method_bits[i].name) == 0)
			return method_bits[i].bit;
	return 0;
}

unsigned method_bit(const char *method)
{
	unsigned bit = method_from_name(method);

	return bit ? bit : METHOD_OTHER;
}

int method_is_read(const char *method)
{
	return !(method_bit(method) & METHOD_WRITES);
}
