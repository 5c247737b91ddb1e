/* worker.c — the smallest libfencelock worker: take the lock, do the work
 * with the epoch as fencing token, renew, release. Build it against an
 * installed libfencelock:
 *
 *   cc -o worker examples/worker.c $(pkg-config --cflags --libs libfencelock)
 *   ./worker file:///tmp/locks invoices      (or s3://BUCKET with AWS_* set)
 *
 * It prints the epoch it held; exit 3 when someone else holds the lock. */
#include <stdio.h>
#include <string.h>

#include <fencelock/lock.h>
#include <fencelock/store.h>

int main(int argc, char **argv)
{
	struct store_config sc;
	struct lock_acquire_opts ao = { .holder = "example-worker", .ttl_ms = 10000 };
	struct lock_grant g;
	struct store *st;
	struct lock *lk;
	enum lock_code rc;
	char err[512];
	int code = 1;

	if (argc != 3) {
		fprintf(stderr, "usage: worker STORE-URL LOCK\n");
		return 2;
	}
	memset(&sc, 0, sizeof(sc));
	sc.url = argv[1];
	st = store_open(&sc, err, sizeof(err));
	if (!st) {
		fprintf(stderr, "worker: %s\n", err);
		return 1;
	}
	lk = lock_open(st, argv[2], NULL, err, sizeof(err));
	if (!lk) {
		fprintf(stderr, "worker: %s\n", err);
		goto out;
	}
	rc = lock_acquire(lk, &ao, &g, NULL, err, sizeof(err));
	if (rc == LOCK_HELD) {
		fprintf(stderr, "worker: %s is held by someone else\n", argv[2]);
		code = 3;
		goto out;
	}
	if (rc != LOCK_OK) {
		fprintf(stderr, "worker: %s: %s\n", lock_strerror(rc), err);
		goto out;
	}
	/* the work: every write carries g.epoch as X-Fencing-Token */
	if (lock_renew(lk, &g, err, sizeof(err)) != LOCK_OK ||
	    lock_release(lk, &g, err, sizeof(err)) != LOCK_OK) {
		fprintf(stderr, "worker: %s\n", err);
		goto out;
	}
	printf("%llu\n", (unsigned long long)g.epoch);
	code = 0;
out:
	lock_close(lk);
	store_close(st);
	return code;
}
