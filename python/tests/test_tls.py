"""TLS with redis-py's options (ssl=True, ssl_ca_certs=, ssl_certfile=, ssl_keyfile=,
ssl_cert_reqs=, ssl_check_hostname=) and rediss:// URLs, against Debian's redis-server
serving TLS only (ci/redis-plain.sh, ci/redis-cluster.sh with SL_REDIS_TLS_DIR), with
certificates made by `openssl` now (ci/tls-certs.sh). Each failure is a TlsError (a
ConnectionError) that says what failed, never a hang.

Ports (conftest.py's block of python's range in ci/lib.sh): BASE+75 TLS, client certificates
optional; +76 TLS, client certificates required; +77 TLS with an expired certificate; +78
plaintext; +80..+85 a 3-primary Redis Cluster with tls-cluster yes."""
import os
import subprocess
from typing import Dict, Iterator

import pytest

import slotlane
from conftest import BASE, HOST, ROOT, TEST_DIR, script

TLS_PORT, MTLS_PORT, EXPIRED_PORT, PLAIN_PORT, CLUSTER_PORT = BASE + 75, BASE + 76, BASE + 77, BASE + 78, BASE + 80


@pytest.fixture(scope="module")
def tls() -> Iterator[Dict[str, str]]:
    certs = os.path.join(TEST_DIR, "tls-certs")
    subprocess.run(["bash", os.path.join(ROOT, "ci", "tls-certs.sh"), certs], check=True)
    started = []

    def start(kind: str, name: str, port: int, **env: str) -> None:
        e = dict(os.environ, **env)
        if kind == "plain" and env.get("SL_REDIS_TLS_DIR") is None:
            e.pop("SL_REDIS_TLS_DIR", None)
        args = [os.path.join(TEST_DIR, name), str(port)] + (["3"] if kind == "cluster" else [])
        started.append((kind, name, e))
        subprocess.run(["bash", os.path.join(ROOT, "ci", "redis-%s.sh" % kind), "start"] + args, env=e,
                       check=True, capture_output=True, timeout=120)

    try:
        start("plain", "tls", TLS_PORT, SL_REDIS_TLS_DIR=certs)
        start("plain", "mtls", MTLS_PORT, SL_REDIS_TLS_DIR=certs, SL_REDIS_TLS_AUTH_CLIENTS="yes")
        start("plain", "tls-expired", EXPIRED_PORT, SL_REDIS_TLS_DIR=certs, SL_REDIS_TLS_CERT="expired")
        start("plain", "notls", PLAIN_PORT)
        start("cluster", "tls-cluster", CLUSTER_PORT, SL_REDIS_TLS_DIR=certs)
        yield {n: os.path.join(certs, n) for n in os.listdir(certs)}
    finally:
        for kind, name, e in reversed(started):
            subprocess.run(["bash", os.path.join(ROOT, "ci", "redis-%s.sh" % kind), "stop",
                            os.path.join(TEST_DIR, name)], env=e, capture_output=True, timeout=60)


def url(port: int, scheme: str = "rediss") -> str:
    return "%s://%s:%d" % (scheme, HOST, port)


def refused(match: str, *args: object, **kw: object) -> slotlane.TlsError:
    with pytest.raises(slotlane.TlsError, match=match) as e:
        slotlane.Client(*args, socket_connect_timeout=2, **kw)  # type: ignore[arg-type]
    assert isinstance(e.value, slotlane.ConnectionError)
    return e.value


def test_rediss_url_with_ca(tls: Dict[str, str]) -> None:
    with slotlane.Client(url(TLS_PORT), ssl_ca_certs=tls["ca.crt"], decode_responses=True) as c:
        c.set("tls:k", "v")
        assert c.get("tls:k") == "v"
        p = c.pipeline()
        for i in range(2000):  # replies spanning many TLS records
            p.set("tls:%d" % i, "x" * 100)
            p.get("tls:%d" % i)
        out = p.execute()
        assert out[1::2] == ["x" * 100] * 2000
        assert c.get("tls:big") is None
        c.set("tls:big", "y" * 300000)
        assert c.get("tls:big") == "y" * 300000


