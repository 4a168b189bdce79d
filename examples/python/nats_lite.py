"""A tiny NATS client on the standard library: enough to publish a request to Cairn
and read its outcome.

It speaks the NATS client protocol over one TCP connection (no TLS, no reconnect):
INFO and CONNECT (with headers), PUB/HPUB, SUB/UNSUB, PING/PONG, and MSG/HMSG.
A JetStream publish is an HPUB to the stream's subject with a reply inbox; the
stream answers on the inbox with a PubAck (JSON). Credentials may be given in the
URL (nats://user:password@host:4222).

Use a maintained client (nats-py) when you can install one; this module exists so
that the examples run with Python alone.

    with nats_lite.connect("nats://127.0.0.1:4222") as nc:
        sub = nc.subscribe("conversation.compact.activated", "conversation.compact.failed")
        ack = nc.jetstream_publish("conversation.compact.requested", body, msg_id=request_id)
        msg = nc.next_msg(sub, timeout=60)
"""

import collections
import json
import os
import socket
import time
import urllib.parse

__all__ = ["NatsError", "TimeoutError", "Msg", "Client", "connect"]

_CRLF = b"\r\n"
# Bounds: a protocol line (a subject is short; INFO may list cluster URLs), and
# the messages kept for a subscription nobody is reading right now.
MAX_LINE = 64 * 1024
MAX_PENDING = 10_000


class NatsError(Exception):
    """The server refused something (-ERR), or the protocol broke."""


class TimeoutError(NatsError):  # noqa: A001 - the name a caller expects
    """Nothing arrived before the deadline."""


Msg = collections.namedtuple("Msg", "subject reply headers data status")
Msg.__doc__ = """A delivered message. headers maps each name to its list of values;
status is the status code of a header-only reply (503: no responders), else None."""


def connect(url="nats://127.0.0.1:4222", timeout=10.0, name="cairn-example-python"):
    """Connects to url and returns a Client after the server's first PONG."""
    return Client(url, timeout, name)


