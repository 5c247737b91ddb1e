/* hold.c — the smallest libfencelock program: take lock NAME on a store,
 * keep it renewed while the work runs, print the epoch (the fencing token
 * every write of the work carries), release. Build it against an installed
 * libfencelock with nothing else:
 *
 *   cc -o hold examples/hold.c $(pkg-config --cflags --libs libfencelock)
 *   ./hold file:///tmp/locks invoices      (or s3://BUCKET with AWS_* set)
 *
 * Exit 3 when someone else holds the lock. */
#include <stdio.h>

#include <fencegate/fencelock.h>

int main(int argc, char **argv)
{
	struct fence_options o = { .holder = "example-hold", .ttl_ms = 10000 };
	struct fence_lock *fl;
	enum fence_result rc;
	uint64_t epoch;
	char err[512];
	int code = 1;

	if (argc != 3) {
		fprintf(stderr, "usage: hold STORE-URL LOCK\n");
		return 2;
	}
	if (!(fl = fence_open(argv[1], argv[2], &o, err, sizeof(err)))) {
		fprintf(stderr, "hold: %s\n", err);
		return 1;
	}
	rc = fence_acquire(fl, &epoch, err, sizeof(err));
	if (rc == FENCE_OK && fence_keep(fl, NULL, NULL, err, sizeof(err)) == FENCE_OK) {
		/* the work: every write carries epoch while fence_epoch(fl) says so */
		if (fence_release(fl, err, sizeof(err)) == FENCE_OK) {
			printf("%llu\n", (unsigned long long)epoch);
			code = 0;
		}
	} else if (rc == FENCE_HELD) {
		code = 3;
	}
	if (code != 0)
		fprintf(stderr, "hold: %s\n", err);
	fence_close(fl);
	return code;
}
