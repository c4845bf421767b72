"""Business tools: whole user-facing tasks, shown in the business and hybrid profiles."""

MODULES: tuple = ()