def test_ssl_true_host_port_and_ca_forms(tls: Dict[str, str]) -> None:
    with open(tls["ca.crt"]) as f:
        pem = f.read()
    for kw in ({"ssl_ca_certs": tls["ca.crt"]}, {"ssl_ca_data": pem}, {"ssl_ca_path": tls["cadir"]}):
        with slotlane.Client(HOST, TLS_PORT, ssl=True, **kw) as c:  # type: ignore[arg-type]
            assert c.ping()


def test_mutual_tls(tls: Dict[str, str]) -> None:
    refused("certificate required|TLS", url(MTLS_PORT), ssl_ca_certs=tls["ca.crt"])
    with slotlane.Client(url(MTLS_PORT), ssl_ca_certs=tls["ca.crt"], ssl_certfile=tls["client.crt"],
                         ssl_keyfile=tls["client.key"]) as c:
        assert c.ping()


def test_verification_failures(tls: Dict[str, str]) -> None:
    refused("certificate verify failed", url(TLS_PORT), ssl_ca_certs=tls["other-ca.crt"])
    refused("certificate verify failed: certificate has expired", url(EXPIRED_PORT), ssl_ca_certs=tls["ca.crt"])
    refused("host name mismatch: expected wrong.example, certificate names 127.0.0.1",
            url(TLS_PORT), ssl_ca_certs=tls["ca.crt"], ssl_server_hostname="wrong.example")
    # The system's CAs do not know the test CA.
    refused("certificate verify failed", url(TLS_PORT))


def test_weaker_verification_is_asked_for(tls: Dict[str, str]) -> None:
    with slotlane.Client(url(TLS_PORT), ssl_ca_certs=tls["ca.crt"], ssl_server_hostname="wrong.example",
                         ssl_check_hostname=False) as c:
        assert c.ping()
    with slotlane.Client(url(TLS_PORT), ssl_cert_reqs="none") as c:
        assert c.ping()
    import ssl
    with slotlane.Client(url(TLS_PORT), ssl_cert_reqs=ssl.CERT_NONE) as c:
        assert c.ping()
    with pytest.raises(ValueError, match="ssl_cert_reqs"):
        slotlane.Client(url(TLS_PORT), ssl_cert_reqs="sometimes")


def test_plaintext_and_tls_mismatched(tls: Dict[str, str]) -> None:
    refused("TLS to 127.0.0.1:%d" % PLAIN_PORT, url(PLAIN_PORT), ssl_ca_certs=tls["ca.crt"])
    with pytest.raises(slotlane.ConnectionError, match="if the port speaks TLS, use rediss://"):
        slotlane.Client(url(TLS_PORT, "redis"), socket_connect_timeout=2)


def test_bad_files_fail_at_once(tls: Dict[str, str]) -> None:
    refused("cannot load the CA file /nonexistent", url(TLS_PORT), ssl_ca_certs="/nonexistent/ca.pem")
    refused("client key", url(TLS_PORT), ssl_ca_certs=tls["ca.crt"], ssl_certfile=tls["client.crt"],
            ssl_keyfile=tls["server.key"])


def test_cluster_over_tls(tls: Dict[str, str]) -> None:
    with slotlane.Client(url(CLUSTER_PORT), ssl_ca_certs=tls["ca.crt"], ssl_certfile=tls["client.crt"],
                         ssl_keyfile=tls["client.key"], decode_responses=True) as c:
        assert c.mode == "cluster"
        p = c.pipeline()
        for i in range(4096):  # keys over every node
            p.set("k:%d" % i, str(i))
        for i in range(4096):
            p.get("k:%d" % i)
        out = p.execute()
        assert out[4096:] == [str(i) for i in range(4096)]
        # Every primary was reached over TLS, each verified against its announced address.
        assert c.dbsize() >= 4096
