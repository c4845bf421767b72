"""Settings for the Arkme tool registry.

Every setting comes from the environment, and only here (read through ``environment.py``); the names are part of the DSH
contract (``DSH_API.md``, "The environment"). The defaults are the embedded set-up: SQLite,
local files and in-process tasks, so that ``make run`` needs no other service.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured
from kombu import Queue

from .environment import databases, env_bool, env_int, env_names, env_path, env_seconds, rate_limits

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = BASE_DIR / "var"


DEBUG = env_bool("DJANGO_DEBUG")

SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("DJANGO_SECRET_KEY is required unless DJANGO_DEBUG=1")
    # A fixed key only for development: refs and sessions survive a restart of `make run`.
    SECRET_KEY = "arkme-development-only-not-secret"  # noqa: S105

ALLOWED_HOSTS = [
    host.strip()
    for host in os.environ.get("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost").split(",")
    if host.strip()
]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "health_check",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "config.apps.ArkmeConfig",
    "arkme.accounts.apps.AccountsConfig",
    "arkme.conversations.apps.ConversationsConfig",
    "galleries.apps.GalleriesConfig",
    "groups.apps.GroupsConfig",
    "toolregistry.apps.ToolRegistryConfig",
]

MIDDLEWARE = [
    "arkme.kernel.logs.RequestIdMiddleware",
    "arkme.kernel.budget.RequestBudgetMiddleware",
    # Whether the client is still connected, asked by writes right before they commit.
    "arkme.kernel.cancellation.CallerMiddleware",
    # A view that met a database outage answers 503 database_unavailable (JSON or a page).
    "arkme.kernel.outages.OutageMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # Static files (the admin's styles) from the web process itself, compressed and cached.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Django's session, user and message middleware, for browser pages only: the machine
    # paths below never carry a session (arkme/kernel/browser.py).
    "arkme.kernel.browser.BrowserSessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "arkme.kernel.browser.BrowserAuthenticationMiddleware",
    "arkme.kernel.browser.BrowserMessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]
# Path prefixes only machines call, with a bearer key or nothing: the DSH API and its MCP
# endpoints, the probes and the metrics scrape.
ARKME_MACHINE_PATHS = ("/dsh/", "/healthz", "/readyz", "/metrics")

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "config" / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = databases(VAR_DIR)

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"
LOGIN_URL = "/accounts/login/"

# --- Storage -------------------------------------------------------------------------
ARKME_STORAGE = os.environ.get("ARKME_STORAGE", "filesystem").strip() or "filesystem"
ARKME_MEDIA_ROOT = env_path("ARKME_MEDIA_ROOT", VAR_DIR / "media")
ARKME_S3_BUCKET = os.environ.get("ARKME_S3_BUCKET", "").strip()
ARKME_S3_ENDPOINT_URL = os.environ.get("ARKME_S3_ENDPOINT_URL", "").strip() or None
ARKME_S3_REGION = os.environ.get("ARKME_S3_REGION", "").strip() or None

if ARKME_STORAGE == "filesystem":
    _blob_storage = {
        "BACKEND": "django.core.files.storage.FileSystemStorage",
        "OPTIONS": {"location": str(ARKME_MEDIA_ROOT), "base_url": None},
    }
elif ARKME_STORAGE == "s3":
    if not ARKME_S3_BUCKET:
        raise ImproperlyConfigured("ARKME_S3_BUCKET is required when ARKME_STORAGE=s3")
    from botocore.config import Config as _S3Config

    # A hanging or refusing S3 is 503 storage_unavailable within the request budget, from the
    # web process and from a worker alike: each operation gives up after at most
    # ARKME_S3_MAX_ATTEMPTS × (connect + read timeout), 2 × (3 + 5) s by default, which stays
    # below ARKME_TASK_WAIT_SECONDS (a store task answers its own storage_unavailable before
    # the web stops waiting for it); botocore's defaults are 60 s each, tried up to 5 times.
    _s3_client = _S3Config(
        connect_timeout=env_seconds("ARKME_S3_CONNECT_TIMEOUT_SECONDS", 3, maximum=60),
        read_timeout=env_seconds("ARKME_S3_READ_TIMEOUT_SECONDS", 5, maximum=60),
        retries={"mode": "standard", "total_max_attempts": env_int("ARKME_S3_MAX_ATTEMPTS", 2, minimum=1)},
    )
    _blob_storage = {
        "BACKEND": "storages.backends.s3.S3Storage",
        "OPTIONS": {
            "client_config": _s3_client,
            "bucket_name": ARKME_S3_BUCKET,
            "endpoint_url": ARKME_S3_ENDPOINT_URL,
            "region_name": ARKME_S3_REGION,
            # Objects stay private: nothing is ever served from a public object URL.
            "default_acl": None,
            "querystring_auth": True,
            "file_overwrite": True,
        },
    }
else:
    raise ImproperlyConfigured("ARKME_STORAGE must be 'filesystem' or 's3'")

STORAGES = {
    "default": _blob_storage,
    "blobs": _blob_storage,
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}

# --- The registry and its tools --------------------------------------------------------
ARKME_WORKSPACE_ROOT = env_path("ARKME_WORKSPACE_ROOT", VAR_DIR / "workspaces")
ARKME_TOOL_PROFILE = os.environ.get("ARKME_TOOL_PROFILE", "business").strip() or "business"
ARKME_GALLERY_CAPACITY = env_int("ARKME_GALLERY_CAPACITY", 20)
ARKME_PENDING_TTL_SECONDS = env_int("ARKME_PENDING_TTL_SECONDS", 900)
# Not in the DSH contract; operators may tune them.
ARKME_APPROVAL_TTL_SECONDS = env_int("ARKME_APPROVAL_TTL_SECONDS", 600)
# A 2025-era MCP call waiting on its SSE stream for the human's answer: how long at most (never
# longer than an approval lives), and how often a comment line goes out meanwhile, which is how
# a client that went away is noticed.
ARKME_MCP_ANSWER_WAIT_SECONDS = min(env_int("ARKME_MCP_ANSWER_WAIT_SECONDS", 300), ARKME_APPROVAL_TTL_SECONDS)
ARKME_MCP_HEARTBEAT_SECONDS = env_int("ARKME_MCP_HEARTBEAT_SECONDS", 10)
# Tools whose approvals every session takes on Arkme's own approval page (names, or *), besides
# each DSH client's own list (the admin); unknown names stop start-up (toolregistry.apps).
ARKME_APPROVAL_PAGE_TOOLS = env_names("ARKME_APPROVAL_PAGE_TOOLS")
# How long a standing grant (an approval with the ``session`` scope) covers later calls.
ARKME_STANDING_GRANT_SECONDS = env_int("ARKME_STANDING_GRANT_SECONDS", 900)
ARKME_SESSION_IDLE_SECONDS = env_int("ARKME_SESSION_IDLE_SECONDS", 86400)
ARKME_ATTACHMENT_MAX_BYTES = env_int("ARKME_ATTACHMENT_MAX_BYTES", 20 * 1024 * 1024)
ARKME_MESSAGE_MAX_ATTACHMENTS = env_int("ARKME_MESSAGE_MAX_ATTACHMENTS", 20)
ARKME_IDEMPOTENCY_TTL_SECONDS = env_int("ARKME_IDEMPOTENCY_TTL_SECONDS", 86400)
# How long the tool-call audit is kept; the periodic prune removes older rows.
ARKME_AUDIT_RETENTION_DAYS = env_int("ARKME_AUDIT_RETENTION_DAYS", 365)
# Where invitation links point. Unset: the address the request that made the link came to
# (so `make run` on any port works); set it in production to the public address.
ARKME_PUBLIC_URL = os.environ.get("ARKME_PUBLIC_URL", "").strip().rstrip("/")
ARKME_INVITATION_TTL_SECONDS = env_int("ARKME_INVITATION_TTL_SECONDS", 7 * 86400)
# A candidates call without a query lists people from this many of the person's newest
# private chats, so its cost does not grow with a long chat history when most recent partners
# are already members; a query searches every chat through an index (groups.0003).
ARKME_CANDIDATE_RECENT_CHATS = env_int("ARKME_CANDIDATE_RECENT_CHATS", 1000, minimum=100)

# Bodies of JSON requests stay small; files stream to disk through the upload handlers.
DATA_UPLOAD_MAX_MEMORY_SIZE = 1024 * 1024
DATA_UPLOAD_MAX_NUMBER_FILES = ARKME_MESSAGE_MAX_ATTACHMENTS
FILE_UPLOAD_HANDLERS = [
    "arkme.conversations.uploads.LimitedTemporaryFileUploadHandler",
]

# --- Celery --------------------------------------------------------------------------
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "").strip() or None
# Without a broker, tasks run in-process, eagerly, and their errors propagate.
CELERY_TASK_ALWAYS_EAGER = CELERY_BROKER_URL is None
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
# Results are msgpack, which carries bytes as they are: a rendered PNG comes back as bytes, not
# as base64 inside JSON (a third larger, and an encode and a decode at each end; an 840 KB PNG
# took 9-10 ms to come back that way against 4-5 ms as msgpack).
CELERY_RESULT_SERIALIZER = "msgpack"
CELERY_RESULT_ACCEPT_CONTENT = ["msgpack"]
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Renders and blob stores have queues of their own, each with its own workers (Procfile's
# `render` and `worker`): a confirm's store never waits behind someone's ten-second renders.
# Invitation delivery and housekeeping stay on the default queue ("celery"), on `worker`.
# A worker started without -Q (one worker for everything, a small deployment) consumes all three.
CELERY_TASK_QUEUES = [Queue("celery"), Queue("blobs"), Queue("render")]
CELERY_TASK_ROUTES = {
    "galleries.render_svg": {"queue": "render"},
    "galleries.store_blobs": {"queue": "blobs"},
    "galleries.store_blob": {"queue": "blobs"},
}
# The web process waits for SVG renders and blob stores, so a broker needs a result backend:
# Redis stores results itself, other brokers answer over RPC.
CELERY_RESULT_BACKEND = os.environ.get("CELERY_RESULT_BACKEND", "").strip() or (
    None if CELERY_BROKER_URL is None
    else CELERY_BROKER_URL if CELERY_BROKER_URL.startswith(("redis://", "rediss://")) else "rpc://"
)
CELERY_RESULT_EXPIRES = 3600
# A task whose worker died unacknowledged is delivered again after the visibility timeout.
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "max_retries": 1, "interval_start": 0, "interval_step": 0.5,
    "visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 3600),
}
# Every task is stopped before the visibility timeout: on Redis, a task still running when it
# passes is delivered a second time, and a render slower than the timeout would loop for ever.
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", 300)
if os.environ.get("CELERY_BROKER_TRANSPORT_OPTIONS", "").strip():
    # e.g. {"unacked_restore_interval": 1} for a faster sweep of abandoned messages on Redis.
    try:
        CELERY_BROKER_TRANSPORT_OPTIONS.update(json.loads(os.environ["CELERY_BROKER_TRANSPORT_OPTIONS"]))
    except (ValueError, TypeError) as exc:
        raise ImproperlyConfigured("CELERY_BROKER_TRANSPORT_OPTIONS must be a JSON object") from exc
# An unreachable broker or result store is a 503 within about two seconds, not a request
# that retries until the web worker is killed.
CELERY_BROKER_CONNECTION_TIMEOUT = 2
CELERY_REDIS_SOCKET_CONNECT_TIMEOUT = 2
CELERY_REDIS_SOCKET_TIMEOUT = 10
CELERY_RESULT_BACKEND_TRANSPORT_OPTIONS = {
    "retry_policy": {"max_retries": 1, "interval_start": 0, "interval_step": 0.2, "interval_max": 0.5},
}
# Limits on tool calls per DSH client, account or session, over every process and node
# (toolregistry/limits.py; README, "Limits"): (tool or "*", calls, period in seconds, scope).
ARKME_RATE_LIMITS = rate_limits()
# Where the counters live: the broker's Redis when the broker is Redis, else the database.
ARKME_RATE_LIMIT_REDIS_URL = (CELERY_BROKER_URL if CELERY_BROKER_URL is not None
                              and CELERY_BROKER_URL.startswith(("redis://", "rediss://")) else None)
# Each call to that Redis gives up after this long (connect and answer), so a store that is
# gone or hangs costs a call a fraction of a second: a write is then refused (503), a read runs.
ARKME_RATE_LIMIT_TIMEOUT_SECONDS = env_seconds("ARKME_RATE_LIMIT_TIMEOUT_SECONDS", 0.5, maximum=5)
if ARKME_RATE_LIMIT_TIMEOUT_SECONDS <= 0:
    raise ImproperlyConfigured("ARKME_RATE_LIMIT_TIMEOUT_SECONDS must be more than 0")
ARKME_TASK_WAIT_SECONDS = env_int("ARKME_TASK_WAIT_SECONDS", 20)
# One request's total wait for tasks (renders, stores): below the web worker's timeout
# (gunicorn.conf.py: 30 s), so a slow queue is a 503 in the contract's envelope, never a
# killed worker and a dropped connection.
ARKME_REQUEST_BUDGET_SECONDS = env_int("ARKME_REQUEST_BUDGET_SECONDS", 25)
# The SVG render process: its wall-clock deadline per render and its address-space budget.
ARKME_SVG_TIMEOUT_SECONDS = env_int("ARKME_SVG_TIMEOUT_SECONDS", 10)
ARKME_SVG_MEMORY_BYTES = env_int("ARKME_SVG_MEMORY_BYTES", 512 * 1024 * 1024, minimum=64 * 1024 * 1024)
# SVG renders one account may have in flight at once, over every process and node; past it a
# prepare is refused at once (429 throttled), so one account's renders cannot queue in front
# of another's. The render worker's concurrency (Procfile) is kept above it.
ARKME_SVG_RENDERS_PER_ACCOUNT = env_int("ARKME_SVG_RENDERS_PER_ACCOUNT", 2)
# Render processes per web or worker process: a hostile SVG at its deadline holds one of them.
# One more than an account may hold, so that one account never takes them all in a process
# that renders in-process (no broker).
ARKME_SVG_RENDER_PROCESSES = env_int("ARKME_SVG_RENDER_PROCESSES", ARKME_SVG_RENDERS_PER_ACCOUNT + 1)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BEAT_SCHEDULE = {
    "arkme-purge-sessions": {"task": "toolregistry.tasks.purge_sessions", "schedule": 600.0},
    "arkme-prune-audit": {"task": "toolregistry.tasks.prune_audit", "schedule": 86400.0},
    "arkme-roll-up-tool-calls": {"task": "toolregistry.tasks.roll_up_tool_calls", "schedule": 300.0},
    "arkme-expire-operations": {"task": "galleries.expire_operations", "schedule": 300.0},
    "arkme-blob-gc": {"task": "galleries.collect_garbage", "schedule": 3600.0},
    "arkme-redeliver-messages": {"task": "groups.redeliver_messages", "schedule": 120.0},
}

# --- DRF and the schema ----------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["toolregistry.api.authentication.DshClientAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PARSER_CLASSES": ["toolregistry.api.parsers.StrictJSONParser"],
    "DEFAULT_RENDERER_CLASSES": ["toolregistry.api.renderers.JSONRenderer"],
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "toolregistry.api.negotiation.ContentNegotiation",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "toolregistry.api.exceptions.dsh_exception_handler",
    "UNAUTHENTICATED_USER": None,
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Arkme tool registry: DSH API",
    "DESCRIPTION": (
        "The contract between the agent host (DSH) and Arkme: the tool catalog, agent "
        "sessions, approvals and tool execution. Every error has the envelope "
        '{"error": {"code", "message", "details"?}}.'
    ),
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SERVE_AUTHENTICATION": [],
    # Swagger UI and Redoc from the sidecar package, served as static files: no CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "SCHEMA_PATH_PREFIX": r"/dsh/v1",
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "toolregistry.api.schema.add_tool_schemas",
    ],
    "COMPONENT_SPLIT_REQUEST": True,
    # Tool input schemas are JSON Schema 2020-12, which OpenAPI 3.1 embeds as it is.
    "OAS_VERSION": "3.1.0",
    "ENUM_NAME_OVERRIDES": {
        "PhaseEnum": ["core", "attachments"],
        "ApprovalScopeEnum": ["once", "session"],
        "ErrorCodeEnum": "arkme.kernel.errors.ErrorCode",
        "ApprovalStatusEnum": ["pending", "approved", "declined", "expired", "used"],
    },
}

# --- Security defaults for production ----------------------------------------------------
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = True
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
if env_bool("DJANGO_SECURE_COOKIES", default=not DEBUG):
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if env_bool("DJANGO_BEHIND_PROXY") else None
# HTTPS only, once the deployment is: both off by default so `make run` works on plain HTTP.
SECURE_SSL_REDIRECT = env_bool("DJANGO_SSL_REDIRECT")
# Probes come from inside the deployment, often over plain HTTP.
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$"]
SECURE_HSTS_SECONDS = env_int("DJANGO_HSTS_SECONDS", 0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("DJANGO_HSTS_INCLUDE_SUBDOMAINS")
SECURE_HSTS_PRELOAD = env_bool("DJANGO_HSTS_PRELOAD")

# GET /metrics answers only this bearer token; unset, the endpoint does not exist.
ARKME_METRICS_TOKEN = os.environ.get("ARKME_METRICS_TOKEN", "").strip()

# JSON lines with the request id (ARKME_LOG_FORMAT=plain for a terminal).
ARKME_LOG_FORMAT = os.environ.get("ARKME_LOG_FORMAT", "json").strip() or "json"
if ARKME_LOG_FORMAT not in {"json", "plain"}:
    raise ImproperlyConfigured("ARKME_LOG_FORMAT must be json or plain")
# dictConfig, and Python's warnings as log lines (arkme.kernel.logs.configure).
LOGGING_CONFIG = "arkme.kernel.logs.configure"
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"request_id": {"()": "arkme.kernel.logs.RequestIdFilter"},
                "server_errors_once": {"()": "arkme.kernel.logs.ServerErrorsLoggedOnce"}},
    "formatters": {
        "json": {"()": "arkme.kernel.logs.StructuredFormatter"},
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"},
    },
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": ARKME_LOG_FORMAT,
                             "filters": ["request_id"]}},
    "root": {"handlers": ["console"], "level": os.environ.get("ARKME_LOG_LEVEL", "INFO")},
    # libvips reports every finished thread pool at INFO.
    # A 5xx is one line, RequestIdMiddleware's; Django's own second line for it is dropped.
    "loggers": {"django.request": {"level": "ERROR", "filters": ["server_errors_once"]},
                "pyvips": {"level": "WARNING"}},
}
