"""A throwaway certificate authority for a loopback cluster over TLS, made with ``openssl``.

    files = make_authority(workdir / "tls")
    # files.ca: the CA's certificate (what clients verify servers against, and servers
    # clients); files.server_cert / server_key for 127.0.0.1 and localhost;
    # files.client_cert / client_key for a worker that must show one.

The tests and the fault harness run Redis (``rediss://``) and RabbitMQ (``amqps://``)
with these, as a cluster across hosts runs with its own CA's. The keys are written
mode 600 in ``workdir``; nothing here is meant for a real deployment (``docs/tls.md``
says how to make those).
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

DAYS = "2"  # a test's certificates need to outlive the test, nothing more


@dataclass(frozen=True)
class Authority:
    """The files of one throwaway CA, a server certificate and a client certificate."""

    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path


def unavailable() -> str | None:
    """Why certificates cannot be made here, or None."""
    return None if shutil.which("openssl") else "no openssl on PATH (apt-get install openssl)"


def make_authority(workdir: Path) -> Authority:
    """A CA and two certificates it signed, in ``workdir`` (created)."""
    workdir.mkdir(parents=True, exist_ok=True)
    ca, ca_key = workdir / "ca.pem", workdir / "ca.key"
    _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
             "-nodes", "-keyout", ca_key, "-out", ca, "-days", DAYS,
             "-subj", "/CN=crawlchain test CA", "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    server = _signed(workdir, "server", ca, ca_key, "subjectAltName=DNS:localhost,IP:127.0.0.1",
                     "extendedKeyUsage=serverAuth")
    client = _signed(workdir, "client", ca, ca_key, "subjectAltName=DNS:crawlchain-worker",
                     "extendedKeyUsage=clientAuth")
    for key in workdir.glob("*.key"):
        key.chmod(0o600)
    return Authority(ca, *server, *client)


def _signed(workdir: Path, name: str, ca: Path, ca_key: Path, *extensions: str
            ) -> tuple[Path, Path]:
    """A key and a certificate for ``name``, signed by the CA, with ``extensions``."""
    cert, key, request = (workdir / f"{name}.pem", workdir / f"{name}.key",
                          workdir / f"{name}.csr")
    _openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
             "-keyout", key, "-out", request, "-subj", f"/CN={name}")
    ext = workdir / f"{name}.ext"
    ext.write_text("".join(f"{line}\n" for line in extensions))
    _openssl("x509", "-req", "-in", request, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial",
             "-out", cert, "-days", DAYS, "-extfile", ext)
    request.unlink()
    return cert, key


def _openssl(*args: str | Path) -> None:
    done = subprocess.run(["openssl", *map(str, args)], capture_output=True, text=True,
                          timeout=60, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"openssl {args[0]} failed: {done.stderr.strip()}")
