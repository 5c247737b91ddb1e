/* httppath.c — refuses HTTP-mode request paths that a downstream could
 * normalise into a path the proxy did not match: routes are matched on the
 * decoded path byte for byte, the downstream receives the raw path, and a
 * server that merges "//", strips ";params", resolves dot segments or
 * decodes %2F / "\" would apply the write elsewhere. Refusing them (rather
 * than normalising and forwarding the normal form) keeps one rule: what the
 * proxy judged is what is forwarded.
 *
 * Pure: no I/O, no allocation; it knows nothing of routes or methods. */
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "httppath.h"

/* 1 if p starts with the escape %XY for the byte c (hex digits either case). */
static bool escape_of(const char *p, unsigned char c)
{
	static const char hex[] = "0123456789ABCDEF";

	if (p[0] != '%' || !p[1] || !p[2])
		return false;
	return (p[1] == hex[c >> 4] || p[1] == (hex[c >> 4] | 0x20)) &&
	       (p[2] == hex[c & 15] || (hex[c & 15] >= 'A' && p[2] == (hex[c & 15] | 0x20)));
}

/* 1 if the segment [seg, seg+n) is "." or ".." once %2e is decoded. */
static bool dot_segment(const char *seg, size_t n)
{
	size_t i = 0, dots = 0;

	while (i < n) {
		if (seg[i] == '.') {
			i++;
		} else if (n - i >= 3 && escape_of(seg + i, '.')) {
			i += 3;
		} else {
			return false;
		}
		dots++;
	}
	return dots == 1 || dots == 2;
}

const char *httppath_ambiguity(const char *raw)
{
	const char *p, *seg;

	if (!raw || raw[0] != '/')
		return "the path must start with \"/\"";
	for (p = raw; *p; p++) {
		if (p[0] == '/' && p[1] == '/')
			return "the path has an empty segment (\"//\"), which a downstream may merge";
		if (*p == ';' || escape_of(p, ';'))
			return "the path has a \";\" parameter, which a downstream may strip";
		if (*p == '\\' || escape_of(p, '\\'))
			return "the path has a backslash, which a downstream may read as \"/\"";
		if (escape_of(p, '/'))
			return "the path has an encoded \"/\" (%2F), which a downstream may decode";
	}
	for (seg = raw + 1;; seg = p + 1) {
		p = strchr(seg, '/');
		if (!p)
			p = seg + strlen(seg);
		if (dot_segment(seg, (size_t)(p - seg)))
			return "the path has a \".\" or \"..\" segment, which a downstream may resolve";
		if (!*p)
			break;
	}
	return NULL;
}
