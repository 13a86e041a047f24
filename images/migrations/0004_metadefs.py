# Glance's metadata definitions catalogue (/v2/metadefs), with the well-known resource types

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models

#: the resource types Glance's own catalogue associates its namespaces with
RESOURCE_TYPES = ("OS::Glance::Image", "OS::Cinder::Volume", "OS::Nova::Flavor", "OS::Nova::Aggregate",
                  "OS::Nova::Server")


def add_resource_types(apps, schema_editor):
    resource_type = apps.get_model("images", "MetadefResourceType")
    for name in RESOURCE_TYPES:
        resource_type.objects.get_or_create(name=name, defaults={"protected": True})


def _timestamps():
    return [
        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
        ("created_at", models.DateTimeField(default=django.utils.timezone.now, editable=False)),
        ("updated_at", models.DateTimeField(blank=True, null=True)),
    ]


def _in_namespace(related_name):
    return ("namespace", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name=related_name,
                                           to="images.metadefnamespace"))


class Migration(migrations.Migration):

    dependencies = [
        ("images", "0003_image_task"),
    ]

    operations = [
        migrations.CreateModel(
            name="MetadefNamespace",
            fields=[
                *_timestamps(),
                ("namespace", models.CharField(max_length=80, unique=True)),
                ("display_name", models.CharField(blank=True, max_length=80, null=True)),
                ("description", models.CharField(blank=True, max_length=500, null=True)),
                ("visibility", models.CharField(default="private", max_length=16)),
                ("protected", models.BooleanField(default=False)),
                ("owner", models.CharField(db_index=True, max_length=255)),
            ],
        ),
        migrations.CreateModel(
            name="MetadefResourceType",
            fields=[
                *_timestamps(),
                ("name", models.CharField(max_length=80, unique=True)),
                ("protected", models.BooleanField(default=False)),
            ],
        ),
        migrations.CreateModel(
            name="MetadefResourceTypeAssociation",
            fields=[
                *_timestamps(),
                ("prefix", models.CharField(blank=True, max_length=80, null=True)),
                ("properties_target", models.CharField(blank=True, max_length=80, null=True)),
                _in_namespace("resource_type_associations"),
                ("resource_type", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE,
                                                    related_name="associations", to="images.metadefresourcetype")),
            ],
            options={
                "constraints": [models.UniqueConstraint(fields=("namespace", "resource_type"),
                                                        name="metadef_resource_type_association")],
            },
        ),
        migrations.CreateModel(
            name="MetadefObject",
            fields=[
                *_timestamps(),
                ("name", models.CharField(max_length=80)),
                ("description", models.TextField(blank=True, null=True)),
                ("required", models.JSONField(default=list)),
                ("properties", models.JSONField(default=dict)),
                _in_namespace("object_definitions"),
            ],
            options={
                "constraints": [models.UniqueConstraint(fields=("namespace", "name"), name="metadef_object_name")],
            },
        ),
        migrations.CreateModel(
            name="MetadefProperty",
            fields=[
                *_timestamps(),
                ("name", models.CharField(max_length=255)),
                ("definition", models.JSONField(default=dict)),
                _in_namespace("property_definitions"),
            ],
            options={
                "constraints": [models.UniqueConstraint(fields=("namespace", "name"), name="metadef_property_name")],
            },
        ),
        migrations.CreateModel(
            name="MetadefTag",
            fields=[
                *_timestamps(),
                ("name", models.CharField(max_length=255)),
                _in_namespace("tag_definitions"),
            ],
            options={
                "constraints": [models.UniqueConstraint(fields=("namespace", "name"), name="metadef_tag_name")],
            },
        ),
        migrations.RunPython(add_resource_types, migrations.RunPython.noop),
    ]
