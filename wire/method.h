/* method.h — HTTP request methods as bits, for sets of methods (a route's
 * fenced methods, a policy's method list).
 *
 * Method names compare case-sensitively (RFC 9110: "GET" and "get"
 * differ); any method not listed here is METHOD_OTHER. Pure, no state. */
#ifndef FENCE_METHOD_H
#define FENCE_METHOD_H

#define METHOD_GET     (1u << 0)
#define METHOD_HEAD    (1u << 1)
#define METHOD_PUT     (1u << 2)
#define METHOD_POST    (1u << 3)
#define METHOD_DELETE  (1u << 4)
#define METHOD_PATCH   (1u << 5)
#define METHOD_OPTIONS (1u << 6)
#define METHOD_OTHER   (1u << 7)   /* any other method, e.g. "MKCOL", "get" */

/* The methods that may change state: PUT, POST, DELETE, PATCH and every
 * unrecognised method (fail closed). GET, HEAD and OPTIONS are reads. */
#define METHOD_WRITES \
	(METHOD_PUT | METHOD_POST | METHOD_DELETE | METHOD_PATCH | METHOD_OTHER)

/* The bit of a method name; METHOD_OTHER for NULL or anything unknown. */
unsigned method_bit(const char *method);

/* 1 for GET, HEAD and OPTIONS (the methods outside METHOD_WRITES), else 0;
 * NULL and unknown methods are writes. */
int method_is_read(const char *method);

/* Parses a method name for a method list: the bit, or 0 if the name is not
 * one of the known methods. */
unsigned method_from_name(const char *name);

#endif
