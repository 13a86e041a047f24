from django.apps import AppConfig


class ImagesConfig(AppConfig):
    name = "images"

    def ready(self) -> None:
        from cloudcore.core import stamps

        from .services import IMAGES_STAMP

        stamps.watch(IMAGES_STAMP, "images.Image")
