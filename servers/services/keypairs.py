"""Keypairs (API database, per user): import with fingerprints as Nova computes them, generation
below microversion 2.92, the project's ``key_pairs`` quota per user.

Raises ``InvalidKeypair`` (400), ``KeyPairExists`` (409), ``KeypairNotFound`` (404),
``KeypairLimitExceeded`` (403); policy ``os_compute_api:os-keypairs:*`` targets the key's user.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
from dataclasses import dataclass

from django.db import IntegrityError

from cells.transactions import api_atomic
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Conflict, Invalid, NotFound, QuotaExceeded
from cloudcore.core.notifications import notify
from cloudcore.core.policy import authorize

from ..models import KeyPair
from .quotas import quota_keypairs_allow


class InvalidKeypair(Invalid):
    message = "Keypair data is invalid: %(reason)s"


class KeyPairExists(Conflict):
    message = "Key pair '%(key_name)s' already exists."


class KeypairNotFound(NotFound):
    message = "Keypair %(name)s not found for user %(user_id)s"


class KeypairLimitExceeded(QuotaExceeded):
    message = "Quota exceeded, too many key pairs."


class KeypairMarkerNotFound(Invalid):
    message = "Marker %(marker)s could not be found."


def _colon_hex(digest: bytes) -> str:
    return ":".join(f"{b:02x}" for b in digest)


def ssh_fingerprint(public_key: str) -> str:
    """MD5 fingerprint (``aa:bb:...``) of an OpenSSH public key; InvalidKeypair if unparsable."""
    from cryptography.hazmat.primitives import serialization

    try:
        serialization.load_ssh_public_key(public_key.strip().encode())
        blob = base64.b64decode(public_key.split()[1])
    except (ValueError, IndexError, binascii.Error, TypeError):
        raise InvalidKeypair(reason="failed to generate fingerprint") from None
    return _colon_hex(hashlib.md5(blob, usedforsecurity=False).digest())


def x509_fingerprint(pem: str) -> str:
    """SHA-1 fingerprint of an X.509 certificate in PEM; InvalidKeypair if unparsable."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes

    try:
        certificate = x509.load_pem_x509_certificate(pem.encode())
    except ValueError as exc:
        raise InvalidKeypair(reason=f"failed to generate X509 fingerprint. Error message: {exc}") from None
    return _colon_hex(certificate.fingerprint(hashes.SHA1()))  # noqa: S303 - Nova's fingerprint format


def generate_ssh_keypair() -> tuple[str, str]:
    """A new RSA key: (private key PEM, OpenSSH public key)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
    ).decode()
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return private, public.decode() + " Generated-by-cloudcore"


def _notify(event: str, *, user_id: str, name: str, public_key: str | None = None,
            fingerprint: str | None = None, key_type: str = "ssh") -> None:
    """Nova's versioned ``keypair.<event>`` notification (KeypairPayload 1.0)."""
    notify(f"keypair.{event}", {"user_id": user_id, "name": name, "public_key": public_key,
                                "fingerprint": fingerprint, "type": key_type},
           payload_name="KeypairPayload")


def generate_x509_keypair(user_id: str) -> tuple[str, str]:
    """A new RSA key and a self-signed certificate naming the user: (private key PEM, cert PEM)."""
    from datetime import UTC, datetime, timedelta

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import NameOID

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, user_id or "cloudcore")])
    now = datetime.now(UTC)
    certificate = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now).not_valid_after(now + timedelta(days=3650))
        .sign(key, hashes.SHA256())
    )
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
    ).decode()
    return private, certificate.public_bytes(serialization.Encoding.PEM).decode()


@dataclass
class CreatedKeypair:
    keypair: KeyPair
    private_key: str | None = None


def keypair_create(
    *, actor: RequestContext, name: str, user_id: str | None = None, public_key: str | None = None,
    key_type: str = "ssh",
) -> CreatedKeypair:
    """Import ``public_key`` (or generate one when None) for ``user_id`` (default: the actor)."""
    owner = user_id or actor.user_id or ""
    authorize(actor, "os_compute_api:os-keypairs:create", {"user_id": owner})
    private_key = None
    # Nova's keypair.import.* for a key brought by the user (its start names it), create.* for one made here
    action, given = ("import", public_key) if public_key is not None else ("create", None)
    if public_key is None:
        private_key, public_key = generate_x509_keypair(owner) if key_type == "x509" else generate_ssh_keypair()
    fingerprint = x509_fingerprint(public_key) if key_type == "x509" else ssh_fingerprint(public_key)
    _notify(f"{action}.start", user_id=owner, name=name, public_key=given, key_type=key_type)
    if not quota_keypairs_allow(project_id=actor.project_id, user_id=owner):
        raise KeypairLimitExceeded()
    if KeyPair.objects.filter(user_id=owner, name=name).exists():
        raise KeyPairExists(key_name=name)
    try:
        with api_atomic():
            keypair = KeyPair.objects.create(
                name=name, user_id=owner, fingerprint=fingerprint, public_key=public_key, type=key_type
            )
    except IntegrityError:
        raise KeyPairExists(key_name=name) from None
    _notify(f"{action}.end", user_id=owner, name=name, public_key=public_key, fingerprint=fingerprint,
            key_type=key_type)
    return CreatedKeypair(keypair, private_key)


def keypair_get(*, actor: RequestContext, name: str, user_id: str | None = None) -> KeyPair:
    owner = user_id or actor.user_id or ""
    authorize(actor, "os_compute_api:os-keypairs:show", {"user_id": owner})
    keypair = KeyPair.objects.filter(user_id=owner, name=name).first()
    if keypair is None:
        raise KeypairNotFound(name=name, user_id=owner)
    return keypair


def keypair_list(
    *, actor: RequestContext, user_id: str | None = None, limit: int | None = None, marker: str | None = None
) -> list[KeyPair]:
    owner = user_id or actor.user_id or ""
    authorize(actor, "os_compute_api:os-keypairs:index", {"user_id": owner})
    qs = KeyPair.objects.filter(user_id=owner).order_by("id")
    if marker is not None:
        anchor = qs.filter(name=marker).first()
        if anchor is None:
            raise KeypairMarkerNotFound(marker=marker)
        qs = qs.filter(id__gt=anchor.id)
    items = list(qs)
    return items[:limit] if limit is not None else items


def keypair_delete(*, actor: RequestContext, name: str, user_id: str | None = None) -> None:
    owner = user_id or actor.user_id or ""
    authorize(actor, "os_compute_api:os-keypairs:delete", {"user_id": owner})
    keypair = KeyPair.objects.filter(user_id=owner, name=name).first()
    if keypair is None:
        raise KeypairNotFound(name=name, user_id=owner)
    details = {"user_id": owner, "name": name, "public_key": keypair.public_key,
               "fingerprint": keypair.fingerprint, "key_type": keypair.type}
    _notify("delete.start", **details)
    keypair.delete()
    _notify("delete.end", **details)
