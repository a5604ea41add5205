import pytest

from lakeledger.secretstore.cipher import SecretCipher, WrongKey

SECRET = {"type": "s3", "aws-secret-access-key": "very-secret-value"}


def test_encrypts_and_decrypts_without_the_plaintext_in_the_ciphertext():
    cipher = SecretCipher("a-key-of-sixteen-or-more")
    token = cipher.encrypt(SECRET)
    assert b"very-secret-value" not in token
    assert cipher.decrypt(token) == SECRET


def test_another_key_cannot_decrypt():
    token = SecretCipher("a-key-of-sixteen-or-more").encrypt(SECRET)
    with pytest.raises(WrongKey, match="LAKELEDGER__PG_ENCRYPTION_KEY"):
        SecretCipher("another-key-sixteen-plus").decrypt(token)


def test_fingerprints_name_the_content_under_one_key_only():
    one, two = SecretCipher("a-key-of-sixteen-or-more"), SecretCipher("another-key-sixteen-plus")
    assert one.fingerprint(SECRET) == one.fingerprint(dict(reversed(list(SECRET.items()))))
    assert one.fingerprint(SECRET) != one.fingerprint({**SECRET, "aws-secret-access-key": "other"})
    assert one.fingerprint(SECRET) != two.fingerprint(SECRET)
    assert "very-secret-value" not in one.fingerprint(SECRET)


def test_short_keys_are_refused():
    with pytest.raises(ValueError, match="at least 16"):
        SecretCipher("short")


def test_sealed_tokens_cannot_be_forged_or_altered():
    one = SecretCipher("a-key-of-sixteen-or-more")
    token = one.seal({"w": "wh", "l": "s3://b/p/t"})
    assert one.unseal(token) == {"w": "wh", "l": "s3://b/p/t"}
    body, tag = token.split(".")
    altered = one.seal({"w": "wh", "l": "s3://b/p"}).split(".")[0] + "." + tag
    for bad in (
        altered,
        body,
        body + ".",
        "x.y",
        "",
        token + "x",
        SecretCipher("another-key-sixteen-plus").seal({"w": "wh"}),
    ):
        assert one.unseal(bad) is None
