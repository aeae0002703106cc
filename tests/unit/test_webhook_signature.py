"""The payment webhook's signature: ``t=<unix seconds>,sha256=<hex>``, HMAC-SHA256 of
``t.body``, any of the accepted secrets, within the tolerance of the clock."""

from __future__ import annotations

import hashlib
import hmac
import time

import pytest

from app.errors import AuthenticationError
from app.wallet.webhook import MAX_SIGNATURES, StaleSignature, sign, verify_signature

T = 1_700_000_000
BODY = b'{"event_id":"evt_1"}'
CURRENT = "current-secret-from-the-vault"
PREVIOUS = "previous-secret-from-the-vault"


def refusal(header, secrets=(CURRENT,), body=BODY, now=T, tolerance_s=300) -> str:
    with pytest.raises(AuthenticationError) as refused:
        verify_signature(secrets, body, header, tolerance_s=tolerance_s, now=now)
    assert refused.value.status_code == 401
    return refused.value.code


def accepts(header, secrets=(CURRENT,), body=BODY, now=T, tolerance_s=300) -> None:
    verify_signature(secrets, body, header, tolerance_s=tolerance_s, now=now)


def test_the_signature_is_hmac_sha256_of_the_timestamp_a_dot_and_the_raw_body():
    # Known answers from `printf '%s' '1700000000.<body>' | openssl dgst -sha256 -hmac <key>`.
    assert sign("key", b"The quick brown fox jumps over the lazy dog", T) == (
        "t=1700000000,sha256=2f658d6aef4f246e91cd741bbcded7479e9605f9d41c9e248122a117e0e1765b"
    )
    header = "t=1700000000,sha256=3315cff2983e569f7789d22dee867178d4cbdc09f1d0f987fd64cf4c5843dc24"
    assert sign("new-secret-from-the-vault-2026", b"{}", T) == header
    accepts(header, secrets=("new-secret-from-the-vault-2026",), body=b"{}")
    # Hex in either case, spaces around items and items in any order are the same header.
    digest = header.split("sha256=")[1]
    accepts(f" sha256={digest.upper()} , t={T} ", ("new-secret-from-the-vault-2026",), b"{}")


def test_sign_dates_the_signature_now_by_default():
    before = int(time.time())
    header = sign(CURRENT, BODY)
    stamp = int(header.split(",")[0].removeprefix("t="))
    assert before <= stamp <= int(time.time())
    verify_signature((CURRENT,), BODY, header, tolerance_s=1)


def test_a_forged_body_or_another_timestamp_does_not_carry_the_signature():
    header = sign(CURRENT, BODY, T)
    accepts(header)
    assert refusal(header, body=BODY + b" ") == "invalid_signature"
    assert refusal(header, body=b"") == "invalid_signature"
    # The timestamp is signed: moving it (to dodge the window) breaks the signature.
    digest = header.split(",")[1]
    assert refusal(f"t={T + 1},{digest}", now=T + 1) == "invalid_signature"
    # The old signature, of the body alone, is no signature of the new format.
    body_only = hmac.new(CURRENT.encode(), BODY, hashlib.sha256).hexdigest()
    assert refusal(f"t={T},sha256={body_only}") == "invalid_signature"


def test_a_wrong_secret_is_refused_and_a_previous_one_accepted_while_listed():
    assert refusal(sign("some-other-secret-entirely", BODY, T)) == "invalid_signature"
    old = sign(PREVIOUS, BODY, T)
    # During the rotation both secrets are accepted...
    accepts(old, secrets=(CURRENT, PREVIOUS))
    accepts(sign(CURRENT, BODY, T), secrets=(CURRENT, PREVIOUS))
    # ...and once the previous one is removed, its signatures are refused.
    assert refusal(old, secrets=(CURRENT,)) == "invalid_signature"
    # No secret at all accepts nothing.
    assert refusal(sign(CURRENT, BODY, T), secrets=()) == "invalid_signature"


def test_a_bare_string_is_one_secret_not_its_characters():
    accepts(sign(CURRENT, BODY, T), secrets=CURRENT)
    # Were "ab" taken as the secrets "a" and "b", a signature with "a" would pass.
    assert refusal(sign("a", BODY, T), secrets="ab") == "invalid_signature"


def test_the_provider_may_send_one_signature_per_secret_during_its_own_rotation():
    both = sign([PREVIOUS, CURRENT], BODY, T)
    assert both.count("sha256=") == 2
    accepts(both, secrets=(CURRENT,))
    accepts(both, secrets=(PREVIOUS,))
    assert refusal(both, secrets=("yet-another-secret-entirely",)) == "invalid_signature"
    # The matching signature may come first or last among wrong ones.
    wrong = sign("some-other-secret-entirely", BODY, T).split(",")[1]
    right = sign(CURRENT, BODY, T).split(",")[1]
    accepts(f"t={T},{right},{wrong}")
    accepts(f"t={T},{wrong},{right}")


