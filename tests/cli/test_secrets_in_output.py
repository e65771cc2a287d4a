"""No password of the database URL in what the commands print, nor in the handler context.

``jobdef db`` runs for real, against PostgreSQL where the case needs a server,
and the password is looked for anywhere in what the command printed.
"""

from __future__ import annotations

import pytest

from jobdef.cli import main
from jobdef.runtime.context import Context

PASSWORD = "Hunter2pw"


def test_context_repr_has_no_database_password() -> None:
    ctx = Context(1, "nightly", 1, 3, None, database_url=f"postgresql://u:{PASSWORD}@h/db")
    assert PASSWORD not in repr(ctx)
    assert "postgresql://u:***@h/db" in repr(ctx)
    assert "job='nightly'" in repr(ctx)


@pytest.mark.parametrize(
    "url",
    [
        f"mysql://admin:{PASSWORD}@db/app",
        f"postgresql+psycopg://u:{PASSWORD}@127.0.0.1/app",
        f"postgresql://postgres:{PASSWORD}/x@127.0.0.1/test",
        f"admin:{PASSWORD}@127.0.0.1/app",  # no '://': parses as the scheme 'admin'
        f"0://admin:{PASSWORD}@127.0.0.1/app",  # a scheme that is not one
    ],
)
def test_db_commands_never_print_the_password(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    main(["db", "status", "--db", url])
    out, err = capsys.readouterr()
    assert PASSWORD not in out + err
    assert PASSWORD[:7] not in out + err  # nor a piece a parser cut at the '/'


def test_db_upgrade_does_not_print_a_password_given_as_a_query_parameter(
    postgres_url: str, postgres_schema: str, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"{postgres_url}?schema={postgres_schema}&password={PASSWORD}"
    assert main(["db", "upgrade", "--db", url]) == 0
    out, err = capsys.readouterr()
    assert "created tables" in out
    assert PASSWORD not in out + err
