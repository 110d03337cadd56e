"""A certificate authority the test makes, and certificates it signs (tests/ is on pytest's
pythonpath: `from tls_support import Authority`; keys are EC P-256, files PEM); and a TLS front
for a Postgres server whose build has no TLS of its own."""

from __future__ import annotations

import datetime
import ipaddress
import select
import socket
import ssl
import struct
import threading
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


@dataclass(frozen=True)
class Issued:
    cert: Path
    key: Path


class Authority:
    """A self-signed CA in `folder` (`ca.pem`); `issue` signs a server certificate for names and
    addresses."""

    def __init__(self, folder: Path, name: str = "memctx test CA") -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.folder = folder
        self.key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        now = datetime.datetime.now(datetime.timezone.utc)
        self.cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject)
                     .public_key(self.key.public_key()).serial_number(x509.random_serial_number())
                     .not_valid_before(now - datetime.timedelta(minutes=5))
                     .not_valid_after(now + datetime.timedelta(days=1))
                     .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                     .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                                  content_commitment=False, key_encipherment=False,
                                                  data_encipherment=False, key_agreement=False,
                                                  encipher_only=False, decipher_only=False), critical=True)
                     .sign(self.key, hashes.SHA256()))
        self.pem = folder / "ca.pem"
        self.pem.write_bytes(self.cert.public_bytes(serialization.Encoding.PEM))

    def issue(self, stem: str, names: list[str], addresses: list[str] = ()) -> Issued:
        """A server certificate for `names` (DNS) and `addresses` (IP), signed by this CA."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.timezone.utc)
        alternatives = [x509.DNSName(n) for n in names] + [x509.IPAddress(ipaddress.ip_address(a)) for a in addresses]
        cert = (x509.CertificateBuilder()
                .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])]))
                .issuer_name(self.cert.subject).public_key(key.public_key())
                .serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(minutes=5))
                .not_valid_after(now + datetime.timedelta(days=1))
                .add_extension(x509.SubjectAlternativeName(alternatives), critical=False)
                .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
                .sign(self.key, hashes.SHA256()))
        issued = Issued(self.folder / f"{stem}.crt", self.folder / f"{stem}.key")
        issued.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        issued.key.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                 serialization.NoEncryption()))
        issued.key.chmod(0o600)
        return issued


SSL_REQUEST = 80877103  # the code of a Postgres client's SSLRequest
GSSENC_REQUEST = 80877104


class PostgresTlsFront:
    """A TLS front on 127.0.0.1 for a Postgres server, as a TLS-terminating proxy before a database
    is (the embedded builds are compiled without OpenSSL, so this is how a test puts TLS in front
    of them): it answers a client's SSLRequest, completes the handshake with `issued`, and relays
    the session in clear to the server's Unix socket `target`. A client that does not ask for TLS
    is closed. `sessions` counts the TLS sessions relayed."""

    def __init__(self, target: str, issued: Issued) -> None:
        self.target = target
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(issued.cert, issued.key)
        self.sessions = 0
        self.refused = 0
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self.listener.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:  # closed
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        try:
            while True:
                length, code = struct.unpack("!ii", _read(client, 8))
                if code == GSSENC_REQUEST:
                    client.sendall(b"N")
                    continue
                if length != 8 or code != SSL_REQUEST:
                    self.refused += 1
                    client.close()
                    return
                client.sendall(b"S")
                break
            tls = self.context.wrap_socket(client, server_side=True)
        except (OSError, struct.error):
            client.close()
            return
        self.sessions += 1
        server = socket.socket(socket.AF_UNIX)
        server.connect(self.target)
        with tls, server:
            while True:
                readable = [tls] if tls.pending() else select.select([tls, server], [], [])[0]
                for source in readable:
                    try:
                        data = source.recv(65536)
                    except OSError:
                        return
                    if not data:
                        return
                    (server if source is tls else tls).sendall(data)


def _read(conn: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            raise OSError("closed")
        data += chunk
    return data
