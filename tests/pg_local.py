"""The real PostgreSQL the controller's state tests use (.ci/run starts one with .ci/postgres
and sets ALLOC_TEST_POSTGRES_URL). Tests that need it are skipped without it, unless
ALLOC_REQUIRE_POSTGRES=1 (set by .ci/run), where its absence fails them."""

from __future__ import annotations

import os

import pytest


def require_postgres() -> str:
    url = os.environ.get("ALLOC_TEST_POSTGRES_URL")
    if not url:
        if os.environ.get("ALLOC_REQUIRE_POSTGRES") == "1":
            pytest.fail("ALLOC_REQUIRE_POSTGRES=1 but ALLOC_TEST_POSTGRES_URL is not set")
        pytest.skip("no PostgreSQL (.ci/run starts one: .ci/postgres)")
    return url
