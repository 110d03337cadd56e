"""`memctx doctor`'s verdict on how the database is reached, for each case a deployment meets (the
cases on loopback and TLS are also run against real servers in tests/e2e/test_tls.py)."""

from __future__ import annotations

import pytest

from memctx.doctor import transport_verdict


def test_a_unix_socket_and_loopback_are_fine_without_tls():
    socket = transport_verdict("/run/postgresql", "", "prefer", False, None, None)
    loopback = transport_verdict("127.0.0.1", "127.0.0.1", "prefer", False, None, None)
    named = transport_verdict("localhost", "::1", "disable", False, None, None)
    assert all(c.ok and not c.warn for c in (socket, loopback, named))
    assert "Unix socket" in socket.detail and "no TLS" in loopback.detail and "loopback" in named.detail


def test_verify_full_is_fine_anywhere_and_names_the_protocol():
    checked = transport_verdict("db.example.com", "203.0.113.7", "verify-full", True, "TLSv1.3", "TLS_AES_256_GCM_SHA384")
    assert checked.ok and not checked.warn
    assert "TLSv1.3" in checked.detail and "certificate and name checked" in checked.detail


@pytest.mark.parametrize("sslmode, encrypted, said", [
    ("prefer", False, "without TLS"),  # a server without TLS: libpq's default falls back to clear
    ("disable", False, "without TLS"),
    ("require", True, "certificate not checked"),
    ("prefer", True, "certificate not checked"),
    ("verify-ca", True, "checked but not its name"),
])
def test_another_machine_in_clear_or_unchecked_is_a_warning_that_says_what_to_set(sslmode, encrypted, said):
    check = transport_verdict("db.example.com", "203.0.113.7", sslmode, encrypted, "TLSv1.3" if encrypted else None,
                              None)
    assert check.ok and check.warn  # it runs: a warning, not a failure
    assert said in check.detail and "db.example.com (203.0.113.7)" in check.detail
    assert "sslmode=verify-full" in check.detail and "sslrootcert" in check.detail
