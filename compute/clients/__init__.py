"""How a compute agent reaches placement, images, volumes and networks: their HTTP APIs, as the
cloud's service user (``session``), one module per service."""
