"""What failed logins are counted by: the client address, an IPv6 address's /64 network."""

from __future__ import annotations

import pytest

from app.accounts.throttling import client_key


@pytest.mark.parametrize(
    ("address", "key"),
    [
        ("203.0.113.9", "203.0.113.9"),
        ("::ffff:203.0.113.9", "203.0.113.9"),
        ("2001:DB8:0:1:2:3:4:5", "2001:db8:0:1::/64"),
        ("2001:db8:0:1::", "2001:db8:0:1::/64"),
        ("testclient", "testclient"),
        ("x" * 64, "x" * 64),
        (None, None),
    ],
)
def test_failed_logins_are_counted_by_address_or_ipv6_network(address, key):
    assert client_key(address) == key
