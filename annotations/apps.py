from django.apps import AppConfig


class AnnotationsConfig(AppConfig):
    name = "annotations"
    verbose_name = "Kernel Studio"
    default_auto_field = "django.db.models.BigAutoField"
