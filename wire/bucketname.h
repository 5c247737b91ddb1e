/* bucketname.h — S3's bucket naming rules, the one copy of them.
 *
 * The lock registry (which buckets a lock may live in), the embedded store
 * (which directories are buckets) and the copy-source parse (which bucket a
 * CopyObject reads) all ask here, so a name one accepts the others do not
 * refuse. Pure: no state, no allocation; names are bytes, not C strings,
 * so a name cut out of a path needs no copy. */
#ifndef FENCE_BUCKETNAME_H
#define FENCE_BUCKETNAME_H

#include <stdbool.h>
#include <stddef.h>

#define S3_BUCKET_NAME_MAX 63

/* true if b[0..n) is 3 to 63 bytes of [a-z0-9.-] and nothing else: what a
 * request may name without escapes (the backend judges the rest). */
bool s3_bucket_name_plain(const char *b, size_t n);

/* true if b[0..n) is a bucket name S3 lets one create today: plain, starts
 * and ends with a letter or digit, no "..", not shaped like an IPv4
 * address, none of the reserved prefixes ("xn--", "sthree-") or suffixes
 * ("-s3alias", "--ol-s3"). */
bool s3_bucket_name_valid(const char *b, size_t n);

#endif
