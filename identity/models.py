"""Keystone's slice: projects, users, roles and tokens (API database).

Role assignments are django-guardian object permissions on the Project: a user with the
``role_admin`` permission on project P has the ``admin`` role on P. The ``admin`` role on the
admin project makes a cloud admin.
"""
from __future__ import annotations

import hashlib
import uuid as uuidlib

from django.contrib.auth.models import AbstractBaseUser, BaseUserManager, Permission, PermissionsMixin
from django.contrib.auth.models import Group as AuthGroup
from django.db import models
from django.utils import timezone

from cloudcore.core.models import ApiModel, JSONField

DEFAULT_DOMAIN_ID = "default"
#: the default roles, as ``keystone-manage bootstrap`` makes them: each implies the ones after it
#: (``identity.services.roles.IMPLIED``)
ROLE_NAMES = ("admin", "manager", "member", "reader")


def new_id() -> str:
    return uuidlib.uuid4().hex


def token_digest(value: str) -> str:
    """``Token.id_hash`` of the token string ``value``."""
    return hashlib.sha256(value.encode()).hexdigest()


class Project(ApiModel):
    """A Keystone project of the Default domain (no project acts as a domain or has a project as
    parent: ``parent_id`` stays null, shown as the domain's id). ``extra`` holds the attributes a
    client sent that have no column, given back as they came (Keystone's ``extra``). ``options``
    holds Keystone's project options that are set (``PROJECT_OPTIONS``)."""

    id = models.CharField(primary_key=True, max_length=64, default=new_id)
    name = models.CharField(max_length=64)
    domain_id = models.CharField(max_length=64, default=DEFAULT_DOMAIN_ID)
    description = models.TextField(blank=True, default="")
    enabled = models.BooleanField(default=True)
    is_domain = models.BooleanField(default=False)
    parent_id = models.CharField(max_length=64, null=True, blank=True)
    extra = JSONField(default=dict, blank=True)
    options = JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["domain_id", "name"], name="project_name_per_domain")]
        permissions = [
            ("role_admin", "Has the admin role on the project"),
            ("role_manager", "Has the manager role on the project"),
            ("role_member", "Has the member role on the project"),
            ("role_reader", "Has the reader role on the project"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def is_immutable(self) -> bool:
        """Keystone's ``immutable`` option: the project cannot be changed (its tags neither) or
        deleted until the option is set to false."""
        return bool(self.options.get("immutable"))


#: Keystone's project options (its resource options registry for projects): name -> JSON type.
PROJECT_OPTIONS = {"immutable": "boolean"}

#: Keystone's bounds on a project's tags: at most ``MAX_PROJECT_TAGS`` of them, each 1 to
#: ``MAX_TAG_LENGTH`` characters with neither '/' nor ','.
MAX_PROJECT_TAGS = 80
MAX_TAG_LENGTH = 255


class ProjectTag(ApiModel):
    """One of a project's tags (Keystone's ``project_tag``): a string, unique on its project."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="tags")
    name = models.CharField(max_length=MAX_TAG_LENGTH)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "name"], name="project_tag_unique")]

    def __str__(self) -> str:
        return self.name


class UserManager(BaseUserManager["User"]):
    def create_user(self, name: str, password: str | None = None, **extra: object) -> User:
        user = self.model(name=name, **extra)
        user.set_password(password)
        user.save()  # the router keeps users in the API database
        return user

    def create_superuser(self, name: str, password: str | None = None, **extra: object) -> User:
        extra.setdefault("is_staff", True)
        extra.setdefault("is_superuser", True)
        return self.create_user(name, password, **extra)


class User(ApiModel, AbstractBaseUser, PermissionsMixin):
    id = models.CharField(primary_key=True, max_length=64, default=new_id)
    name = models.CharField(max_length=255)
    domain_id = models.CharField(max_length=64, default=DEFAULT_DOMAIN_ID)
    email = models.EmailField(blank=True, default="")
    description = models.TextField(blank=True, default="")
    enabled = models.BooleanField(default=True)
    default_project = models.ForeignKey(Project, null=True, blank=True, on_delete=models.SET_NULL)
    is_staff = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)

    objects = UserManager()

    USERNAME_FIELD = "name"
    REQUIRED_FIELDS: list[str] = []

    class Meta:
        constraints = [models.UniqueConstraint(fields=["domain_id", "name"], name="user_name_per_domain")]

    @property
    def is_active(self) -> bool:  # type: ignore[override]
        return self.enabled

    def __str__(self) -> str:
        return self.name


class Role(ApiModel):
    """A Keystone role; the permission codename ``role_<name>`` on Project stores assignments."""

    id = models.CharField(primary_key=True, max_length=64, default=new_id)
    name = models.CharField(max_length=255, unique=True)
    domain_id = models.CharField(max_length=64, null=True, blank=True)
    description = models.TextField(blank=True, default="")

    def __str__(self) -> str:
        return self.name

    @property
    def codename(self) -> str:
        return f"role_{self.name}"


class Group(ApiModel):
    """A Keystone group of users. Its members and role assignments are those of ``auth_group``
    (the Django group standing for it): users in ``auth_group.user_set``, roles as
    django-guardian object permissions ``identity.role_<name>`` of ``auth_group`` on a Project,
    which every member holds on that project."""

    id = models.CharField(primary_key=True, max_length=64, default=new_id)
    name = models.CharField(max_length=255)
    domain_id = models.CharField(max_length=64, default=DEFAULT_DOMAIN_ID)
    description = models.TextField(blank=True, default="")
    auth_group = models.OneToOneField(AuthGroup, on_delete=models.CASCADE, related_name="keystone_group")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["domain_id", "name"], name="group_name_per_domain")]

    def __str__(self) -> str:
        return self.name


class ApplicationCredential(ApiModel):
    """Keystone's application credential: a secret that authenticates as ``user`` on ``project``
    with a subset of the user's roles there, until ``expires_at`` (never when null).

    The secret is stored hashed (Django's password hasher, as a user password: a client may
    choose a weak one); it is shown once, in the answer to the create request. ``unrestricted``
    False (the default) forbids the credential's tokens to create or delete application
    credentials.
    """

    id = models.CharField(primary_key=True, max_length=64, default=new_id)
    name = models.CharField(max_length=255)
    description = models.TextField(null=True, blank=True)
    secret_hash = models.CharField(max_length=255)
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="application_credentials")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="application_credentials")
    roles = models.ManyToManyField(Role, related_name="application_credentials")
    expires_at = models.DateTimeField(null=True, blank=True)
    unrestricted = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)

    #: The secret, on the instance ``application_credential_create`` returns only (never stored).
    secret: str = ""

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "name"], name="application_credential_name_per_user")]

    def __str__(self) -> str:
        return self.name

    def is_expired(self) -> bool:
        return self.expires_at is not None and self.expires_at <= timezone.now()


class Token(ApiModel):
    """An issued token, stored so that it can be validated and revoked.

    Only the SHA-256 of the token string is stored (``id_hash``): the string is 96 random bytes,
    so a fast unsalted hash is enough, and lookups stay one indexed query. The string itself
    exists only on the instance ``token_issue`` returns (``value``) and at the client.
    """

    id_hash = models.CharField(primary_key=True, max_length=64)
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="tokens")
    project = models.ForeignKey(Project, null=True, blank=True, on_delete=models.CASCADE)
    methods = models.JSONField(default=list)
    issued_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField(db_index=True)
    revoked = models.BooleanField(default=False)
    audit_id = models.CharField(max_length=64, default=new_id)
    #: The application credential the token was issued for (its roles bound the token's); the
    #: token goes with the credential.
    application_credential = models.ForeignKey(
        ApplicationCredential, null=True, blank=True, on_delete=models.CASCADE, related_name="tokens")

    #: The token string, on the instance ``token_issue`` returns only (never stored).
    value: str = ""

    def is_valid(self) -> bool:
        return not self.revoked and self.expires_at > timezone.now()


class Region(ApiModel):
    """A Keystone region an operator registered (``/v3/regions``). The cloud's own region
    (``services.catalog.REGION``) is no row: it always exists and cannot be changed
    (``services.regions``). ``parent_region_id`` names another region (a row or the cloud's own),
    kept free of cycles by ``region_update``; ``extra`` holds the attributes a client sent that
    Keystone has no column for, given back as they came."""

    id = models.CharField(primary_key=True, max_length=255)
    description = models.TextField(blank=True, default="")
    parent_region_id = models.CharField(max_length=255, null=True, blank=True, db_index=True)
    extra = JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return self.id


class Service(ApiModel):
    """A service an operator registered (``/v3/services``); the cloud's own services are no rows
    (``services.catalog``). ``extra`` holds the attributes a client sent that have no column
    (``description`` among them, as in Keystone), given back as they came."""

    id = models.CharField(primary_key=True, max_length=64, default=new_id)
    type = models.CharField(max_length=255)
    name = models.CharField(max_length=255, blank=True, default="")
    enabled = models.BooleanField(default=True)
    extra = JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"{self.type} ({self.name})" if self.name else self.type


class Endpoint(ApiModel):
    """An endpoint an operator registered (``/v3/endpoints``) for a registered service or one of
    the cloud's own (``service_id`` names either: no foreign key). ``region_id`` names a region
    (a ``Region`` row or the cloud's own) or none. Only enabled endpoints of enabled services are
    in the catalog."""

    id = models.CharField(primary_key=True, max_length=64, default=new_id)
    service_id = models.CharField(max_length=64, db_index=True)
    interface = models.CharField(max_length=8)
    url = models.TextField()
    region_id = models.CharField(max_length=255, null=True, blank=True, db_index=True)
    enabled = models.BooleanField(default=True)
    extra = JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"{self.interface} {self.url}"


class PolicyRuleQuerySet(models.QuerySet):
    def rules(self) -> PolicyRuleQuerySet:
        return self.filter(content_type__app_label="identity", content_type__model="project", codename__contains=":")


class PolicyRule(Permission):
    """The Permission standing for one policy rule (codename = rule name), as Django admin lists
    and grants them; the rule itself lives in ``cloudcore.core.policy``'s registry."""

    objects = PolicyRuleQuerySet.as_manager()

    class Meta:
        proxy = True
        verbose_name = "policy rule"
        verbose_name_plural = "policy rules"


class IdentityChangeStamp(ApiModel):
    """Counters of the changes that can change a token's roles: ``key`` a user id (a grant to
    or from that user, its groups) or ``*`` (anything else: a group's grants, a role). Every API
    process compares them with the values its token cache was filled under
    (``services.token_cache``)."""

    key = models.CharField(primary_key=True, max_length=64)
    seq = models.BigIntegerField(default=0)
