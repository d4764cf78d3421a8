"""Alembic's environment and revisions for the results store (see ``matcher.store.migrate``)."""
