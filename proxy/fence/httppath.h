/* httppath.h — HTTP mode: is a request path one that every downstream reads
 * the same way? Pure: no I/O, no allocation. */
#ifndef FENCE_HTTPPATH_H
#define FENCE_HTTPPATH_H

/* raw: the path as the client sent it (percent-encoded, no query), which is
 * what the downstream receives. Returns NULL when it has one reading only;
 * else a message for a 400 naming the form. The forms refused are those a
 * downstream may rewrite into another path after the proxy matched routes
 * on the decoded one: an empty segment ("//"), a ";" parameter (also
 * %3B), a "." or ".." segment (also written %2e), an encoded "/" (%2F) and
 * a backslash ("\" or %5C); a path not starting with "/" too. */
const char *httppath_ambiguity(const char *raw);

#endif