class Client:
    def __init__(self, url, timeout, name):
        u = urllib.parse.urlsplit(url if "://" in url else "nats://" + url)
        if u.scheme not in ("nats", "tcp"):
            raise NatsError("scheme %r is not supported (nats:// only, no TLS)" % u.scheme)
        self._sock = socket.create_connection((u.hostname or "127.0.0.1", u.port or 4222), timeout=timeout)
        self._buf = bytearray()
        self._sid = 0
        self._subs = {}  # sid -> deque of Msg; the sids of one subscribe share it
        self._pongs = 0  # PONGs received, to match the PINGs of flush
        self._pings = 0
        self.info = self._read_info(time.monotonic() + timeout)
        if self.info.get("tls_required"):
            raise NatsError("the server requires TLS, which this client does not speak")
        if not self.info.get("headers", False):
            raise NatsError("the server does not support headers (NATS 2.2 or later is needed)")
        opts = {"verbose": False, "pedantic": False, "headers": True, "no_responders": True,
                "protocol": 1, "lang": "python-stdlib", "version": "0.1", "name": name}
        if u.username:
            opts["user"] = urllib.parse.unquote(u.username)
            opts["pass"] = urllib.parse.unquote(u.password or "")
        self._send(b"CONNECT " + json.dumps(opts).encode() + _CRLF)
        self.flush(timeout)

    # -- context manager

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        try:
            self._sock.close()
        finally:
            self._subs.clear()

    # -- publishing and subscribing

    def publish(self, subject, payload=b"", headers=None, reply=None):
        """Sends a message; with headers (a dict of str to str) as HPUB."""
        payload = bytes(payload)
        parts = [subject] + ([reply] if reply else [])
        if headers:
            hdr = b"NATS/1.0\r\n" + b"".join(
                ("%s: %s\r\n" % (_token(k), _line(v))).encode() for k, v in headers.items()) + _CRLF
            line = "HPUB %s %d %d\r\n" % (" ".join(parts), len(hdr), len(hdr) + len(payload))
            self._send(line.encode() + hdr + payload + _CRLF)
        else:
            line = "PUB %s %d\r\n" % (" ".join(parts), len(payload))
            self._send(line.encode() + payload + _CRLF)

    def subscribe(self, *subjects):
        """Subscribes to each subject (wildcards allowed) and returns one subscription:
        next_msg(sub) returns their messages in the order they arrive."""
        pending = collections.deque()
        sids = []
        for subject in subjects:
            self._sid += 1
            sid = str(self._sid)
            self._subs[sid] = pending
            sids.append(sid)
            self._send(("SUB %s %s\r\n" % (_token(subject), sid)).encode())
        return tuple(sids)

    def unsubscribe(self, sub):
        for sid in sub:
            self._subs.pop(sid, None)
            self._send(("UNSUB %s\r\n" % sid).encode())

    def flush(self, timeout=10.0):
        """Round-trips a PING: everything sent before is processed by the server."""
        self._pings += 1
        want = self._pings
        self._send(b"PING\r\n")
        deadline = time.monotonic() + timeout
        while self._pongs < want:
            self._read_one(deadline)

    def next_msg(self, sub, timeout):
        """Returns the next message of subscription sub, waiting at most timeout seconds."""
        deadline = time.monotonic() + timeout
        while True:
            pending = self._subs.get(sub[0])
            if pending is None:
                raise NatsError("not subscribed: %s" % (sub,))
            if pending:
                return pending.popleft()
            self._read_one(deadline)

    def request(self, subject, payload=b"", headers=None, timeout=10.0):
        """Publishes with a fresh reply inbox and returns the first reply."""
        inbox = "_INBOX." + os.urandom(12).hex()
        sub = self.subscribe(inbox)
        try:
            self.publish(subject, payload, headers, reply=inbox)
            msg = self.next_msg(sub, timeout)
        finally:
            self.unsubscribe(sub)
        if msg.status == 503:
            raise NatsError("no responders on %s (is there a stream for it?)" % subject)
        return msg

    def jetstream_publish(self, subject, payload, msg_id=None, timeout=10.0):
        """Publishes to a JetStream stream and returns its PubAck, a dict with
        stream, seq and (for a message the stream dropped as a duplicate of
        msg_id) duplicate: true."""
        headers = {"Nats-Msg-Id": msg_id} if msg_id else None
        ack = json.loads(self.request(subject, payload, headers, timeout).data)
        if "error" in ack:
            raise NatsError("publish to %s: %s" % (subject, ack["error"]))
        return ack

    # -- reading

    def _send(self, data):
        self._sock.sendall(data)

    def _read_info(self, deadline):
        op, rest = self._read_line(deadline).partition(b" ")[::2]
        if op.upper() != b"INFO":
            raise NatsError("expected INFO, got %r" % op[:40])
        return json.loads(rest)

    def _read_one(self, deadline):
        """Reads and handles one protocol message."""
        line = self._read_line(deadline)
        op, _, rest = line.partition(b" ")
        op = op.upper()
        if op == b"MSG":
            args = rest.split()
            subject, sid, size = args[0], args[1], int(args[-1])
            reply = args[2] if len(args) == 4 else None
            self._deliver(sid, subject, reply, 0, self._read_exact(size + 2, deadline)[:-2])
        elif op == b"HMSG":
            args = rest.split()
            subject, sid, hdr_size, size = args[0], args[1], int(args[-2]), int(args[-1])
            reply = args[2] if len(args) == 5 else None
            self._deliver(sid, subject, reply, hdr_size, self._read_exact(size + 2, deadline)[:-2])
        elif op == b"PING":
            self._send(b"PONG\r\n")
        elif op == b"PONG":
            self._pongs += 1
        elif op == b"+OK":
            pass
        elif op == b"INFO":
            self.info.update(json.loads(rest))
        elif op == b"-ERR":
            raise NatsError("server: %s" % rest.decode("utf-8", "replace").strip("'"))
        else:
            raise NatsError("unexpected protocol line %r" % line[:80])

    def _deliver(self, sid, subject, reply, hdr_size, data):
        pending = self._subs.get(sid.decode())
        if pending is None:
            return  # unsubscribed meanwhile
        if len(pending) >= MAX_PENDING:
            raise NatsError("more than %d messages wait on subscription %s" % (MAX_PENDING, sid.decode()))
        headers, status = _parse_headers(data[:hdr_size]) if hdr_size else ({}, None)
        pending.append(Msg(subject.decode(), reply.decode() if reply else None, headers,
                           bytes(data[hdr_size:]), status))

    def _read_line(self, deadline):
        while True:
            i = self._buf.find(_CRLF)
            if i >= 0:
                line = bytes(self._buf[:i])
                del self._buf[:i + 2]
                return line
            if len(self._buf) > MAX_LINE:
                raise NatsError("protocol line longer than %d bytes" % MAX_LINE)
            self._fill(deadline)

    def _read_exact(self, n, deadline):
        while len(self._buf) < n:
            self._fill(deadline)
        data = bytes(self._buf[:n])
        del self._buf[:n]
        return data

    def _fill(self, deadline):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("timed out")
        self._sock.settimeout(remaining)
        try:
            chunk = self._sock.recv(65536)
        except socket.timeout:
            raise TimeoutError("timed out") from None
        if not chunk:
            raise NatsError("connection closed by the server")
        self._buf += chunk


def _token(s):
    """A subject or header part: no whitespace that would break the protocol line."""
    s = str(s)
    if not s or any(c in s for c in " \t\r\n"):
        raise ValueError("%r is empty or has whitespace" % s)
    return s


def _line(s):
    """A header value: one line."""
    s = str(s)
    if "\r" in s or "\n" in s:
        raise ValueError("%r spans lines" % s)
    return s


def _parse_headers(block):
    """Parses 'NATS/1.0[ status [description]]\\r\\nName: value\\r\\n...'."""
    lines = block.decode("utf-8", "replace").split("\r\n")
    first = lines[0].split(None, 2)
    status = int(first[1]) if len(first) > 1 and first[1].isdigit() else None
    headers = {}
    for line in lines[1:]:
        if line:
            name, _, value = line.partition(":")
            headers.setdefault(name.strip(), []).append(value.strip())
    return headers, status
