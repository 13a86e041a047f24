"""Application credentials; tokens stored by the SHA-256 of their string (existing tokens are
re-keyed by the hash of their id, so they stay valid)."""

import hashlib

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models

import identity.models


def hash_token_ids(apps, schema_editor):
    Token = apps.get_model("identity", "Token")
    db = schema_editor.connection.alias
    for raw in list(Token.objects.using(db).values_list("id_hash", flat=True)):
        if len(raw) != 64:
            Token.objects.using(db).filter(id_hash=raw).update(
                id_hash=hashlib.sha256(raw.encode()).hexdigest())


class Migration(migrations.Migration):

    dependencies = [
        ("identity", "0002_policyrule"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RenameField(model_name="token", old_name="id", new_name="id_hash"),
        migrations.RunPython(hash_token_ids, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="token", name="id_hash",
            field=models.CharField(max_length=64, primary_key=True, serialize=False),
        ),
        migrations.CreateModel(
            name="ApplicationCredential",
            fields=[
                ("id", models.CharField(default=identity.models.new_id, max_length=64, primary_key=True,
                                        serialize=False)),
                ("name", models.CharField(max_length=255)),
                ("description", models.TextField(blank=True, null=True)),
                ("secret_hash", models.CharField(max_length=255)),
                ("expires_at", models.DateTimeField(blank=True, null=True)),
                ("unrestricted", models.BooleanField(default=False)),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                ("project", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE,
                                              related_name="application_credentials", to="identity.project")),
                ("roles", models.ManyToManyField(related_name="application_credentials", to="identity.role")),
                ("user", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE,
                                           related_name="application_credentials", to=settings.AUTH_USER_MODEL)),
            ],
            options={
                "constraints": [models.UniqueConstraint(fields=("user", "name"),
                                                        name="application_credential_name_per_user")],
            },
        ),
        migrations.AddField(
            model_name="token", name="application_credential",
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE,
                                    related_name="tokens", to="identity.applicationcredential"),
        ),
    ]
