"""HTTP for the lock client: one JSON call to fencegate's lock API
(/_fence/locks/...) over urllib, SigV4-signed (service "s3") with botocore's
signer when credentials are known, and the proxy's error bodies (JSON from
the lock API, S3 XML from the authentication layer) turned into
FencegateError fields. It does not retry, keep state between calls, or know
what a lease is: lock.py does."""
import json
import os
import ssl
import urllib.error
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ElementTree

from .errors import FencegateError

try:  # optional: signing and the AWS credential chain
    import botocore.session
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
except ImportError:  # pragma: no cover - exercised where botocore is absent
    botocore = None


def ssl_context(verify):
    """The TLS context for verify: None (AWS_CA_BUNDLE, else SSL_CERT_FILE,
    else the system store), True (the system store), False (no checking) or
    the path of a CA bundle."""
    if verify is None:
        verify = os.environ.get("AWS_CA_BUNDLE") or os.environ.get("SSL_CERT_FILE") or True
    if verify is False:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        return ctx
    if verify is True:
        return ssl.create_default_context()
    return ssl.create_default_context(cafile=verify)


def urllib_transport(verify=None):
    """A transport: send(method, url, headers, body, timeout) returns
    (status, headers dict with lowercase names, body bytes); HTTP error
    statuses are answers, network failures raise OSError."""
    ctx = ssl_context(verify)

    def send(method, url, headers, body, timeout):
        req = urllib.request.Request(url, data=body, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=timeout, context=ctx) as r:
                return r.status, {k.lower(): v for k, v in r.headers.items()}, r.read()
        except urllib.error.HTTPError as e:
            with e:
                return e.code, {k.lower(): v for k, v in e.headers.items()}, e.read()

    return send


def decode_error(status, body):
    """(code, message, fields) of an error answer: the lock API's JSON
    ({"error", "message", ...}) or S3's XML (<Error><Code>...)."""
    text = body.decode("utf-8", "replace").strip()
    if text.startswith("{"):
        try:
            obj = json.loads(text)
            return obj.get("error"), obj.get("message") or text, obj
        except ValueError:
            pass
    if text.startswith("<"):
        try:
            root = ElementTree.fromstring(text)
            return root.findtext("Code"), root.findtext("Message") or text, {}
        except ElementTree.ParseError:
            pass
    return None, text or "HTTP %d" % status, {}


class Caller:
    """Calls one proxy's lock API. credentials: None (the AWS chain, through
    botocore, when botocore is installed and finds some), False (never
    sign), a (key, secret[, session token]) tuple, or a botocore
    Credentials. transport replaces urllib (tests)."""

    def __init__(self, endpoint, credentials=None, region=None, verify=None,
                 timeout=10.0, transport=None):
        self.endpoint = endpoint.rstrip("/")
        self.timeout = timeout
        self.transport = transport or urllib_transport(verify)
        self.region = region or os.environ.get("AWS_REGION") or \
            os.environ.get("AWS_DEFAULT_REGION")
        self.credentials = None
        if credentials is False:
            return
        if credentials is None:
            if botocore is None:
                return
            session = botocore.session.Session()
            self.credentials = session.get_credentials()
            self.region = self.region or session.get_config_variable("region")
            return
        if botocore is None:
            raise FencegateError("signing lock calls needs botocore (pip install botocore)")
        if isinstance(credentials, (tuple, list)):
            credentials = Credentials(*credentials)
        self.credentials = credentials

    def sign(self, method, url, headers, body):
        """headers plus SigV4's (x-amz-date, x-amz-content-sha256,
        authorization), or headers unchanged without credentials."""
        if self.credentials is None:
            return headers
        creds = self.credentials
        if hasattr(creds, "get_frozen_credentials"):  # refreshing credentials
            creds = creds.get_frozen_credentials()
        req = AWSRequest(method=method, url=url, data=body, headers=dict(headers))
        S3SigV4Auth(creds, "s3", self.region or "us-east-1").add_auth(req)
        return dict(req.headers.items())

    def call(self, method, path, payload=None, timeout=None):
        """(status, decoded JSON object) of one call; a body that is not a
        JSON object raises FencegateError, as does a failed connection."""
        url = self.endpoint + path
        body = None if payload is None else json.dumps(payload).encode()
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        headers = self.sign(method, url, headers, body)
        try:
            status, _, raw = self.transport(method, url, headers, body,
                                            timeout or self.timeout)
        except OSError as e:
            raise FencegateError("%s %s: %s" % (method, url, e)) from e
        if status >= 300:
            code, message, fields = decode_error(status, raw)
            return status, dict(fields, error=code, message=message)
        try:
            obj = json.loads(raw)
        except ValueError:
            obj = None
        if not isinstance(obj, dict):
            raise FencegateError("%s %s: HTTP %d with a body that is not JSON" %
                                 (method, url, status), status=status)
        return status, obj


def lock_path(name, op=None):
    """/_fence/locks/NAME[/op] with NAME quoted."""
    path = "/_fence/locks/" + urllib.parse.quote(name, safe="")
    return path + "/" + op if op else path
