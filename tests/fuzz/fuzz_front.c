/* fuzz_front.c — libFuzzer target for the request parser (front_parser).
 *
 * Feeds arbitrary bytes through front_parser_feed in chunks whose sizes
 * come from the input, pausing in body callbacks now and then and resuming
 * like the connection layer does. Checks the parser's promises: it never
 * consumes more than it was given, an error carries a status the front end
 * can answer, a head hands over a well-formed message. No sockets. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http/front.h"

struct fuzz_state {
	unsigned heads, ends;
	uint64_t body_bytes;
	unsigned body_calls;
};

static int on_head(void *arg, struct front_msg *msg)
{
	struct fuzz_state *st = arg;

	if (!msg->method || !msg->target || !msg->path || msg->path[0] == '\0')
		abort();
	if (msg->chunked && msg->content_length != -1)
		abort();
	if (front_hdrs_count(&msg->hdrs, "Content-Length") > 1)
		abort();
	st->heads++;
	front_msg_free(msg);
	return 0;
}

static int on_body(void *arg, const char *data, size_t len)
{
	struct fuzz_state *st = arg;

	if (len == 0 || !data)
		abort();
	st->body_bytes += len;
	return (++st->body_calls % 3) == 0; /* pause every third call */
}

static int on_end(void *arg)
{
	struct fuzz_state *st = arg;

	st->ends++;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_state st = {0};
	struct front_parser_cbs cbs = { on_head, on_body, on_end, &st };
	struct front_limits lim;
	struct front_parser *p;
	size_t off = 0, chunk;
	unsigned rounds = 0;

	if (size < 1)
		return 0;
	front_limits_default(&lim);
	lim.header_bytes = 2048;
	lim.header_count = 20;
	lim.url_bytes = 512;
	chunk = (size_t)(data[0] % 64) + 1;
	data++;
	size--;
	p = front_parser_new(&lim, &cbs);
	if (!p)
		return 0;
	while (off < size && rounds++ < 100000) {
		size_t n = size - off < chunk ? size - off : chunk;
		size_t used = 0;
		enum front_parse_status rc = front_parser_feed(p, (const char *)data + off, n, &used);

		if (used > n)
			abort();
		off += used;
		if (rc == FRONT_PARSE_ERROR) {
			const char *reason = NULL;
			int status = front_parser_error(p, &reason);

			if (status < 400 || status > 599 || !reason)
				abort();
			break;
		}
		if (rc == FRONT_PARSE_PAUSED)
			front_parser_resume(p);
		else if (used == 0)
			break;
	}
	if (st.ends > st.heads)
		abort();
	front_parser_free(p);
	return 0;
}
