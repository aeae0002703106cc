"""Settings refuse development secrets in production; password hashes verify."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from app.accounts.passwords import hash_password, verify_password
from app.config import ConfigurationError, Settings

REAL = {
    "database_url": "postgresql://raiz@db/raiz",
    "seed_keyring": "k2:" + "A" * 43 + "=",
    "signing_keyring": "k2:" + "B" * 43 + "=",
    "payment_webhook_secret": "a-real-secret-from-the-vault",
}


def test_development_defaults_work_outside_production():
    settings = Settings(env="development")
    assert settings.database_url is None or settings.database_url


@pytest.mark.parametrize(
    "missing",
    ["seed_keyring", "signing_keyring", "payment_webhook_secret", "database_url"],
)
def test_production_refuses_each_development_secret(missing):
    values = dict(REAL)
    values.pop(missing)
    if missing == "database_url":
        values["database_url"] = None
    with pytest.raises(ConfigurationError):
        Settings(env="production", **values)


def test_production_refuses_an_empty_webhook_secret():
    # An empty HMAC key is public: anybody could sign a deposit.succeeded event.
    with pytest.raises(ConfigurationError, match="RAIZ_PAYMENT_WEBHOOK_SECRET"):
        Settings(env="production", **{**REAL, "payment_webhook_secret": ""})


@pytest.mark.parametrize(
    "secret",
    [
        "x",
        "s3cret",
        "  " + "k" * 23 + "  ",
        "w" * 23,
        "REPLACE_WITH_PROVIDER_SECRET",
        " development-only-webhook-secret ",  # the key is stripped: the development one
    ],
)
def test_production_refuses_a_guessable_webhook_secret(secret):
    # A short HMAC key can be found by trying keys against one signed event; the deployment
    # example's placeholder is public.
    with pytest.raises(ConfigurationError, match="RAIZ_PAYMENT_WEBHOOK_SECRET"):
        Settings(env="production", **{**REAL, "payment_webhook_secret": secret})
    long_enough = Settings(env="production", **{**REAL, "payment_webhook_secret": "w" * 24})
    assert long_enough.payment_webhook_secret == "w" * 24


@pytest.mark.parametrize(
    ("previous", "entry"),
    [
        ("w" * 23, 1),
        ("a-previous-secret-long-enough, tiny", 2),
        ("development-only-webhook-secret", 1),
        (" development-only-webhook-secret ,", 1),
        ("a-previous-secret-long-enough,REPLACE_WITH_PROVIDER_SECRET_TOO", 2),
    ],
)
def test_production_refuses_a_weak_previous_webhook_secret(previous, entry):
    # A previous secret still accepted signs deposits as well as the current one.
    with pytest.raises(ConfigurationError, match=f"PREVIOUS_SECRETS entry {entry} ") as refused:
        Settings(env="production", **REAL, payment_webhook_previous_secrets=previous)
    for secret in filter(None, (entry.strip() for entry in previous.split(","))):
        assert secret not in str(refused.value)  # no secret is quoted in a log


def test_production_accepts_strong_previous_webhook_secrets_and_lists_every_secret():
    settings = Settings(
        env="production",
        **REAL,
        payment_webhook_previous_secrets=" older-secret-long-enough-1 ,, older-secret-long-enough-2,",  # noqa: E501
    )
    assert settings.payment_webhook_secrets == (
        "a-real-secret-from-the-vault",
        "older-secret-long-enough-1",
        "older-secret-long-enough-2",
    )
    assert Settings(env="production", **REAL).payment_webhook_secrets == (
        "a-real-secret-from-the-vault",
    )


def test_production_refuses_a_comma_in_the_current_webhook_secret():
    # At the next rotation it would be listed among the previous secrets, split in two.
    with pytest.raises(ConfigurationError, match="contains a comma"):
        Settings(
            env="production", **{**REAL, "payment_webhook_secret": "a-real-secret,from-the-vault"}
        )
    # Outside production it is accepted as the one secret it is.
    assert Settings(payment_webhook_secret="dev,secret").payment_webhook_secrets == ("dev,secret",)


@pytest.mark.parametrize("tolerance", [0, -1, 3601])
def test_the_webhook_tolerance_is_bounded(tolerance):
    with pytest.raises(ValidationError):
        Settings(payment_webhook_tolerance_s=tolerance)
    assert Settings().payment_webhook_tolerance_s == 300


def test_production_refuses_an_audit_interval_the_stalled_sweep_alert_would_page_on():
    # RaizAuditSweepStalled (ops/monitoring/alerts.yml) pages when no sweep finished for 30 min.
    with pytest.raises(ConfigurationError, match="RAIZ_AUDIT_INTERVAL_S"):
        Settings(env="production", audit_interval_s=1800, **REAL)
    assert Settings(env="production", audit_interval_s=900, **REAL).audit_interval_s == 900
    assert Settings(env="development", audit_interval_s=7200).audit_interval_s == 7200


def test_production_refuses_fixed_decks():
    with pytest.raises(ConfigurationError, match="RAIZ_ALLOW_FIXED_DECKS"):
        Settings(env="production", allow_fixed_decks=True, **REAL)


def test_production_refuses_dealing_in_the_commitments_transaction():
    # With no deal delay a round's commitment is written in the very transaction that deals
    # it: nobody can read it before the deal, and no client seed can ever be mixed in.
    with pytest.raises(ConfigurationError, match="RAIZ_DEAL_DELAY_S"):
        Settings(env="production", deal_delay_s=0, **REAL)
    assert Settings(env="test", deal_delay_s=0).deal_delay_s == 0


def test_production_starts_with_real_secrets():
    assert Settings(env="production", **REAL).env == "production"


def test_settings_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("DATABASE_URL", "postgresql://x@y/z")
    monkeypatch.setenv("RAIZ_TOKEN_TTL_S", "120")
    settings = Settings()
    assert settings.database_url == "postgresql://x@y/z"
    assert settings.token_ttl_s == 120


def test_password_hash_round_trip_and_salting():
    first = hash_password("correct horse battery", 10)
    second = hash_password("correct horse battery", 10)
    assert first != second
    assert first.startswith("scrypt$10$8$1$")
    assert verify_password("correct horse battery", first)
    assert not verify_password("correct horse batterY", first)


@pytest.mark.parametrize(
    "stored", ["", "scrypt$", "bcrypt$10$8$1$AAAA$AAAA", "scrypt$99$8$1$AAAA$AAAA", "scrypt$x"]
)
def test_malformed_hashes_never_verify(stored):
    assert not verify_password("anything", stored)


DEV_SEED_KEY = "ZGV2ZWxvcG1lbnQtb25seS1zZWVkLWtleS0zMmJ5dGU="
DEV_SIGNING_KEY = "ZGV2ZWxvcG1lbnQtb25seS1lZDI1NTE5LXNlZWQhISE="


@pytest.mark.parametrize(
    ("setting", "value"),
    [
        # the development key beside a real one (a rotation away from it left undone)
        ("seed_keyring", f"k2:{'A' * 43}=,dev1:{DEV_SEED_KEY}"),
        ("signing_keyring", f"dev1:{DEV_SIGNING_KEY},k2:{'B' * 43}="),
        # the same key under another id, or spaced differently
        ("signing_keyring", f"prod:{DEV_SIGNING_KEY}"),
        ("signing_keyring", f" dev1:{DEV_SIGNING_KEY} "),
        ("seed_keyring", f"dev1: {DEV_SEED_KEY}"),
        # one development key in the other keyring is as public
        ("seed_keyring", f"x:{DEV_SIGNING_KEY}"),
    ],
)
def test_production_refuses_a_development_key_anywhere_in_a_keyring(setting, value):
    # Public keys: with the development signing key anybody can sign a round record, with
    # the development seed key anybody can open a sealed seed before its round ends.
    with pytest.raises(ConfigurationError, match=f"RAIZ_{setting.upper()} holds a development"):
        Settings(env="production", **{**REAL, setting: value})


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("not a url", "not a URL"),
        ("mysql://raiz:s3cret-pw@db/raiz", "the scheme is 'mysql', not postgresql"),
        ("sqlite:///raiz.db", "the scheme is 'sqlite'"),
        ("postgresql://raiz:s3cret-pw@db:99999/raiz", "port 99999 is out of range"),
        ("postgresql://raiz:s3cret-pw@db:port/raiz", "not a URL"),
    ],
)
def test_an_unusable_database_url_is_refused_without_quoting_it(url, problem):
    # It used to be accepted: mysql:// was silently rewritten to asyncpg, a bad port failed
    # at the first connection, with a traceback.
    with pytest.raises(ConfigurationError, match="DATABASE_URL is unusable") as refused:
        Settings(database_url=url)
    assert problem in str(refused.value)
    assert "s3cret-pw" not in str(refused.value)


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://raiz@db/raiz",
        "postgres://raiz:pw@db:5432/raiz",
        "postgresql+asyncpg://raiz@127.0.0.1/raiz",
        "postgresql:///raiz?host=/run/postgresql",
    ],
)
def test_postgresql_urls_are_accepted(url):
    assert Settings(database_url=url).database_url == url


def test_an_empty_database_url_is_unset_and_refused_in_production():
    # An empty DATABASE_URL used to pass the production check and serve the embedded database.
    assert Settings(env="development", database_url="").database_url is None
    with pytest.raises(ConfigurationError, match="DATABASE_URL is required"):
        Settings(env="production", **{**REAL, "database_url": " "})


def test_the_log_level_is_checked_at_start_up():
    assert Settings(log_level="debug").log_level == "DEBUG"
    with pytest.raises(ValidationError, match="unknown log level"):
        Settings(log_level="LOUD")  # it failed in logging.setLevel when the app started


def test_production_refuses_a_presence_grace_shorter_than_two_socket_refreshes():
    # An open WebSocket refreshes presence every 5 s: with a shorter grace a connected
    # player counts as away between refreshes, and the table freezes (abandon deadline).
    for grace in (0, 3, 9.5):
        with pytest.raises(ConfigurationError, match="RAIZ_PRESENCE_GRACE_S"):
            Settings(env="production", presence_grace_s=grace, **REAL)
    assert Settings(env="production", presence_grace_s=10, **REAL).presence_grace_s == 10
    assert Settings(env="test", presence_grace_s=1).presence_grace_s == 1  # tests' fast grace