@pytest.mark.parametrize("offset", [-300, 300, 0])
def test_a_timestamp_at_the_tolerance_is_accepted(offset):
    # Inclusive: exactly 300 s old, or 300 s ahead of the server's clock, still passes.
    accepts(sign(CURRENT, BODY, T + offset), now=T)
    accepts(sign(CURRENT, BODY, T + offset), now=T + 0.999)  # whole seconds of the clock


@pytest.mark.parametrize("offset", [-301, 301, -86_400, 10**11])
def test_a_timestamp_beyond_the_tolerance_is_stale(offset):
    with pytest.raises(AuthenticationError) as refused:
        verify_signature((CURRENT,), BODY, sign(CURRENT, BODY, T + offset), tolerance_s=300, now=T)
    assert (refused.value.status_code, refused.value.code) == (401, "stale_signature")
    assert refused.value.details == {"age_s": -offset, "tolerance_s": 300}


def test_the_tolerance_is_the_setting_given():
    assert refusal(sign(CURRENT, BODY, T - 11), tolerance_s=10) == "stale_signature"
    accepts(sign(CURRENT, BODY, T - 10), tolerance_s=10)


def test_a_stale_timestamp_is_reported_only_to_a_right_signature():
    # A stranger's old header is simply invalid: the freshness verdict is for the provider.
    assert refusal(sign("some-other-secret-entirely", BODY, T - 3600)) == "invalid_signature"


@pytest.mark.parametrize("header", [None, "", "   "])
def test_a_missing_header_is_refused(header):
    assert refusal(header) == "invalid_signature"


DIGEST = "a" * 64


@pytest.mark.parametrize(
    "header",
    [
        f"sha256={DIGEST}",  # the old untimestamped format
        f"t={T}",  # no signature
        f"t={T},sha256=",
        f"t={T},sha256={DIGEST[:-1]}",  # 63 hex digits
        f"t={T},sha256={DIGEST}a",  # 65
        f"t={T},sha256={DIGEST[:-1]}g",  # not hex
        f"t={T},sha256= {DIGEST}",  # a space inside the value
        f"t={T},t={T},sha256={DIGEST}",  # two timestamps
        f"t=,sha256={DIGEST}",
        f"t=-5,sha256={DIGEST}",
        f"t=+5,sha256={DIGEST}",
        f"t=1.5,sha256={DIGEST}",
        f"t=1e9,sha256={DIGEST}",
        "t=" + "\u0661" * 10 + f",sha256={DIGEST}",  # Arabic-Indic digits: int() takes them
        f"t=1234567890123,sha256={DIGEST}",  # 13 digits
        f"t={T},v1={DIGEST}",  # another scheme
        f"t={T},sha256={DIGEST},v0={DIGEST}",  # an unknown item beside a signature
        f"T={T},sha256={DIGEST}",
        f"t={T},sha256={DIGEST},",  # a trailing comma
        f"t={T};sha256={DIGEST}",
        f"t={T} sha256={DIGEST}",
        f"t={T},sha256={DIGEST},garbage",
        "t=" + ",sha256=".join([str(T), *[DIGEST] * (MAX_SIGNATURES + 1)]),
    ],
)
def test_a_malformed_header_is_refused_as_such(header):
    assert refusal(header) == "malformed_signature"


def test_an_unknown_item_is_refused_even_beside_a_right_signature():
    assert refusal(sign(CURRENT, BODY, T) + ",kid=2026") == "malformed_signature"


def test_the_most_signatures_one_header_may_carry():
    right = sign(CURRENT, BODY, T).split(",")[1]
    accepts(f"t={T}," + ",".join([f"sha256={DIGEST}"] * (MAX_SIGNATURES - 1) + [right]))


def test_the_verification_says_which_secret_matched_never_the_secret():
    # For the delivery counter: "current" whenever the first secret matches, else "previous".
    both = (CURRENT, PREVIOUS, "an-older-one-still-listed")
    assert verify_signature(both, BODY, sign(CURRENT, BODY, T), tolerance_s=300, now=T) == (
        "current"
    )
    for old in (PREVIOUS, "an-older-one-still-listed"):
        assert verify_signature(both, BODY, sign(old, BODY, T), tolerance_s=300, now=T) == (
            "previous"
        )
    # A provider signing with both during its own rotation already works with the current one.
    for pair in ((PREVIOUS, CURRENT), (CURRENT, PREVIOUS)):
        assert verify_signature(both, BODY, sign(pair, BODY, T), tolerance_s=300, now=T) == (
            "current"
        )
    # A stale signature carries which secret it matched, outside its response body.
    with pytest.raises(StaleSignature) as stale:
        verify_signature(both, BODY, sign(PREVIOUS, BODY, T - 301), tolerance_s=300, now=T)
    assert stale.value.code == "stale_signature" and stale.value.secret == "previous"
    assert stale.value.details == {"age_s": 301, "tolerance_s": 300}
