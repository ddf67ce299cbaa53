"""Kernel Studio settings: one module, every value read strictly from the environment.

Every variable is documented in README.md ("Configuration").
"""

from __future__ import annotations

from pathlib import Path

from kernelstudio.env import (
    database_from_url,
    env_bool,
    env_dirs,
    env_float,
    env_int,
    env_list,
    env_secret,
    env_str,
    redis_url_checked,
    secret_key,
)

BASE_DIR = Path(__file__).resolve().parent.parent
# Where the embedded default keeps its SQLite file, key file, uploads and exports.
DATA_DIR = Path(env_str("KS_DATA_DIR", str(BASE_DIR / "var"))).resolve()

DEBUG = env_bool("DEBUG", False)
SECRET_KEY = secret_key(DATA_DIR)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "template_partials",
    "django_rq",
    "annotations",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "kernelstudio.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "annotations.context_processors.navigation",
            ],
        },
    }
]
WSGI_APPLICATION = "kernelstudio.wsgi.application"
ASGI_APPLICATION = "kernelstudio.asgi.application"

DATABASES = {
    "default": database_from_url(env_str("DATABASE_URL", f"sqlite:///{DATA_DIR / 'kernelstudio.sqlite3'}")),
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
AUTH_USER_MODEL = "annotations.User"
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "samples:list"
LOGOUT_REDIRECT_URL = "login"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 8}},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = DATA_DIR / "staticfiles"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
# Served straight from the app directories, so the embedded run needs no collectstatic.
WHITENOISE_USE_FINDERS = True
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
MEDIA_ROOT = DATA_DIR / "media"
# Uploads (import files, archives) may be large; they stream to disk above 2.5 MB.
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("DATA_UPLOAD_MAX_MEMORY_SIZE", 10 * 1024 * 1024, minimum=1024)
FILE_UPLOAD_MAX_MEMORY_SIZE = 2_621_440

SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", False)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"

# --- Redis and the RQ queues -------------------------------------------------
# REDIS_URL unset means "embedded": `make run` starts a Redis of its own and sets it.
REDIS_URL = redis_url_checked(env_str("REDIS_URL", "redis://127.0.0.1:6379/0"))
RQ_QUEUE_NAMES = ("default", "cpu", "gpu-rocm", "gpu-cuda")
RQ_DEFAULT_TIMEOUT = env_int("RQ_DEFAULT_TIMEOUT", 3600, minimum=10)
RQ_QUEUES = {name: {"URL": REDIS_URL, "DEFAULT_TIMEOUT": RQ_DEFAULT_TIMEOUT} for name in RQ_QUEUE_NAMES}
RQ_SHOW_ADMIN_LINK = False

# --- LLM ---------------------------------------------------------------------
# Endpoints may be overridden by a maintainer on the LLM settings page.
LLM_BASE_URL = env_str("LLM_BASE_URL", "")
LLM_MODEL = env_str("LLM_MODEL", "")
LLM_API_KEY = env_secret("LLM_API_KEY")
LLM_TIMEOUT = env_float("LLM_TIMEOUT", 120.0, minimum=1.0)
LLM_MAX_TOKENS = env_int("LLM_MAX_TOKENS", 4096, minimum=1)
LLM_TEMPERATURE = env_float("LLM_TEMPERATURE", 0.2, minimum=0.0)
LLM_MAX_RETRIES = env_int("LLM_MAX_RETRIES", 5, minimum=0, maximum=20)
# A second endpoint for BigCodeBench-style pre-evaluation by a different model.
LLM_PREEVAL_BASE_URL = env_str("LLM_PREEVAL_BASE_URL", "")
LLM_PREEVAL_MODEL = env_str("LLM_PREEVAL_MODEL", "")
LLM_PREEVAL_API_KEY = env_secret("LLM_PREEVAL_API_KEY")

# --- Review ------------------------------------------------------------------
# How many approving reviews a sample needs (1 or the two-reviewer policy).
REVIEW_REQUIRED_APPROVALS = env_int("REVIEW_REQUIRED_APPROVALS", 1, minimum=1, maximum=2)

# --- Kernel extraction ---------------------------------------------------------
# Server directories a maintainer may extract kernels from (colon-separated
# absolute paths, like PATH); the page offers only directories inside them.
EXTRACTION_ROOTS = env_dirs("EXTRACTION_ROOTS")
EXTRACTION_MAX_UPLOAD_BYTES = env_int("EXTRACTION_MAX_UPLOAD_BYTES", 200 * 1024 * 1024, minimum=1024)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}
