from django.test import Client

from tests.apihelpers import make_identity
from tests.cloud import cloud  # noqa: F401


def login(name: str, project: str, roles: list[str]) -> Client:
    """A test client logged in to the console as a new identity user with ``roles`` on ``project``."""
    make_identity(name, project=project, roles=roles, password="pw")
    client = Client()
    response = client.post("/login/", {"username": name, "password": "pw"})
    assert response.status_code == 302
    return client
