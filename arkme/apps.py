from django.apps import AppConfig


class ArkmeConfig(AppConfig):
    name = "arkme"
    verbose_name = "Arkme accounts"
