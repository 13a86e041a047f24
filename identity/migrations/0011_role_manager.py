"""The ``manager`` role joins the defaults (``keystone-manage bootstrap`` makes it: admin implies
manager implies member): its assignment permission, and its role on a cloud made before it."""

from django.db import migrations


def create_manager_role(apps, schema_editor):  # type: ignore[no-untyped-def]
    role = apps.get_model("identity", "Role")
    if not role.objects.filter(name="manager").exists():
        role.objects.create(name="manager")


class Migration(migrations.Migration):

    dependencies = [
        ('identity', '0010_project_options'),
    ]

    operations = [
        migrations.AlterModelOptions(
            name='project',
            options={'permissions': [('role_admin', 'Has the admin role on the project'), ('role_manager', 'Has the manager role on the project'), ('role_member', 'Has the member role on the project'), ('role_reader', 'Has the reader role on the project')]},
        ),
        migrations.RunPython(create_manager_role, migrations.RunPython.noop),
    ]
