/* bucketname.c — S3's bucket naming rules (bucketname.h): byte checks only,
 * no locale (isalpha would take other letters in some locales). */
#include "bucketname.h"

#include <string.h>

static bool name_byte(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-';
}

static bool has_prefix(const char *b, size_t n, const char *p)
{
	size_t pn = strlen(p);

	return n >= pn && memcmp(b, p, pn) == 0;
}

static bool has_suffix(const char *b, size_t n, const char *s)
{
	size_t sn = strlen(s);

	return n >= sn && memcmp(b + n - sn, s, sn) == 0;
}

bool s3_bucket_name_plain(const char *b, size_t n)
{
	if (!b || n < 3 || n > S3_BUCKET_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!name_byte(b[i]))
			return false;
	return true;
}

bool s3_bucket_name_valid(const char *b, size_t n)
{
	size_t dots = 0;
	bool digits_and_dots = true;

	if (!s3_bucket_name_plain(b, n))
		return false;
	for (size_t i = 0; i < n; i++) {
		if (b[i] == '.') {
			dots++;
			if (i + 1 < n && b[i + 1] == '.')
				return false;
		} else if (!(b[i] >= '0' && b[i] <= '9')) {
			digits_and_dots = false;
		}
	}
	if (b[0] == '.' || b[0] == '-' || b[n - 1] == '.' || b[n - 1] == '-')
		return false;
	if (digits_and_dots && dots == 3)
		return false; /* 192.168.5.4 */
	return !has_prefix(b, n, "xn--") && !has_prefix(b, n, "sthree-") &&
	       !has_suffix(b, n, "-s3alias") && !has_suffix(b, n, "--ol-s3");
}
