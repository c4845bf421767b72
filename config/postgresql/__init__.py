"""Django's PostgreSQL backend, with the pool's cheaper check (``base``); ``ENGINE``
``config.postgresql`` where ``DATABASE_URL`` names PostgreSQL (config/environment.py)."""
