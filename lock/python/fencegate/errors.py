"""The exceptions of the fencegate lock client. Every one is a
FencegateError; LockHeld and LeaseLost are answers (another worker holds the
lock; this worker's lease is gone), not failures of the proxy or network."""


class FencegateError(Exception):
    """A lock call failed: status is the HTTP status (None when no answer
    came), code the proxy's error code ("ServiceUnavailable",
    "AccessDenied", ...), message its text."""

    def __init__(self, message, status=None, code=None):
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


class LockHeld(FencegateError):
    """acquire() found the lock held by another worker: holder and epoch are
    the current lease's, retry_after the seconds until it lapses at most."""

    def __init__(self, message, holder=None, epoch=None, retry_after=None):
        super().__init__(message, status=409, code="LockHeld")
        self.holder = holder
        self.epoch = epoch
        self.retry_after = retry_after


class LeaseLost(FencegateError):
    """The lease is gone: renewal was refused (another worker took the
    lock), or this worker's own monotonic deadline passed before a renewal
    succeeded. A write under its epoch must not be sent."""

    def __init__(self, message, epoch=None, current_epoch=None):
        super().__init__(message, status=409 if current_epoch else None, code="LeaseLost")
        self.epoch = epoch
        self.current_epoch = current_epoch
