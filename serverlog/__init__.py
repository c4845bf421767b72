"""The service's log lines where Django may not be imported yet.

gunicorn's master loads its ``logger_class`` (``serverlog.web.JsonLogger``) before gevent
patches the workers, and nothing that imports Django may be imported there (gunicorn.conf.py:
the ``arkme`` package itself starts Celery's Django fix-up). So the JSON formatter and the
redaction of request paths (``serverlog.format``) live outside the application, which imports
them from here (``arkme.kernel.logs``).
"""
