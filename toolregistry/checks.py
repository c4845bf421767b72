"""The catalog's validation as a Django system check: a bad catalog stops start-up."""
from __future__ import annotations

from typing import Any

from django.core import checks

from .catalog import CATALOG
from .catalog_checks import validate_catalog


@checks.register("toolregistry")
def check_catalog(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    return [checks.Error(problem.message, id=problem.id) for problem in validate_catalog(CATALOG)]
